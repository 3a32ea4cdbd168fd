"""The context job at the scale of a million lines, side by side with Aider's repository map.

Three repositories: Django 5.2 and sympy from their PyPI sdists, each with a one-line bug
and the log of a real failing test run (Django's own ``tests/runtests.py``, sympy's tests
with pytest, in a virtual environment made for them), and the Go standard library from
Debian's ``golang-1.19-src`` (no Go toolchain here: its log is a hand-written ``go test``
failure). For each repository and tool, in one run, the tools alternating, every
measurement a new process:

* ``cold``: no cache; the CPU time (user + system) of the process and of every process it
  started (parallel workers included: ``os.wait4``'s usage of the child and its waited-for
  descendants), and its wall time;
* ``warm``: a new process on the warm cache (wall time, interpreter start and imports
  included);
* ``edit``: in one process, one call, then one file edited (a line appended), then the
  wall and CPU time of the next call;
* ``peak``: the resident peak of the whole process tree (``/proc`` sampled every 20 ms;
  at least the largest process's ``ru_maxrss``), the largest of the three runs.

Tools: ``ours`` (this tree's package, ``bugcontext context``), ``base`` (another tree of
the package given with ``--base PYTHONPATH``, for the before/after figures) and ``aider``
(``aider.repomap.RepoMap`` with an 8,000-token map budget, driven as its ``Coder`` does:
the failing test's file in the chat, the log as the message, its mentioned file names and
identifiers; from the Python given with ``--aider-python``, aider-chat installed in its own
virtual environment). Everything downloaded or made goes to ``--cache`` (not the
repository)::

    python benches/scale.py --cache DIR --aider-python VENV/bin/python [--base TREE/python]

prints a Markdown table and writes its rows as JSON to ``DIR/scale-REPOS.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent

DJANGO = "django==5.2"
SYMPY = "sympy==1.14.0"
TEST_DEPS = ["asgiref", "sqlparse", "mpmath", "hypothesis", "pytest"]

# The one-line bugs: (file, text, replacement).
BUGS = {
    "django": ("django/utils/text.py", '.strip("-_")\n', '.strip("-")\n'),
    "sympy": ("sympy/utilities/iterables.py", "            levels -= 1\n", "            levels -= 2\n"),
    "go": ("strings/replace.go", "\treturn r.r.Replace(s)\n", '\treturn r.r.Replace(s + " ")\n'),
}
# The file edited for the after-an-edit figure.
EDITED = {"django": "django/utils/text.py", "sympy": "sympy/core/add.py", "go": "strings/strings.go"}
# The test file an agent would have in its chat.
CHAT = {
    "django": "tests/utils_tests/test_text.py",
    "sympy": "sympy/utilities/tests/test_iterables.py",
    "go": "strings/replace_test.go",
}

GO_LOG = """\
--- FAIL: TestReplacer (0.00s)
    replace_test.go:{line}: NewReplacer("a", "1").Replace("brad") = "br1d ", want "br1d"
