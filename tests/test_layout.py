"""The package's layout holds its architecture: layers import only downwards, and no module
imports itself back through others (counting imports inside functions and ``TYPE_CHECKING``
blocks: a circle is a circle even when it is put off until first use).

The layers, bottom to top (the README's layout section draws them):

1. ``bugcontext.core``: the contract (candidates, ranking and packing, the reference, the prompt
   section, digests, traces, limits, errors, secrets, safe output);
2. ``bugcontext.batch``: many builds at once (Arrow tables, Parquet re-ranking, Ray);
3. ``bugcontext.job``: the context job and its candidate sources;
4. ``bugcontext.evaluation``: the real-bug evaluation;
5. the public surface: ``bugcontext`` (``__init__``) and ``bugcontext.reference``, which
   re-export names from the layers below;
6. ``bugcontext.integrations`` (and ``python -m bugcontext``): the command line, the MCP server,
   the pytest plugin.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "bugcontext"
LAYERS = {"core": 1, "batch": 2, "job": 3, "evaluation": 4, "integrations": 6}
SURFACE = {"bugcontext": 5, "bugcontext.reference": 5, "bugcontext.__main__": 6}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if "_trace" in path.parts:  # runs inside the traced program: imports nothing of ours
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def layer(module: str) -> int:
    if module in SURFACE:
        return SURFACE[module]
    if module == "bugcontext._core":
        return 0
    return LAYERS[module.split(".")[1]]


def _imports(module: str, path: Path) -> set[str]:
    """Every module of the package that ``module`` imports, anywhere in its code."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "bugcontext":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in MODULES or sub == "bugcontext._core" else target)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "bugcontext")
    out.discard(module)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_every_module_is_in_a_layer() -> None:
    for name in MODULES:
        assert layer(name) >= 1, name


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_from_a_higher_layer(module: str) -> None:
    upward = sorted(t for t in GRAPH[module] if layer(t) > layer(module))
    assert upward == [], f"{module} (layer {layer(module)}) imports {upward}"


def test_no_import_circle() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(GRAPH.get(node, ())):
            if target not in GRAPH:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for name in sorted(GRAPH):
        if name not in index:
            visit(name)
    assert circles == []


def test_the_checker_sees_an_upward_and_a_circular_import(tmp_path: Path) -> None:
    """The two rules above fail on a planted fault (the checker is not vacuous)."""
    assert "bugcontext.core.types" in GRAPH["bugcontext.core.builder"]
    assert any(t.startswith("bugcontext.job.") for t in GRAPH["bugcontext.integrations.cli"])
    fake = tmp_path / "m.py"
    fake.write_text("def f():\n    from ..job import workspace\n", encoding="utf-8")
    assert "bugcontext.job.workspace" in _imports("bugcontext.core.m", fake)


#: The longest a function of the package may be, in lines (its ``def`` to its last line,
#: docstring included): a longer one is split into named steps.
MAX_FUNCTION_LINES = 80


def _long_functions(path: Path) -> list[str]:
    """The functions (and methods) of ``path`` longer than :data:`MAX_FUNCTION_LINES` lines,
    as ``file:line name (N lines)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
            size = node.end_lineno - node.lineno + 1
            if size > MAX_FUNCTION_LINES:
                found.append(f"{path.name}:{node.lineno} {node.name} ({size} lines)")
    return found


def test_no_function_over_80_lines() -> None:
    # Every module of the package, the traced program's tracer (``_trace``) included.
    offenders = [f for path in sorted(PACKAGE.rglob("*.py")) for f in _long_functions(path)]
    assert offenders == [], f"functions over {MAX_FUNCTION_LINES} lines: {', '.join(offenders)}"


def test_the_length_checker_sees_a_long_function(tmp_path: Path) -> None:
    """The rule above fails on a planted fault (the checker is not vacuous)."""
    fake = tmp_path / "m.py"
    fits = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    long = "".join(f"        x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    fake.write_text(f"def fits():\n{fits}\n\nclass C:\n    def long(self):\n{long}", encoding="utf-8")
    assert _long_functions(fake) == [f"m.py:{MAX_FUNCTION_LINES + 4} long ({MAX_FUNCTION_LINES + 1} lines)"]
