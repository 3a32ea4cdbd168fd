"""Every command and example in README.md and docs/*.md runs, so none can go stale.

The fenced code blocks of each page are run in order, in a folder of the page's own (a
temporary folder holding links to the project's ``tests``, ``scripts``, ``benches``, ``python``,
``src`` and ``docs``, so that a path written from the project's top works):

* ```` ```sh ```` / ```` ```bash ````: each command line (a ``\\`` continues it) runs in one
  bash script, with ``bugcontext`` and ``python`` naming this test's interpreter
  (``sys.executable -m bugcontext``); each must exit 0, or the status a trailing comment
  ``# exit N`` gives;
* ```` ```python ````: the block runs as a script (exit 0);
* ```` ```json ````: the block must be JSON; an ``mcpServers`` block must start ``bugcontext``
  with arguments its command line accepts.

A block right after the comment ``<!-- docs-test: output -->`` is the standard output of the
block run before it (``<!-- docs-test: output of FILE -->``: the file the page's commands
wrote); a line ``[...]`` in it stands for any lines. A block that is not run (a long run, an
install) is marked ``<!-- docs-test: skip (REASON) -->``, or
``<!-- docs-test: short (REASON): COMMAND -->`` with the short form that is run instead. A page
whose examples use the README's real bug (``repo``: more-itertools 9.0.0 from
``tests/data/realbug_more_itertools``, and ``failing.log``: its failing test's output) says
``<!-- docs-test: needs repo -->``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import bugcontext
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: The languages whose blocks are run (every other fence is text).
RUN = {"sh", "bash", "python", "json"}
#: Project folders (and files) linked into each page's folder.
LINKED = ("tests", "scripts", "benches", "python", "src", "docs", "pyproject.toml", "Cargo.toml")
#: Commands too long for the test run: a block holding one must be skipped or have a short form.
LONG = re.compile(
    r"(^|[\s;&|(])(bash scripts/|pip install|maturin |cargo |mutmut|python benches/|python -m pytest benches/"
    r"|python scripts/differential\.py|bugcontext eval|python -m bugcontext\.evaluation|MUTANTS_JOBS=)"
)
#: What a short form may not run: the set-up scripts and installs (minutes each).
NOT_SHORT = re.compile(r"(^|[\s;&|(])(bash scripts/(test|demo|venv)\.sh|pip install|maturin|cargo )")
FENCE = re.compile(r"^(`{3,}|~{3,})([\w+-]*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->$")
SKIP = re.compile(r"^skip \((?P<reason>[^()]*\S[^()]*)\)$")
SHORT = re.compile(r"^short \((?P<reason>[^()]*\S[^()]*)\): (?P<command>\S.*)$")
OUTPUT = re.compile(r"^output(?: of (?P<file>\S+))?$")
EXIT = re.compile(r"\s#\s*exit (\d+)\b")
ELIDED = "[...]"
#: How the README runs the real bug's failing test (its node ids relative to the repository).
PYTEST_ARGS = ("--rootdir", ".", "-p", "no:cacheprovider")
#: Per block, in seconds: the slowest real example is one context job.
TIMEOUT = 120


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    directive: str | None  # the docs-test comment right before the fence

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line} ({self.lang or 'text'})"


def parse(page: Path) -> tuple[list[Block], set[str]]:
    """The fenced blocks of ``page`` in order, and its page-level directives (a directive
    that is not right before a fence)."""
    lines = page.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    page_directives: set[str] = set()
    pending: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        found = DIRECTIVE.match(line.strip())
        if found:
            if pending is not None:
                page_directives.add(pending)
            pending = found.group(1)
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            mark, lang = fence.group(1), fence.group(2).lower()
            end = i + 1
            while end < len(lines) and not (
                lines[end].startswith(mark[0] * len(mark)) and lines[end].strip(mark[0]).strip() == ""
            ):
                end += 1
            assert end < len(lines), f"{page.name}:{i + 1}: a fence that is never closed"
            blocks.append(Block(page, i + 1, lang, "\n".join(lines[i + 1 : end]), pending))
            pending = None
            i = end + 1
            continue
        if line.strip() and pending is not None:
            page_directives.add(pending)
            pending = None
        i += 1
    if pending is not None:
        page_directives.add(pending)
    return blocks, page_directives


def _commands(text: str) -> list[tuple[int, str]]:
    """The command lines of a shell block (``\\`` continuations joined), with their line in
    the block; blank and comment lines left out."""
    out: list[tuple[int, str]] = []
    current, start = "", 0
    for number, line in enumerate(text.split("\n"), 1):
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not current:
            start = number
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        out.append((start, current + line))
        current = ""
    assert not current, "a command ends with a line continuation"
    return out


def _script(commands: list[tuple[int, str]]) -> str:
    """A bash script running each command and checking its exit status."""
    parts = ["set -o pipefail"]
    for number, command in commands:
        assert "<<" not in command, f"line {number}: a here-document cannot be checked line by line"
        expected = EXIT.search(command)
        status = int(expected.group(1)) if expected else 0
        parts.append(command)
        parts.append(
            f'__s=$?; if [ "$__s" -ne {status} ]; then '
            f'echo "docs-test: line {number} of the block exited $__s, expected {status}" >&2; exit 97; fi'
        )
    return "\n".join(parts) + "\n"


def _environment(base: Path) -> dict[str, str]:
    """The environment of a page's commands: ``bugcontext`` and ``python`` are this test's
    interpreter (running this tree's package), and nothing goes to the user's cache."""
    shims = base / ".bin"
    if not shims.exists():
        shims.mkdir()
        for name, prefix in (("bugcontext", '-m bugcontext '), ("python", ""), ("python3", "")):
            shim = shims / name
            shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" {prefix}"$@"\n', encoding="utf-8")
            shim.chmod(0o755)
    package = str(Path(bugcontext.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package, env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["XDG_CACHE_HOME"] = str(base / ".cache")
    env.pop("BUGCONTEXT_HYPOTHESIS_PROFILE", None)
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str], what: str) -> str:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, (
        f"{what}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc.stdout


def _normal(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def check_output(shown: str, actual: str, what: str) -> None:
    """``actual`` is what ``shown`` shows: equal, line for line, except that each line
    ``[...]`` of ``shown`` stands for any lines (none included)."""
    expected, got = _normal(shown), _normal(actual)
    chunks: list[list[str]] = [[]]
    for line in expected:
        if line == ELIDED:
            chunks.append([])
        else:
            chunks[-1].append(line)
    if len(chunks) == 1:
        assert got == expected, f"{what}: the output differs\n--- shown\n{shown}\n--- printed\n{actual}"
        return
    first, *middle, last = chunks
    assert got[: len(first)] == first, f"{what}: the output does not begin as shown\n{actual}"
    at = len(first)
    for chunk in middle:
        for start in range(at, len(got) - len(chunk) + 1):
            if got[start : start + len(chunk)] == chunk:
                at = start + len(chunk)
                break
        else:
            raise AssertionError(f"{what}: lines not printed (in this order): {chunk}\n{actual}")
    assert not last or (got[len(got) - len(last) :] == last and len(got) - len(last) >= at), (
        f"{what}: the output does not end as shown\n{actual}"
    )


def _check_mcp_config(data: object, what: str) -> None:
    from bugcontext.integrations.cli import _parser

    assert isinstance(data, dict)
    for name, server in data["mcpServers"].items():
        assert server["command"] == "bugcontext", f"{what}: server {name} does not run bugcontext"
        args = _parser().parse_args(server["args"])
        assert args.command == "mcp", what


@pytest.fixture(scope="session")
def real_bug(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the README's real bug: ``repo`` (more-itertools 9.0.0 and its regression
    test) and ``failing.log`` (the test's output, as the README makes it)."""
    base = tmp_path_factory.mktemp("real-bug")
    shutil.copytree(ROOT / "tests" / "data" / "realbug_more_itertools", base / "repo")
    for extra in ("fix.patch", "README.md", "LICENSE"):
        (base / "repo" / extra).unlink()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_more.py", *PYTEST_ARGS],
        cwd=base / "repo",
        env=_environment(base),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the regression test fails
    (base / "failing.log").write_text(proc.stdout, encoding="utf-8")
    return base


def _prepare(base: Path, directives: set[str], real_bug: Path) -> None:
    for name in LINKED:
        (base / name).symlink_to(ROOT / name)
    if "needs repo" in directives:
        shutil.copytree(real_bug / "repo", base / "repo")
        shutil.copy(real_bug / "failing.log", base / "failing.log")


def _directive_kind(block: Block) -> str:
    """``run``, ``skip``, ``short`` or ``output``; a malformed directive fails here."""
    if block.directive is None:
        return "run" if block.lang in RUN else "text"
    for kind, pattern in (("skip", SKIP), ("short", SHORT), ("output", OUTPUT)):
        if pattern.match(block.directive):
            return kind
    raise AssertionError(f"{block}: unknown docs-test directive {block.directive!r}")


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_example_of_the_page_runs(page: Path, tmp_path: Path, real_bug: Path) -> None:
    blocks, directives = parse(page)
    unknown = directives - {"needs repo"}
    assert not unknown, f"{page.name}: unknown page directives {unknown}"
    _prepare(tmp_path, directives, real_bug)
    env = _environment(tmp_path)
    last_stdout: str | None = None
    for number, block in enumerate(blocks):
        kind = _directive_kind(block)
        if kind == "output":
            found = OUTPUT.match(block.directive or "")
            assert found is not None
            if found.group("file"):
                actual = (tmp_path / found.group("file")).read_text(encoding="utf-8")
            else:
                assert last_stdout is not None, f"{block}: an output block after no block that ran"
                actual = last_stdout
            check_output(block.text, actual, str(block))
            continue
        if kind == "short":
            found = SHORT.match(block.directive or "")
            assert found is not None
            command = found.group("command")
            assert not NOT_SHORT.search(command), f"{block}: the short form is itself a long run"
            short = _script([(1, command)])
            last_stdout = _run(["bash", "-c", short], tmp_path, env, f"{block} (short form)")
            continue
        if kind in ("skip", "text"):
            if kind == "text" and block.lang in ("", "text", "console"):
                assert not block.text.lstrip().startswith("$ "), f"{block}: a command shown as text"
            continue
        if block.lang in ("sh", "bash"):
            commands = _commands(block.text)
            assert commands, f"{block}: no command"
            for line, command in commands:
                assert not LONG.search(command), (
                    f"{block}, line {line}: a long run; mark the block skip or give its short form"
                )
            script = tmp_path / f".block{number}.sh"
            script.write_text(_script(commands), encoding="utf-8")
            last_stdout = _run(["bash", str(script)], tmp_path, env, str(block))
        elif block.lang == "python":
            script = tmp_path / f".block{number}.py"
            script.write_text(block.text + "\n", encoding="utf-8")
            last_stdout = _run([sys.executable, str(script)], tmp_path, env, str(block))
        elif block.lang == "json":
            data = json.loads(block.text)
            if isinstance(data, dict) and "mcpServers" in data:
                _check_mcp_config(data, str(block))
            last_stdout = None


def test_skipped_blocks_say_why_and_short_forms_are_short() -> None:
    seen = 0
    for page in PAGES:
        for block in parse(page)[0]:
            kind = _directive_kind(block)
            if kind in ("skip", "short"):
                seen += 1
                assert block.lang in RUN, f"{block}: only a block that would run can be skipped"
            if kind == "short":
                found = SHORT.match(block.directive or "")
                assert found is not None and not NOT_SHORT.search(found.group("command")), str(block)
    assert seen  # the README's set-up commands at least


LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")
#: A path written from the project's top, in backticks.
#: Files of the real bugs' own trees that the docs name (the failure files of the real-bug table).
OTHER_PROJECTS = {"tests/test_more.py", "tests/test_parse.py"}
PATH = re.compile(r"`((?:src|python|tests|benches|scripts|docs)/[\w./-]*[\w/])`")


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``page`` (lower case, punctuation dropped,
    spaces as hyphens)."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_links_and_paths_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for target, anchor in LINK.findall(text):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{page.name}: link to a missing file {target}"
        if anchor:
            assert anchor[1:] in _anchors(page.parent / target), f"{page.name}: no heading {target}{anchor}"
    for path in PATH.findall(text):
        if path.startswith("src/") and not (path.endswith(".rs") or path.startswith("src/python")):
            continue  # another project's layout (src/main/java, src/marshmallow/...)
        if path in OTHER_PROJECTS:
            continue
        assert (ROOT / path).exists(), f"{page.name}: `{path}` does not exist"


def test_every_mcp_tool_argument_is_documented() -> None:
    pytest.importorskip("mcp")
    import anyio
    from bugcontext.integrations.mcp_server import create_server
    from mcp import Client

    async def tools() -> dict[str, set[str]]:
        async with Client(create_server(cache=False)) as client:
            listed = (await client.list_tools()).tools
            return {tool.name: set(tool.input_schema.get("properties", {})) for tool in listed}

    found = anyio.run(tools)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| (.*) \|$", readme, re.M)}
    mcp_page = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    for name, arguments in found.items():
        assert name in rows, f"README: the MCP tool {name} is not in the tools table"
        for argument in arguments:
            assert f"`{argument}`" in rows[name], f"README: {name}'s argument {argument} is not listed"
            assert f"`{argument}`" in mcp_page, f"docs/mcp.md: {name}'s argument {argument} is not listed"


def test_every_subcommand_and_flag_is_documented() -> None:
    import argparse

    from bugcontext.integrations.cli import _parser

    cli_page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    if not path:
                        assert f"`{name}" in readme, f"README: the subcommand {name} is not in the table"
                    walk(sub, (*path, name))
                continue
            for option in action.option_strings:
                if option in ("-h", "--help"):
                    continue
                assert f"`{option}" in cli_page, f"docs/cli.md: {' '.join(path)} {option} is not documented"

    walk(_parser(), ())


def test_extras_and_versions_named_exist() -> None:
    """Every extra a page names (``'.[mcp]'``, "the ``table`` extra") is one of pyproject.toml's,
    and every wheel name carries the project's version."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = set(project["optional-dependencies"])
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        named = re.findall(r"\.\[([\w,]+)\]", text) + re.findall(r"the `(\w+)` extra", text)
        for group in named:
            for extra in group.split(","):
                assert extra in extras, f"{page.name}: no extra {extra!r} in pyproject.toml"
        for version in re.findall(r"bugcontext-(\d+\.\d+\.\d+)-", text):
            assert version == project["version"], f"{page.name}: a wheel of version {version}"


def test_shown_output_matches_with_elisions() -> None:
    check_output("a\n[...]\nc\n", "a\nb\nb2\nc\n", "elided")
    check_output("a\n[...]\n", "a\nanything\n", "open end")
    check_output("a\nb\n", "a\nb\n\n", "trailing blank lines")
    for shown, printed in (("a\n[...]\nc", "a\nb\n"), ("a\nb", "a\nc"), ("x\n[...]", "a\nx")):
        with pytest.raises(AssertionError):
            check_output(shown, printed, "differs")


def test_commands_are_split_and_their_status_checked(tmp_path: Path) -> None:
    assert _commands("# a comment\necho a \\\n  b\n\nfalse  # exit 1\n") == [
        (2, "echo a    b"),
        (5, "false  # exit 1"),
    ]
    ok = subprocess.run(["bash", "-c", _script([(1, "false  # exit 1"), (2, "true")])])
    assert ok.returncode == 0
    wrong = subprocess.run(["bash", "-c", _script([(1, "true  # exit 1")])], capture_output=True, text=True)
    assert wrong.returncode == 97 and "line 1 of the block exited 0, expected 1" in wrong.stderr
