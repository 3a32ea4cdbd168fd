#!/usr/bin/env bash
# Set up everything and run every check, on a fresh machine or a used one:
#   1. a virtual environment in .venv with the package (built by maturin from src/) and its
#      test and lint tools (scripts/venv.sh; reused while the sources are unchanged);
#   2. the Rust engine's own tests (`cargo test`, no Python needed), rustfmt and clippy;
#   3. ruff and mypy --strict on the Python package;
#   4. the Python test suite (pytest; exit 5, "no tests collected", fails like any other error);
#   5. a short differential run (scripts/differential.py --cases 3000: both engines on generated
#      inputs) and the fuzz targets (scripts/fuzz.sh --all 30): each parser 30 s under atheris,
#      seed 1, from its committed corpus (about 3.5 minutes in all); a crash fails the run;
#   6. the named mutants (scripts/mutants.sh --named): each must make the tests fail.
# Each step is announced on standard error (==> ...); the compilers' progress is shown.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { echo "==> $*" >&2; }

step "step 1/6: the virtual environment .venv (scripts/venv.sh)"
bash scripts/venv.sh

step "step 2/6: the Rust engine: rustfmt, clippy, cargo test (compiles the engine twice: a few minutes)"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
# The engine's tests, proptest oracle included (libtest's terse output: -q after --).
PROPTEST_CASES=100000 cargo test --no-default-features -- -q

step "step 3/6: ruff, mypy --strict, stubtest"
.venv/bin/ruff check python tests benches scripts
.venv/bin/mypy --strict python/bugcontext
.venv/bin/python -m mypy.stubtest bugcontext._core  # the hand-written stub matches the extension

step "step 4/6: the Python test suite (pytest, one worker per core)"
.venv/bin/python -m pytest -q -n auto "$@"  # pytest-xdist

step "step 5/6: the differential run (3,000 inputs) and the fuzz targets (30 s each)"
# The differential run, the short form: both engines on 3,000 generated inputs (seed 1).
.venv/bin/python scripts/differential.py --cases 3000 --seed 1
# Coverage-guided fuzzing, the short form: every target for 30 s with a fixed seed.
bash scripts/fuzz.sh --all 30

step "step 6/6: the named mutants (each must make the tests fail)"
# The lesson's named mutants of the reference and the engine must each fail the gates above.
bash scripts/mutants.sh --named
step "all checks passed"
