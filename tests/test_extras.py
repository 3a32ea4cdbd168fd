"""The light core and its extras: with only the core's dependencies importable, ``import
bugcontext``, ``build``, ``render``, the token counter, the reference and ``bugcontext build``
work and print what they print with everything installed; each part of an extra, used
without it, fails with one line naming the extra (the command line: exit 2; the API: a
``MissingExtraError``, an ``ImportError``, on first use).

The child processes block packages with a finder put first on ``sys.meta_path`` (an import of
a blocked package, or of a module in it, raises ``ModuleNotFoundError`` as if it were not
installed); the core's packages are the distributions ``pyproject.toml`` lists in
``project.dependencies`` and what they require, found in the installed metadata.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import re
import subprocess
import sys
import textwrap
from functools import cache
from pathlib import Path

import bugcontext
import pytest
from bugcontext.core._extras import EXTRAS, MissingExtraError, needs, require
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
#: Where this process imports bugcontext from (the source tree or site-packages): the children's too.
PACKAGE_PARENT = Path(bugcontext.__file__).resolve().parents[1]

tomllib = pytest.importorskip("tomllib")

#: Run by every child: block the packages named in argv[1] (comma-separated), then run argv[2].
CHILD = textwrap.dedent(
    """
    import sys

    class Blocker:
        def __init__(self, names):
            self.names = frozenset(names)

        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in self.names:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    blocked = [name for name in sys.argv[1].split(",") if name]
    for loaded in [m for m in sys.modules if m.partition(".")[0] in blocked]:
        del sys.modules[loaded]
    sys.meta_path.insert(0, Blocker(blocked))
    code = sys.argv[2]
    del sys.argv[1:3]
    exec(compile(code, "<child>", "exec"))
    """
)

#: The command line in a child: ``main`` on the remaining arguments.
CLI = "from bugcontext.integrations.cli import main\nsys.exit(main(sys.argv[1:]))"


def _closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` name and everything they require (no extras),
    as installed here, by canonical name."""
    found: set[str] = set()
    todo = [Requirement(text) for text in requirements]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        if name in found:
            continue
        found.add(name)
        todo += [Requirement(text) for text in metadata.requires(req.name) or ()]
    return found