FAIL
FAIL\tstrings\t0.012s
"""


# -- preparing the repositories ---------------------------------------------------------


def _run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, check=True, text=True, capture_output=True, **kwargs)


def _sdist(cache: Path, requirement: str) -> Path:
    folder = cache / "sdists"
    name = requirement.split("==")[0].lower()
    found = [p for p in folder.glob("*.tar.gz") if p.name.lower().startswith(name)] if folder.is_dir() else []
    if not found:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        _run([*command, requirement, "-d", str(folder)])
        found = [p for p in folder.glob("*.tar.gz") if p.name.lower().startswith(name)]
    return found[0]


def _unpacked(cache: Path, name: str) -> Path:
    """The pristine tree of ``name`` under ``cache/src``."""
    target = cache / "src" / name
    if target.is_dir():
        return target
    tmp = Path(tempfile.mkdtemp(dir=cache))
    if name == "go":
        _run(["apt-get", "download", "golang-1.19-src"], cwd=tmp)
        deb = next(tmp.glob("golang-1.19-src*.deb"))
        _run(["dpkg-deb", "-x", str(deb), str(tmp / "x")])
        top = tmp / "x" / "usr" / "share" / "go-1.19" / "src"
    else:
        with tarfile.open(_sdist(cache, DJANGO if name == "django" else SYMPY)) as archive:
            archive.extractall(tmp, filter="data")
        top = next(p for p in tmp.iterdir() if p.is_dir())
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(top, target, symlinks=True)
    shutil.rmtree(tmp)
    return target


def _test_python(cache: Path) -> Path:
    venv = cache / "testenv"
    python = venv / "bin" / "python"
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(venv)])
        _run([str(python), "-m", "pip", "install", "-q", *TEST_DEPS])
    return python


def prepare(cache: Path, name: str) -> tuple[Path, Path]:
    """A fresh copy of ``name`` with its bug, and the log of its failing test."""
    work = cache / "work" / name
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(_unpacked(cache, name), work, symlinks=True)
    path, text, bug = BUGS[name]
    source = (work / path).read_text(encoding="utf-8")
    if source.count(text) < 1:
        raise SystemExit(f"the bug's line is not in {path}")
    (work / path).write_text(source.replace(text, bug, 1), encoding="utf-8")
    log = cache / f"{name}.log"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if name == "django":
        run = subprocess.run(
            [str(_test_python(cache)), "runtests.py", "utils_tests.test_text"],
            cwd=work / "tests", env={**env, "PYTHONPATH": str(work)}, text=True, capture_output=True,
        )  # fmt: skip
        log.write_text(run.stdout + run.stderr, encoding="utf-8")
    elif name == "sympy":
        run = subprocess.run(
            [str(_test_python(cache)), "-m", "pytest", "-p", "no:cacheprovider",
             "sympy/utilities/tests/test_iterables.py", "-k", "test_flatten"],
            cwd=work, env=env, text=True, capture_output=True,
        )  # fmt: skip
        log.write_text(run.stdout + run.stderr, encoding="utf-8")
    else:
        lines = (work / CHAT[name]).read_text(encoding="utf-8").splitlines()
        line = next(i for i, t in enumerate(lines, 1) if "func TestReplacer(" in t)
        log.write_text(GO_LOG.format(line=line), encoding="utf-8")
    if "FAIL" not in log.read_text(encoding="utf-8"):
        raise SystemExit(f"{name}: the test did not fail")
    return work, log


# -- measuring ------------------------------------------------------------------------

OURS_EDIT = """
import sys, time, json
from bugcontext import Workspace
repo, log, cache, edited = sys.argv[1:5]
text = open(log, encoding="utf-8").read()
ws = Workspace(repo, cache_dir=cache)
ws.context(text)
with open(f"{repo}/{edited}", "a", encoding="utf-8") as f:
    f.write("\\n# edited\\n")
started, cpu = time.perf_counter(), time.process_time()
ws.context(text)
print(json.dumps({"call": time.perf_counter() - started, "call_cpu": time.process_time() - cpu}))
"""

AIDER = """
import json, os, re, sys, time
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from aider.io import InputOutput
from aider.models import Model
from aider.repomap import RepoMap
root, log, chat, mode, edited = sys.argv[1:6]
text = open(log, encoding="utf-8").read()
files = []
for top, dirs, names in os.walk(root):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    files += [os.path.join(top, n) for n in sorted(names) if not n.startswith(".")]
chat_files = {os.path.join(root, chat)}
other_files = set(files) - chat_files
# As Coder.get_repo_map: the message's file mentions and identifiers.
words = set(re.split(r"\\W+", text))
rel = {os.path.relpath(f, root): f for f in files}
mentioned_fnames = {r for r in rel if r in text or (os.path.basename(r) in words and len(r) > 4)}
stems = {}
for r in rel:
    stems.setdefault(os.path.splitext(os.path.basename(r))[0].lower(), set()).add(r)
mentioned_fnames |= {r for w in words if len(w) >= 5 for r in stems.get(w.lower(), ())}
io = InputOutput(pretty=False, yes=True, fancy_input=False)
rm = RepoMap(map_tokens=8000, root=root, main_model=Model("gpt-4o"), io=io)
def call():
    return rm.get_repo_map(chat_files, other_files, mentioned_fnames=mentioned_fnames, mentioned_idents=words)
out = call()
result = {"chars": len(out or "")}
if mode == "edit":
    with open(os.path.join(root, edited), "a", encoding="utf-8") as f:
        f.write("\\n// edited\\n" if edited.endswith(".go") else "\\n# edited\\n")
    started, cpu = time.perf_counter(), time.process_time()
    call()
    result["call"] = time.perf_counter() - started
    result["call_cpu"] = time.process_time() - cpu
print(json.dumps(result))
"""


def _tree_rss(root_pid: int) -> int:
    """The resident bytes of ``root_pid`` and its descendants now."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="utf-8") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    tree = {root_pid}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return sum(rss.get(pid, 0) for pid in tree)


