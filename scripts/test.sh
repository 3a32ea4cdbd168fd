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
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/venv.sh

cargo fmt --check
cargo clippy --all-targets --quiet -- -D warnings
PROPTEST_CASES=100000 cargo test --no-default-features --quiet  # the engine's tests, proptest oracle included

.venv/bin/ruff check python tests benches scripts
.venv/bin/mypy --strict python/bugcontext
.venv/bin/python -m mypy.stubtest bugcontext._core  # the hand-written stub matches the extension

.venv/bin/python -m pytest -q -n auto "$@"  # pytest-xdist: one worker per core

# The differential run, the short form: both engines on 3,000 generated inputs (seed 1).
.venv/bin/python scripts/differential.py --cases 3000 --seed 1

# Coverage-guided fuzzing, the short form: every target for 30 s with a fixed seed.
bash scripts/fuzz.sh --all 30

# The lesson's named mutants of the reference and the engine must each fail the gates above.
bash scripts/mutants.sh --named