@cache
def core_distributions() -> frozenset[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return frozenset(_closure(project["dependencies"]))


@cache
def non_core_packages() -> str:
    """Every importable top-level name of an installed distribution outside the core, as the
    child's argument."""
    core = core_distributions()
    names = {
        name
        for name, dists in metadata.packages_distributions().items()
        if name != "bugcontext" and not any(canonicalize_name(d) in core for d in dists)
    }
    return ",".join(sorted(names))


def _child(blocked: str, code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(PACKAGE_PARENT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run(
        [sys.executable, "-c", CHILD, blocked, code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def test_the_core_is_small_and_blocks_the_rest() -> None:
    core = core_distributions()
    assert {"detect-secrets", "sortedcontainers", "tqdm"} <= core
    blocked = set(non_core_packages().split(","))
    # The extras' packages are outside the core: the blocker really takes them away.
    assert {
        "bm25s",
        "tree_sitter",
        "pathspec",
        "re2",
        "mcp",
        "pyarrow",
        "matplotlib",
        "numpy",
    } <= blocked
    done = _child(non_core_packages(), "import numpy")
    assert done.returncode == 1 and "ModuleNotFoundError: No module named 'numpy'" in done.stderr


INPUT = {
    "candidates": [
        {
            "path": "pkg/a.py",
            "start": 1,
            "end": 3,
            "content": "x = 1\ny = 2\nz = 3\n",
            "reason": "failure",
            "score": 2.0,
        },
        {
            "path": "pkg/b.py",
            "start": 5,
            "end": 6,
            "content": "def f():\n    return 1\n",
            "reason": "search",
            "score": 1.0,
        },
        {
            "path": "pkg/a.py",
            "start": 2,
            "end": 3,
            "content": "y = 2\nz = 3\n",
            "reason": "reference",
            "score": 0.5,
        },
    ],
    "max_chars": 40,
    "failure_file": "pkg/a.py",
}

API = textwrap.dedent(
    """
    import json
    import bugcontext
    data = json.loads(sys.argv[1])
    result = bugcontext.build(data)
    tokens_input = {key: value for key, value in data.items() if key != "max_chars"}
    tokens_input.update(budget=30, cost={"unit": "tokens", "encoding": "o200k_base", "template": "markdown"})
    tokens = bugcontext.build(tokens_input)
    many = bugcontext.build_many([data, data], threads=2)
    print(json.dumps({
        "build": result.to_dict(),
        "render": bugcontext.render(tokens),
        "count": bugcontext.TokenCounter("o200k_base").count_one(bugcontext.render(tokens)),
        "many": [r.to_dict() for r in many],
        "reference": bugcontext.reference.build(data).to_dict(),
        "modules": sorted(m for m in sys.modules if m.partition(".")[0] == "bugcontext"),
    }))
    """
)


def test_import_and_build_with_only_the_core() -> None:
    full = _child("", API, json.dumps(INPUT))
    core = _child(non_core_packages(), API, json.dumps(INPUT))
    assert (core.returncode, core.stderr) == (0, ""), core.stderr
    assert full.returncode == 0, full.stderr
    assert json.loads(core.stdout) == json.loads(full.stdout)
    shown = json.loads(core.stdout)
    assert shown["build"] == shown["reference"] == shown["many"][0]
    # Nothing of the context job, the batch path or the integrations was loaded.
    assert not [m for m in shown["modules"] if m.startswith(("bugcontext.job", "bugcontext.integrations"))]


@pytest.mark.parametrize(
    "args",
    [
        ["build", "input.json"],
        ["build", "--format", "markdown", "input.json"],
        ["build", "--engine", "reference", "--format", "markdown", "input.json"],
        ["build", "--jsonl", "inputs.jsonl"],
        ["build", "--verify-root", ".", "input.json"],
    ],
)
def test_the_command_line_build_with_only_the_core(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "input.json").write_text(json.dumps(INPUT), encoding="utf-8")
    # A secret in a candidate: the core's build redacts what it prints.
    secret = {
        **INPUT,
        "max_chars": 400,
        "candidates": [{**INPUT["candidates"][1], "content": 'token = "ghp_' + "a1B2" * 9 + '"\n'}],
    }
    (tmp_path / "inputs.jsonl").write_text(
        f"{json.dumps(INPUT)}\n{json.dumps(secret)}\n{{\n", encoding="utf-8"
    )
    full = _child("", CLI, *args, cwd=tmp_path)
    core = _child(non_core_packages(), CLI, *args, cwd=tmp_path)
    assert (core.returncode, core.stdout, core.stderr) == (full.returncode, full.stdout, full.stderr)
    assert core.returncode in (0, 3), core.stderr  # 3: the invalid line of the JSON Lines input
    assert core.stdout
    if "--jsonl" in args:
        assert "[REDACTED: " in core.stdout and "ghp_" not in core.stdout


def _message(extra: str) -> re.Pattern[str]:
    what = re.escape(EXTRAS[extra])
    hint = rf"install bugcontext with the \[{extra}\] extra"
    return re.compile(rf"{what} needs the '{extra}' extra \(no module '[\w.]+'\): {hint}")


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["context", "--repo", ".", "--log", "log.txt"], "context"),
        (["context", "--repo", ".", "--log", "log.txt", "--format", "json", "--rerun", "failing"], "context"),
        (["mcp", "--root", "."], "mcp"),
        (["rerank", "in.parquet", "--out", "out.parquet", "--budget", "100"], "table"),
        (["eval", "--cases", "cases.json", "--budgets", "100"], "eval"),
        (["eval", "--help"], "eval"),
    ],
)
def test_a_subcommand_without_its_extra_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], extra: str
) -> None:
    (tmp_path / "log.txt").write_text("FAILED tests/test_a.py::test_a - ValueError: x\n", encoding="utf-8")
    done = _child(non_core_packages(), CLI, *args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"bugcontext {args[0]}: ")
    assert _message(extra).fullmatch(line.removeprefix(f"bugcontext {args[0]}: ")), line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.txt"]  # nothing written


