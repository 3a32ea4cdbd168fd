"""The weight of an install: its size on disk and the time ``import bugcontext`` takes.

    python benches/core_install.py --wheel dist/bugcontext-*.whl [--extras context] [--rounds 20]

makes a fresh virtual environment in a temporary folder, installs the wheel there with pip
(only the core's dependencies, or those of ``--extras``), and prints, as Markdown:

* the distributions installed and what they add to ``site-packages`` on disk (``du -sk`` of
  each new entry: blocks used; what a fresh environment has, pip, is left out), with the
  largest;
* ``import bugcontext``: the median wall time of ``python -c "import bugcontext"`` over
  ``--rounds`` fresh processes, less the median of ``python -c pass`` (the interpreter's own
  start), and the cumulative import time of ``bugcontext`` as ``python -X importtime`` reports
  it (median over the rounds);
* the same for one ``bugcontext build`` of a small input (the command line's start included).

Without ``--wheel``, the wheel is built first with ``maturin build --release`` (minutes).
Needs access to the package index for the dependencies. Not pass/fail; not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: A small build input for ``bugcontext build`` (two candidates, one budget).
INPUT = {
    "candidates": [
        {
            "path": "a.py",
            "start": 1,
            "end": 2,
            "content": "x = 1\ny = 2\n",
            "reason": "failure",
            "score": 1.0,
        },
        {"path": "b.py", "start": 3, "end": 3, "content": "z = 3\n", "reason": "search", "score": 0.5},
    ],
    "max_chars": 100,
}


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=True, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload,no-any-return]


def build_wheel(out: Path) -> Path:
    """A release wheel of this checkout, built by maturin into ``out``."""
    subprocess.run(["maturin", "build", "--release", "--out", str(out)], check=True, cwd=ROOT)
    return max(out.glob("bugcontext-*.whl"), key=lambda p: p.stat().st_mtime)


def du_kib(folder: Path) -> int:
    """``du -sk folder``: KiB of blocks used."""
    return int(_run(["du", "-sk", str(folder)]).stdout.split()[0])


def median_wall(argv: list[str], rounds: int, stdin: str = "") -> float:
    """Median wall time of ``argv`` in a fresh process, in milliseconds."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run(argv, check=True, input=stdin, capture_output=True, text=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def import_time_us(python: Path, rounds: int) -> float:
    """Median cumulative import time of ``bugcontext`` (``-X importtime``), in microseconds."""
    found = []
    for _ in range(rounds):
        err = _run([str(python), "-X", "importtime", "-c", "import bugcontext"]).stderr
        match = re.search(r"^import time:\s+\d+ \|\s+(\d+) \| bugcontext$", err, re.MULTILINE)
        if match is None:
            raise SystemExit("no import time line for bugcontext in -X importtime's output")
        found.append(int(match.group(1)))
    return statistics.median(found)


def _listed(python: Path) -> list[dict[str, str]]:
    listed: list[dict[str, str]] = json.loads(
        _run([str(python), "-m", "pip", "list", "--format", "json"]).stdout
    )
    return listed


def measure(wheel: Path, extras: str, rounds: int) -> str:
    with tempfile.TemporaryDirectory(prefix="bugcontext-install-") as folder:
        venv = Path(folder) / "venv"
        _run([sys.executable, "-m", "venv", str(venv)])
        python = venv / "bin" / "python"
        site = Path(
            _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip()
        )
        # What the fresh environment has already (pip; setuptools on older Pythons) is left out.
        before = {p.name for p in site.iterdir()}
        listed_before = {d["name"] for d in _listed(python)}
        target = f"{wheel}[{extras}]" if extras else str(wheel)
        _run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet", target])
        names = sorted(d["name"] for d in _listed(python) if d["name"] not in listed_before)
        added = [p for p in site.iterdir() if p.name not in before]
        total = sum(du_kib(p) for p in added)
        sizes = sorted(
            ((du_kib(p), p.name) for p in added if not p.name.endswith(".dist-info")), reverse=True
        )
        baseline = median_wall([str(python), "-c", "pass"], rounds)
        imported = median_wall([str(python), "-c", "import bugcontext"], rounds)
        cumulative = import_time_us(python, rounds)
        command = [str(venv / "bin" / "bugcontext"), "build", "-"]
        built = median_wall(command, rounds, json.dumps(INPUT))
    lines = [
        f"### `pip install {'bugcontext' if not extras else f'bugcontext[{extras}]'}` (wheel {wheel.name})",
        "",
        f"- distributions installed: {len(names)} ({', '.join(names)})",
        f"- added to site-packages (du -sk of each new entry): {total / 1024:.1f} MiB",
        "- largest: " + ", ".join(f"{name} {size / 1024:.1f} MiB" for size, name in sizes[:6]),
        f"- `import bugcontext`: {imported - baseline:.0f} ms wall over the interpreter's start "
        f"({imported:.0f} ms against {baseline:.0f} ms for `python -c pass`); "
        f"-X importtime cumulative {cumulative / 1000:.0f} ms (medians of {rounds} rounds)",
        f"- `bugcontext build -` of a two-candidate input: {built:.0f} ms wall (median of {rounds} rounds)",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, default=None, help="the wheel to install (default: build one)")
    parser.add_argument(
        "--extras", default="", help="extras to install with it, e.g. context (default: none)"
    )
    parser.add_argument("--rounds", type=int, default=20, help="fresh processes per timing (default 20)")
    args = parser.parse_args(argv)
    wheel = args.wheel
    if wheel is None:
        wheel = build_wheel(Path(tempfile.mkdtemp(prefix="bugcontext-wheel-")))
    print(measure(wheel.resolve(), args.extras, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
