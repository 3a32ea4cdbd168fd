#!/usr/bin/env bash
# Mutation testing of the contract.
#
#   bash scripts/mutants.sh --named     the lesson's named mutants (tests/mutants/*.patch): each
#                                       must make the test gates fail (CI runs this)
#   bash scripts/mutants.sh --engine [ARGS]     cargo-mutants over the engine, the token costing,
#                                       the renderer and the digest (.cargo/mutants.toml); ARGS go
#                                       to cargo mutants (e.g. -f src/engine/mod.rs). Long; not in CI.
#   bash scripts/mutants.sh --reference [ARGS]  mutmut over the reference and the composer
#                                       ([tool.mutmut] in pyproject.toml); ARGS go to mutmut run
#                                       (e.g. 'bugcontext.reference.*'). Long; not in CI.
#
# --engine and --reference print the per-file table (generated, killed, survived, timed out,
# unviable) and every surviving mutant; they exit 0 when every viable mutant is killed. Jobs:
# MUTANTS_JOBS (default 2). The engine's property test runs PROPTEST_CASES (default 2,000)
# cases per mutant; the Python tests run the `mutants` Hypothesis profile (tests/conftest.py).
#
# Each patch is applied to a copy of the sources in a temporary folder. A mutant of the
# reference (ref-*.patch) runs the contract tests (spec table, adversarial orders, properties,
# differential tests) against the mutated reference, with the extension built from the
# unmutated engine; a mutant of the engine (eng-*.patch) runs the engine's own tests
# (`cargo test`, brute-force oracle included). A mutant is killed when it builds and its tests
# fail; one that does not build is an error.
# Exit status: 0 when every mutant is killed, 1 when one survives, 2 for a bad argument.
set -euo pipefail
cd "$(dirname "$0")/.."

usage="usage: bash scripts/mutants.sh --named | --engine [ARGS] | --reference [ARGS]"
python=.venv/bin/python
jobs=${MUTANTS_JOBS:-2}

if [ "${1:-}" = "--engine" ]; then
    shift
    out=$(mktemp -d)
    begin=$SECONDS
    status=0
    [ $# -gt 0 ] || set -- -f src/engine/mod.rs -f src/engine/groups.rs -f src/tokens.rs -f src/render.rs -f src/digest.rs
    PROPTEST_CASES=${PROPTEST_CASES:-2000} cargo mutants --jobs "$jobs" --output "$out" "$@" || status=$?
    echo "cargo-mutants: $((SECONDS - begin)) s, exit status $status (results: $out/mutants.out)"
    python3 scripts/mutants_report.py cargo "$out"
    # 0: every mutant caught; 2: some missed; 3: some timed out; 1 or 4: the run itself failed.
    exit "$status"
fi

if [ "${1:-}" = "--reference" ]; then
    shift
    [ -x .venv/bin/mutmut ] || { echo "mutmut missing: .venv/bin/pip install 'mutmut>=3.8,<4' (the mutants extra)" >&2; exit 2; }
    core=$("$python" -c 'import pathlib, bugcontext._core as c; print(pathlib.Path(c.__file__))')
    # mutmut imports the mutated package from src/: stage the layout it expects.
    stage=$(mktemp -d)
    mkdir "$stage/src"
    cp -r python/bugcontext "$stage/src/"
    find "$stage/src" \( -name '*.so' -o -name __pycache__ \) -prune -exec rm -rf {} +
    cp "$core" "$stage/src/bugcontext/"
    cp -r tests pyproject.toml "$stage/"
    begin=$SECONDS
    status=0
    (cd "$stage" && BUGCONTEXT_HYPOTHESIS_PROFILE=mutants "$OLDPWD/.venv/bin/mutmut" run \
        --max-children "$jobs" "$@" > mutmut.log 2>&1) || status=$?
    echo "mutmut: $((SECONDS - begin)) s, exit status $status (log: $stage/mutmut.log)"
    python3 scripts/mutants_report.py mutmut "$stage" | tee "$stage/summary.md"
    [ "$status" -eq 0 ] && ! grep -q '^survived\|^timeout' "$stage/summary.md"
    exit
fi

[ "${1:-}" = "--named" ] || { echo "$usage" >&2; exit 2; }
core=$("$python" -c 'import pathlib, bugcontext._core as c; print(pathlib.Path(c.__file__))')
target="$PWD/target"  # shared with cargo test: the dependencies are built once
killed=0
survived=()
for patch in tests/mutants/*.patch; do
    name=$(basename "$patch" .patch)
    tmp=$(mktemp -d)
    cp -r src python tests Cargo.toml Cargo.lock pyproject.toml "$tmp"/
    find "$tmp/python" -name '*.so' -delete
    (cd "$tmp" && git apply "$OLDPWD/$patch")
    case "$name" in
        ref-*)
            cp "$core" "$tmp/python/bugcontext/"
            build=(env PYTHONPATH="$tmp/python" "$python" -c "import bugcontext.reference")
            cmd=(env PYTHONPATH="$tmp/python" "$python" -m pytest -x -q -p no:cacheprovider
                 -p no:randomly "$tmp/tests/test_spec.py" "$tmp/tests/test_orders.py"
                 "$tmp/tests/test_properties.py" "$tmp/tests/test_differential.py")
            ;;
        eng-*)
            build=(env CARGO_TARGET_DIR="$target" cargo test --quiet --no-default-features --no-run
                   --manifest-path "$tmp/Cargo.toml")
            cmd=(env CARGO_TARGET_DIR="$target" cargo test --quiet --no-default-features
                 --manifest-path "$tmp/Cargo.toml")
            ;;
        *) echo "unknown mutant kind: $name" >&2; exit 2 ;;
    esac
    # A mutant that does not build or import proves nothing: it is an error, not a kill.
    if ! "${build[@]}" > "$tmp/log" 2>&1; then
        echo "INVALID  $name: the mutated code does not build (log: $tmp/log)" >&2
        exit 1
    fi
    if "${cmd[@]}" > "$tmp/log" 2>&1; then
        survived+=("$name")
        echo "SURVIVED $name (log: $tmp/log)"
    else
        killed=$((killed + 1))
        echo "killed   $name"
        rm -rf "$tmp"
    fi
done
echo "named mutants: $killed killed, ${#survived[@]} survived"
echo "mutants: $killed passed, ${#survived[@]} failed"  # each kill is a passed check
[ ${#survived[@]} -eq 0 ]