def test_one_extra_missing_names_that_extra(tmp_path: Path) -> None:
    # Only pyarrow away: the context job still runs, rerank names the table extra.
    done = _child(
        "pyarrow", CLI, "rerank", "in.parquet", "--out", "out.parquet", "--budget", "9", cwd=tmp_path
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "bugcontext rerank: the Arrow batch path (build_table, rerank) needs the 'table' extra "
        "(no module 'pyarrow'): install bugcontext with the [table] extra\n"
    )
    # Only matplotlib away: eval stops before any work, naming the eval extra.
    done = _child("matplotlib", CLI, "eval", "--cases", "none.json", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "bugcontext eval: the evaluation needs the 'eval' extra (no module 'matplotlib'): "
        "install bugcontext with the [eval] extra\n"
    )


API_MISSING = textwrap.dedent(
    """
    import json
    import bugcontext  # never fails: the extras load on first use
    out = {}
    for name, use in [
        ("Workspace", lambda: bugcontext.Workspace("."),),
        ("context", lambda: bugcontext.context(".", "")),
        ("build_table", lambda: bugcontext.build_table({}, budget=10)),
        ("reference.build_table", lambda: bugcontext.reference.build_table({}, budget=10)),
    ]:
        try:
            use()
        except ImportError as exc:
            out[name] = [type(exc).__name__, getattr(exc, "extra", None), str(exc)]
    print(json.dumps(out))
    """
)


def test_the_api_raises_a_typed_error_on_first_use() -> None:
    done = _child(non_core_packages(), API_MISSING)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    found = json.loads(done.stdout)
    expected = {
        "Workspace": "context",
        "context": "context",
        "build_table": "table",
        "reference.build_table": "table",
    }
    assert {name: extra for name, (_, extra, _) in found.items()} == expected
    for _name, (kind, extra, message) in found.items():
        assert kind == "MissingExtraError"
        assert _message(extra).fullmatch(message), message


def test_the_error_is_public() -> None:
    assert bugcontext.MissingExtraError is MissingExtraError
    assert issubclass(MissingExtraError, ImportError)


def test_needs_and_require() -> None:
    with pytest.raises(MissingExtraError) as caught:
        with needs("context"):
            import bugcontext_no_such_package  # type: ignore[import-not-found]  # noqa: F401
    assert caught.value.extra == "context" and caught.value.name == "bugcontext_no_such_package"
    assert isinstance(caught.value, ImportError)
    assert str(caught.value) == (
        "the context job needs the 'context' extra (no module 'bugcontext_no_such_package'): "
        "install bugcontext with the [context] extra"
    )
    # A module of the package itself that is missing is a bug, not a missing extra.
    with pytest.raises(ModuleNotFoundError) as own:
        with needs("context"):
            import bugcontext.no_such_module  # type: ignore[import-not-found]  # noqa: F401
    assert not isinstance(own.value, MissingExtraError)
    with pytest.raises(ValueError, match="unknown extra 'nope'"):
        with needs("nope"):
            pass
    assert require("json", "context") is json
    with pytest.raises(
        MissingExtraError, match=r"the MCP server needs the 'mcp' extra \(no module 'no_such'\)"
    ):
        require("no_such.module", "mcp")


