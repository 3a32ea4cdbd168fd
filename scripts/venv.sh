#!/usr/bin/env bash
# Make (or reuse) the project's virtual environment in .venv with bugcontext installed from
# this checkout and the extras asked for:
#
#   bash scripts/venv.sh [EXTRAS]     (default test,dev,ray,fuzz: the test suite and its tools)
#
# Shared by scripts/test.sh and scripts/demo.sh (which asks for the context extra only), so the
# Rust extension is built once. Each step is announced on standard error (==> ...), and the
# compiler's progress is shown. Nothing is done while .venv holds a build of the same sources
# with the extras asked for (or more): .venv/.installed-from keeps a digest of the sources and
# the build files, .venv/.installed-extras the extras installed. A wheel built for a digest is
# kept in .venv/wheels/DIGEST/, so asking for more extras later installs them without
# building again.
set -euo pipefail
cd "$(dirname "$0")/.."

extras="${1:-test,dev,ray,fuzz}"
step() { echo "==> $*" >&2; }

digest=$(find src python Cargo.toml Cargo.lock pyproject.toml -type f \
    ! -name '*.so' ! -path '*__pycache__*' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
installed_extras=$(cat .venv/.installed-extras 2>/dev/null || true)
missing=$(comm -23 <(tr ',' '\n' <<<"$extras" | sed '/^$/d' | sort -u) \
    <(tr ',' '\n' <<<"$installed_extras" | sed '/^$/d' | sort -u) | paste -sd, -)
if [ -x .venv/bin/python ] && [ "$(cat .venv/.installed-from 2>/dev/null)" = "$digest" ] && [ -z "$missing" ]; then
    step "reusing .venv: bugcontext[$installed_extras] is installed from these sources (nothing to build)"
    exit 0
fi

if [ ! -x .venv/bin/python ]; then
    step "making the virtual environment .venv"
    python3 -m venv .venv
fi
pip=(.venv/bin/python -m pip --disable-pip-version-check)
wheels=".venv/wheels/$digest"
wheel=$(ls "$wheels"/bugcontext-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
    step "installing the build tool (maturin) into .venv"
    "${pip[@]}" install --quiet --upgrade pip 'maturin>=1.9,<2'
    step "building the extension (cargo, release build: about 5 minutes on 2 cores)"
    rm -rf .venv/wheels
    .venv/bin/maturin build --release --interpreter .venv/bin/python --out "$wheels"
    wheel=$(ls "$wheels"/bugcontext-*.whl | head -n 1)
else
    step "the extension is built for these sources already: $wheel"
fi

# The extras installed before stay (their packages are in .venv anyway).
all_extras=$(tr ',' '\n' <<<"$extras,$installed_extras" | sed '/^$/d' | sort -u | paste -sd, -)
step "installing bugcontext[$all_extras] and its dependencies into .venv"
# pip's main steps (its errors go to standard error too); with pipefail a failed install
# still fails this script.
"${pip[@]}" install --progress-bar off --force-reinstall --no-deps "$wheel" >/dev/null
"${pip[@]}" install --progress-bar off "$wheel[$all_extras]" \
    | { grep -E --line-buffered '^(Collecting|Successfully|Installing collected)' >&2 || true; }
echo "$digest" > .venv/.installed-from
echo "$all_extras" > .venv/.installed-extras
step "done: .venv has bugcontext[$all_extras]"