def measure(command: list[str], env: dict[str, str], cwd: Path | None = None) -> dict[str, Any]:
    """Run ``command``: its wall time, CPU time (it and its descendants), peak tree RSS and
    the JSON it printed (if any)."""
    started = time.perf_counter()
    out = tempfile.TemporaryFile()
    # Standard error to a file too: a pipe read only at the end fills up (Aider's progress
    # bar, redrawn more often the slower the machine) and blocks the process for good.
    err = tempfile.TemporaryFile()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=err)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(process.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    err.seek(0)
    stderr = err.read().decode(errors="replace")
    process.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    text = out.read().decode(errors="replace")
    if process.returncode != 0:
        raise SystemExit(f"{command[:4]} failed ({process.returncode}):\n{stderr[-3000:]}")
    printed: dict[str, Any] = {}
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                printed = json.loads(line)
            except ValueError:  # a line of code in the context
                continue
            break
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "peak": max(peak, usage.ru_maxrss * 1024),
        **printed,
    }


def _ours(python: str, pythonpath: str, repo: Path, log: Path, cache: Path, mode: str, name: str) -> Any:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if mode == "edit":
        return measure([python, "-c", OURS_EDIT, str(repo), str(log), str(cache), EDITED[name]], env)
    command = [python, "-m", "bugcontext", "context", "--repo", str(repo), "--pytest-log", str(log)]
    return measure([*command, "--cache-dir", str(cache)], env)


def _aider(python: str, repo: Path, log: Path, mode: str, name: str) -> Any:
    if mode == "cold":
        for stale in repo.glob(".aider.tags.cache.v*"):
            shutil.rmtree(stale)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return measure([python, "-c", AIDER, str(repo), str(log), CHAT[name], mode, EDITED[name]], env, cwd=repo)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    cache = Path(args.cache).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    tools = ["ours", *(["base"] if args.base else []), *(["aider"] if args.aider_python else [])]
    if args.tools:
        tools = [t for t in tools if t in args.tools.split(",")]
    rows = []
    for name in args.repos.split(","):
        work, log = prepare(cache, name)
        files = [p for p in work.rglob("*.py" if name != "go" else "*.go") if p.is_file()]
        lines = sum(p.read_bytes().count(b"\n") for p in files)
        row: dict[str, Any] = {"repo": name, "files": len(files), "lines": lines}
        for tool in tools:
            row[tool] = {}
        for mode in ("cold", "warm", "edit"):
            for tool in tools:  # alternating
                repo = cache / "runs" / f"{name}-{tool}"
                if mode == "cold":
                    if repo.exists():
                        shutil.rmtree(repo)
                    shutil.copytree(work, repo, symlinks=True)
                    shutil.rmtree(cache / "index" / f"{name}-{tool}", ignore_errors=True)
                index = cache / "index" / f"{name}-{tool}"
                if tool == "aider":
                    got = _aider(args.aider_python, repo, log, mode, name)
                else:
                    path = str(HERE / "python") if tool == "ours" else args.base
                    got = _ours(sys.executable, path, repo, log, index, mode, name)
                row[tool][mode] = got
                print(f"{name} {tool} {mode}: {json.dumps(got)}", file=sys.stderr, flush=True)
        rows.append(row)
    (cache / f"scale-{'-'.join(args.repos.split(','))}.json").write_text(
        json.dumps(rows, indent=1), encoding="utf-8"
    )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    tools = [t for t in ("ours", "base", "aider") if t in rows[0]]
    head = ["repository", "files / lines"]
    for tool in tools:
        head += [f"{tool} cold CPU", f"{tool} warm wall (CPU)", f"{tool} after an edit (CPU)", f"{tool} peak"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (4 * len(tools))]
    for row in rows:
        cells = [row["repo"], f"{row['files']:,} / {row['lines'] // 1000:,}k"]
        for tool in tools:
            got = row[tool]
            peak = max(got[m]["peak"] for m in ("cold", "warm", "edit"))
            edit = got["edit"]
            cells += [
                f"{got['cold']['cpu']:.1f} s",
                f"{got['warm']['wall']:.2f} s ({got['warm']['cpu']:.2f} s)",
                f"{edit.get('call', float('nan')):.2f} s ({edit.get('call_cpu', float('nan')):.2f} s)",
                f"{peak / 1e9:.2f} GB",
            ]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cache", required=True, help="folder for the downloads, copies and caches")
    parser.add_argument("--aider-python", help="the Python of a virtual environment with aider-chat")
    parser.add_argument("--base", help="PYTHONPATH of another tree of the package, measured alongside")
    parser.add_argument("--repos", default="django,sympy,go", help="comma-separated: django,sympy,go")
    parser.add_argument("--tools", help="comma-separated subset of ours,base,aider (default: all given)")
    parser.add_argument("--json", help="print the table of an earlier run's scale.json instead")
    args = parser.parse_args()
    if args.json:
        print(table(json.loads(Path(args.json).read_text(encoding="utf-8"))))
        return
    started = time.time()
    rows = run(args)
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, {time.time() - started:.0f} s")
    print(table(rows))


if __name__ == "__main__":
    main()