def test_python_m_evaluation_without_its_extra_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code = 'import runpy\nrunpy.run_module("bugcontext.evaluation", run_name="__main__")'
    done = _child(non_core_packages(), code, "--cases", "none.json", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    (line,) = done.stderr.splitlines()
    assert _message("eval").fullmatch(line.removeprefix("bugcontext eval: ")), line


STAR = textwrap.dedent(
    """
    import json
    from bugcontext import *
    import bugcontext
    job = ("ContextResult", "Workspace", "context")
    out = {"core": sorted(n for n in bugcontext.__all__ if n not in job)}
    out["same"] = all(globals()[n] is getattr(bugcontext, n) for n in out["core"])
    out["build"] = build(json.loads(sys.argv[1])).to_dict()
    for name, use in [
        ("Workspace", lambda: Workspace(".")),
        ("context", lambda: context(".", "")),
        ("ContextResult", lambda: ContextResult.to_dict),
    ]:
        try:
            use()
        except ImportError as exc:
            out[name] = [type(exc).__name__, getattr(exc, "extra", None), str(exc)]
    print(json.dumps(out))
    """
)


def test_star_import_with_only_the_core_gives_the_core_and_the_rest_fails_on_use() -> None:
    done = _child(non_core_packages(), STAR, json.dumps(INPUT))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    found = json.loads(done.stdout)
    core = {"build", "build_many", "render", "TokenCounter", "reference", "MissingExtraError"}
    assert core <= set(found["core"])
    assert found["same"] is True
    assert found["build"] == bugcontext.build(INPUT).to_dict()
    for name in ("Workspace", "context", "ContextResult"):
        kind, extra, message = found[name]
        assert (kind, extra) == ("MissingExtraError", "context"), name
        assert _message("context").fullmatch(message), message


#: A pytest run in a child, the plugin loaded by its module name (the other plugins' entry
#: points, whose packages may be blocked, are not loaded).
PYTEST = (
    "import os, pytest\n"
    "os.environ['PYTEST_DISABLE_PLUGIN_AUTOLOAD'] = '1'\n"
    "plugin = ['-p', 'bugcontext.integrations.pytest_plugin', '-p', 'no:cacheprovider']\n"
    "sys.exit(pytest.main([*plugin, *sys.argv[1:]]))"
)


def _without_pytest() -> str:
    """:func:`non_core_packages` less pytest and what it requires: a core install with pytest."""
    kept = _closure(["pytest"])
    names = {
        name
        for name, dists in metadata.packages_distributions().items()
        if any(canonicalize_name(d) in kept for d in dists)
    }
    return ",".join(sorted(set(non_core_packages().split(",")) - names))


def _project(tmp_path: Path) -> Path:
    """An unrelated project: one failing test and one passing test."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_unrelated.py").write_text(
        "def test_fails():\n    assert 1 + 1 == 3\n\n\ndef test_passes():\n    pass\n", encoding="utf-8"
    )
    return tmp_path


def test_the_pytest_plugin_leaves_a_run_without_the_context_extra_alone(tmp_path: Path) -> None:
    project = _project(tmp_path)
    blocked = _without_pytest()
    names = set(blocked.split(","))
    assert {"re2", "bm25s", "tree_sitter"} <= names and not {"pytest", "_pytest", "pluggy"} & names
    done = _child(blocked, PYTEST, "-q", "tests", cwd=project)
    off = ["-p", "no:bugcontext.integrations.pytest_plugin"]
    plain = _child(blocked, PYTEST, "-q", *off, "tests", cwd=project)
    assert (done.returncode, done.stderr) == (1, ""), done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    assert "Traceback" not in done.stdout and "INTERNALERROR" not in done.stdout
    assert "bugcontext" not in done.stdout  # inert until its option is used
    timing = re.compile(r" in [0-9.]+s")
    assert timing.sub("", done.stdout) == timing.sub("", plain.stdout)
    assert sorted(p.name for p in project.iterdir()) == ["tests"]


def test_the_pytest_plugin_option_without_the_context_extra_is_one_line(tmp_path: Path) -> None:
    project = _project(tmp_path)
    done = _child(_without_pytest(), PYTEST, "-q", "--bugcontext", "context.md", "tests", cwd=project)
    assert (done.returncode, done.stderr) == (1, ""), done.stdout + done.stderr  # the run's own status
    assert "1 failed, 1 passed" in done.stdout
    assert "Traceback" not in done.stdout and "INTERNALERROR" not in done.stdout
    (line,) = [line for line in done.stdout.splitlines() if "bugcontext" in line]
    assert line.startswith("bugcontext: no context written: ")
    assert _message("context").fullmatch(line.removeprefix("bugcontext: no context written: ")), line
    assert not (project / "context.md").exists()
    # No failing test: nothing to write, and no word of the extra.
    (project / "tests" / "test_unrelated.py").write_text("def test_passes():\n    pass\n", encoding="utf-8")
    done = _child(_without_pytest(), PYTEST, "-q", "--bugcontext", "context.md", "tests", cwd=project)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout + done.stderr
    assert "bugcontext: no failing test, no context written" in done.stdout
