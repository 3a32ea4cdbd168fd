#!/usr/bin/env bash
# Install bugcontext from this checkout and run it on a real bug from PyPI.
#
#   bash scripts/demo.sh [CASE_ID]        (default: ytdl_unescape_html; --list shows the cases)
#
# Needs CPython 3.11 with pip and a Rust toolchain (maturin builds the extension), and access
# to PyPI. The package goes into the project's virtual environment .venv (the one
# scripts/test.sh uses: scripts/venv.sh builds the extension once and reuses it), never into
# the system interpreter, with only what the demo uses: the core and the context extra (the
# test suite's tools are added by scripts/test.sh when it runs). scripts/realbug.py then
# downloads the case's buggy and fixed releases, runs the regression test in a virtual
# environment of its own under work/realbugs/ (cached), and prints the context that
# `bugcontext context` builds from the failing log, with a line saying whether the lines the
# real fix changed are in it. Each step is announced on standard error (==> ...).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "==> step 1/2: bugcontext[context] in .venv (scripts/venv.sh context)" >&2
bash scripts/venv.sh context
echo "==> step 2/2: the real bug ${1:-ytdl_unescape_html} (scripts/realbug.py: downloads, a test run, the context)" >&2
.venv/bin/python scripts/realbug.py "${1:-ytdl_unescape_html}"
