#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers with atheris (libFuzzer); the targets are
# tests/fuzz/fuzz_<name>.py, their committed seed corpora tests/fuzz/corpus/<name>/.
#
#   bash scripts/fuzz.sh TARGET SECONDS [--seed N] [--keep] [-- LIBFUZZER_ARGS...]
#   bash scripts/fuzz.sh --all SECONDS [--seed N] [--keep]
#   bash scripts/fuzz.sh --list
#
# Targets: pytest_log, junit, secrets, gitignore, build, render. The run starts from the
# committed corpus; the new inputs libFuzzer finds go to a temporary folder that is deleted
# afterwards, or into the committed corpus folder with --keep. The seed is fixed (1) unless
# --seed N (or FUZZ_SEED) says otherwise. A crash (an invariant that fails, an undocumented
# exception, an input slower than the time guard) is written to a temporary folder that is
# kept; its path is printed, and the exit status is 1. Exit 2 for a bad argument.
# Uses .venv/bin/python (scripts/venv.sh makes it, with the fuzz extra), or $PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-.venv/bin/python}
targets=(pytest_log junit secrets gitignore build render)
usage() {
    echo "usage: bash scripts/fuzz.sh TARGET|--all SECONDS [--seed N] [--keep] [-- LIBFUZZER_ARGS...]" >&2
    echo "targets: ${targets[*]}" >&2
    exit 2
}

[ $# -ge 1 ] || usage
if [ "$1" = "--list" ]; then
    printf '%s\n' "${targets[@]}"
    exit 0
fi
target=$1
shift
[ $# -ge 1 ] || usage
seconds=$1
shift
[[ "$seconds" =~ ^[0-9]+$ ]] && [ "$seconds" -gt 0 ] || usage
seed=${FUZZ_SEED:-1}
keep=0
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seed) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || usage; seed=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        --) shift; extra=("$@"); break ;;
        *) usage ;;
    esac
done

run_one() {
    local name=$1 work corpus status
    [ -f "tests/fuzz/fuzz_$name.py" ] || { echo "fuzz.sh: no target '$name'" >&2; usage; }
    work=$(mktemp -d "${TMPDIR:-/tmp}/bugcontext-fuzz-$name.XXXXXX")
    mkdir -p "$work/new" "$work/crashes"
    corpus="tests/fuzz/corpus/$name"
    # libFuzzer writes new inputs into the first corpus folder given and only reads the others.
    local folders=("$work/new" "$corpus")
    [ "$keep" = 1 ] && folders=("$corpus")
    echo "[fuzz] $name: ${seconds}s, seed $seed, corpus $corpus" >&2
    set +e
    "$python" "tests/fuzz/fuzz_$name.py" -seed="$seed" -max_total_time="$seconds" -timeout=60 \
        -rss_limit_mb=4096 -max_len=16384 -print_final_stats=1 \
        -artifact_prefix="$work/crashes/" "${extra[@]}" "${folders[@]}" >"$work/log" 2>&1
    status=$?
    set -e
    grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added|INFO: seed corpus)' "$work/log" \
        | sed "s/^/[fuzz] $name: /" >&2 || true
    local crashes
    crashes=$(find "$work/crashes" -type f | sort)
    if [ "$status" -ne 0 ] || [ -n "$crashes" ]; then
        tail -n 40 "$work/log" >&2
        echo "[fuzz] $name: FAILED (exit $status); log $work/log" >&2
        for crash in $crashes; do
            echo "[fuzz] $name: crashing input: $crash"
        done
        return 1
    fi
    echo "[fuzz] $name: clean" >&2
    rm -rf "$work"
}

if [ "$target" = "--all" ]; then
    failed=()
    for name in "${targets[@]}"; do
        run_one "$name" || failed+=("$name")
    done
    if [ ${#failed[@]} -gt 0 ]; then
        echo "[fuzz] failed: ${failed[*]}" >&2
        exit 1
    fi
    echo "[fuzz] all ${#targets[@]} targets clean (${seconds}s each, seed $seed)" >&2
    exit 0
fi
run_one "$target"
