"""What verified provenance costs a build that does not use it: a 10k-candidate build with this
extension against the same build with a baseline extension (the engine before provenance),
side by side in one run.

Run with ``BUGCONTEXT_BASELINE_CORE=/path/to/_core.so python -m pytest
benches/test_bench_provenance.py --benchmark-only`` where the baseline is a compiled
``bugcontext/_core*.so`` of the commit before provenance (the baseline tests are skipped
without it). Both extensions are called the same way (``_core.build`` on a list of their own
``Candidate`` type, or on dicts, with no reader), so the figures compare reading, ranking,
packing and building the result, and nothing else. One group per (shape, budget):

* ``baseline``: the extension before provenance;
* ``now``: this extension, candidates without provenance, no reader;
* ``now+fields``: this extension, every candidate with ``source_sha256`` and ``source_id``, no
  reader (the fields read, validated and carried);
* ``now+verify``: the same with a ``verify`` reader over in-memory files that hold every
  window (every candidate checked, none stale).

The generated set is the one of ``test_bench_build.py`` (``generate.py``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
from typing import Any

import bugcontext
import pytest
from bugcontext import _core
from bugcontext.core.cost import Cost
from bugcontext.core.provenance import file_lines
from generate import BenchSet, generate

N = 10_000
BUDGETS = ("2%", "100%")
ROUNDS = 60
BASELINE = os.environ.get("BUGCONTEXT_BASELINE_CORE")


@functools.lru_cache(maxsize=1)
def _baseline() -> Any:
    assert BASELINE is not None
    # Loaded under another package name: the module's init function is found by its last
    # component (``_core``), and the two extensions' types stay apart.
    spec = importlib.util.spec_from_file_location("bugcontext_baseline._core", BASELINE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=1)
def _set() -> BenchSet:
    return generate(N)


@functools.lru_cache(maxsize=1)
def _dicts() -> list[dict[str, Any]]:
    return list(_set().to_json_input()["candidates"])


@functools.lru_cache(maxsize=1)
def _files() -> dict[str, bytes]:
    """In-memory files holding every window of the set, one file per candidate, with its content
    from its start line on."""
    out: dict[str, bytes] = {}
    for i, c in enumerate(_dicts()):
        out[f"f{i}.py"] = ("\n" * (c["start"] - 1) + c["content"]).encode()
    return out


@functools.lru_cache(maxsize=8)
def _cands(core: str, shape: str, provenance: bool, own_paths: bool) -> list[Any]:
    module = _baseline() if core == "baseline" else _core
    made = []
    for i, c in enumerate(_dicts()):
        if own_paths:
            # Its own file, holding its content from its start line on; the end is where the
            # content's lines end (a generated window's span need not match its text).
            lines = len(file_lines(c["content"].encode())) or 1
            c = {**c, "path": f"f{i}.py", "end": c["start"] + lines - 1}
        if provenance:
            c = {
                **c,
                "source_sha256": hashlib.sha256(_files()[f"f{i}.py"]).hexdigest() if own_paths else "0" * 64,
                "source_id": "parser",
            }
        made.append(module.Candidate(**c) if shape == "candidate" else c)
    return made


def _run(core: str, shape: str, budget: str, provenance: bool = False, verify: bool = False) -> Any:
    s = _set()
    module = _baseline() if core == "baseline" else _core
    cands = _cands(core, shape, provenance, verify)
    limit = s.budgets[budget]
    args = (cands, limit, [s.failure_file], 2**30, Cost(), limit, None)
    if verify:
        return module.build(*args, _files().get)
    return module.build(*args)


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("shape", ["candidate", "dict"])
@pytest.mark.parametrize("what", ["baseline", "now", "now+fields", "now+verify"])
def test_provenance_overhead(benchmark: Any, what: str, shape: str, budget: str) -> None:
    if what == "baseline" and BASELINE is None:
        pytest.skip("set BUGCONTEXT_BASELINE_CORE to a baseline _core extension")
    benchmark.group = f"provenance 10k {shape} {budget}"
    core = "baseline" if what == "baseline" else "now"
    result, _, _ = benchmark.pedantic(
        _run,
        args=(core, shape, budget, what in ("now+fields", "now+verify"), what == "now+verify"),
        rounds=ROUNDS if what != "now+verify" else ROUNDS // 6,
        warmup_rounds=5,
        iterations=1,
    )
    if what == "now+verify":
        assert not [o for o in result.omitted if o.reason == "stale"]
    if what in ("baseline", "now"):
        plain = bugcontext.reference.build(
            {
                "candidates": _dicts(),
                "max_chars": _set().budgets[budget],
                "failure_file": _set().failure_file,
            }
        )
        assert list(result.selected) == list(plain.selected)
