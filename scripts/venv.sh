#!/usr/bin/env bash
# Make (or reuse) the project's virtual environment in .venv with bugcontext installed from
# this checkout, its test and lint tools and the optional extras the tests cover. Shared by
# scripts/test.sh and scripts/demo.sh, so the Rust extension is built once: the install is
# skipped while .venv/.installed-from matches a digest of the sources and the build files.
set -euo pipefail
cd "$(dirname "$0")/.."

extras="test,dev,ray,fuzz"
digest=$( { echo "$extras"; find src python Cargo.toml Cargo.lock pyproject.toml -type f \
    ! -name '*.so' ! -path '*__pycache__*' -print0 | sort -z | xargs -0 sha256sum; } | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ "$(cat .venv/.installed-from 2>/dev/null)" = "$digest" ]; then
    echo "[venv] .venv is up to date with this checkout" >&2
    exit 0
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
echo "[venv] installing bugcontext[$extras] into .venv (builds the Rust extension: a few minutes)" >&2
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
# Progress: pip's main steps on stderr (its errors go there too); with pipefail a failed
# install still fails this script.
.venv/bin/python -m pip install --disable-pip-version-check --progress-bar off ".[$extras]" \
    | { grep -E --line-buffered '^(Processing|Building|Successfully|Installing collected)' >&2 || true; }
echo "$digest" > .venv/.installed-from
