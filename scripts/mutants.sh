#!/usr/bin/env bash
# Mutation testing of the contract.
#
#   bash scripts/mutants.sh --named     the lesson's named mutants (tests/mutants/*.patch): each
#                                       must make the test gates fail (CI runs this)
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

[ "${1:-}" = "--named" ] || { echo "usage: bash scripts/mutants.sh --named" >&2; exit 2; }
python=.venv/bin/python
core=$("$python" -c 'import pathlib, repo_context._core as c; print(pathlib.Path(c.__file__))')
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
            cp "$core" "$tmp/python/repo_context/"
            build=(env PYTHONPATH="$tmp/python" "$python" -c "import repo_context.reference")
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
