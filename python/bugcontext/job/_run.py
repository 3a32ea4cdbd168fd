"""Running a command the way the MCP server runs a repository's tests, bounded in time and
output, leaving no process behind: shared by the MCP server's test runs
(:mod:`bugcontext.integrations.mcp_server`) and the traced re-run (:mod:`bugcontext.job.sources.rerun`).

:func:`run_bounded` starts the command in a process group of its own (a new session,
standard input the null device), on Linux under :data:`_REAPER`, a child subreaper that
kills every process the run left behind; the whole group is killed when the run ends, writes
more than its output limit, or reaches its time limit or the caller's deadline.
:func:`repository_python` is the rule for a repository's own interpreter.
"""

from __future__ import annotations

import os
import selectors
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bugcontext.core.errors import ScreenedError

if TYPE_CHECKING:
    # (imported where a run starts: the command line imports this module for RERUN_MODES)
    import subprocess

__all__ = [
    "RERUN_MODES",
    "DeadlineReached",
    "Finished",
    "OutputTooLarge",
    "RunError",
    "StartError",
    "TimedOut",
    "repository_python",
    "run_bounded",
]

#: What a re-run runs: the failing tests (``"failing"``), or every test of their files
#: (``"files"``: the passing tests too, for a spectrum). Here, with no optional import, for the
#: command line's parser (:mod:`bugcontext.job.sources.rerun` re-exports it).
RERUN_MODES = ("failing", "files")

_CHUNK = 1 << 16


class RunError(ScreenedError):
    """A bounded run did not finish by itself; ``output`` is what it wrote until then (the
    message is screened for secrets; ``output`` is the run's own bytes, as they came)."""

    def __init__(self, message: str, output: bytes = b"") -> None:
        super().__init__(message)
        self.output = output

    def __reduce__(self) -> tuple[type[RunError], tuple[str, bytes]]:
        return (type(self), (str(self), self.output))


class StartError(RunError):
    """The command could not be started (its message: the system's reason)."""


class TimedOut(RunError):
    """The run reached its own time limit (``seconds``) and was killed."""


class DeadlineReached(RunError):
    """The caller's deadline came before the run's own time limit; the run was killed."""


class OutputTooLarge(RunError):
    """The run wrote more than its output limit and was killed (``overflow="raise"``)."""


@dataclass(frozen=True)
class Finished:
    """A run that ended by itself: what it wrote (standard output and standard error, as
    they came; at most the output limit, ``truncated`` when more was written), its exit
    status (``128 + N`` for a signal ``N`` under the reaper, ``-N`` without) and its wall
    time in seconds."""

    output: bytes
    returncode: int
    seconds: float
    truncated: bool = False


def repository_python(root: Path) -> Path | None:
    """The ``bin/python`` of the repository ``root``'s own virtual environment, ``.venv``
    then ``venv`` (a folder with ``pyvenv.cfg`` inside the repository once links are
    resolved, whose ``bin/python`` is an executable file), or ``None``."""
    root = Path(os.path.realpath(root))
    for env in (".venv", "venv"):
        folder = Path(os.path.realpath(root / env))
        candidate = folder / "bin" / "python"
        if (
            folder.is_relative_to(root)  # the repository's own, not a link to another place
            and (folder / "pyvenv.cfg").is_file()  # a virtual environment
            and candidate.is_file()
            and os.access(candidate, os.X_OK)
        ):
            return candidate
    return None


#: The reaper a test run is started under on Linux (``python -c _REAPER FD COMMAND...``, the
#: caller's own interpreter; ``FD`` is where it writes why the command could not start): a
#: child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so that every process the run leaves
#: behind, in a session of its own or not, becomes its child; when the run ends, or on
#: SIGTERM, it kills every child it has, generation after generation (an orphan of a killed
#: process becomes its child in turn), reaps them, and exits with the run's status.
_REAPER = r"""
import ctypes, os, signal, subprocess, sys


def children():
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[-1].split()
            except OSError:
                continue
            if len(fields) > 1 and int(fields[1]) == me:
                found.append(int(name))
    return found


def reap():
    for _ in range(100000):
        found = children()
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in found:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass


def stop(signum, frame):
    reap()
    os._exit(128 + signum)


signal.signal(signal.SIGTERM, stop)
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:
    sys.exit(125)
report = int(sys.argv[1])
try:
    run = subprocess.Popen(sys.argv[2:])
except OSError as exc:
    os.write(report, (exc.strerror or type(exc).__name__).encode())
    sys.exit(127)
os.close(report)
code = run.wait()
reap()
sys.exit(code if code >= 0 else 128 - code)
"""


def _reaping() -> bool:
    """Whether a run goes under :data:`_REAPER`: where the system has child subreapers
    (Linux) and the server knows its interpreter. Elsewhere a process that leaves the run's
    process group (a session of its own) can outlive the run."""
    return sys.platform == "linux" and bool(sys.executable)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End the run ``process`` and everything it started: SIGTERM first (the reaper then
    kills every process the run left, wherever it went), then SIGKILL to its process group."""
    import subprocess

    if process.poll() is None:
        try:
            process.send_signal(signal.SIGTERM)
            process.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            pass
    _kill_group(process)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process``'s process group (the run and every child it started)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _start(
    full: list[str], cwd: str | os.PathLike[str], env: Mapping[str, str] | None
) -> subprocess.Popen[bytes]:
    """Start ``full`` in ``cwd`` in a session of its own, its output and errors on one pipe
    (under the reaper when there is one: :func:`_reaping`). Raises :class:`StartError`."""
    import subprocess

    failed = ""
    report_read, report_write = os.pipe() if _reaping() else (-1, -1)
    if report_write >= 0:
        full = [sys.executable, "-I", "-S", "-c", _REAPER, str(report_write), *full]
    process: subprocess.Popen[bytes] | None = None
    try:
        process = subprocess.Popen(
            full,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            pass_fds=(report_write,) if report_write >= 0 else (),
        )
    except OSError as exc:
        failed = exc.strerror or type(exc).__name__
    finally:
        if report_write >= 0:
            os.close(report_write)
    if report_read >= 0:
        with os.fdopen(report_read, "rb") as report:  # closed by the reaper once it started
            failed = failed or report.read(4096).decode("utf-8", errors="replace")
    if failed:
        if process is not None:
            _stop(process)
            if process.stdout is not None:
                process.stdout.close()
            process.wait()
        raise StartError(failed)
    assert process is not None
    return process


def _read_output(
    process: subprocess.Popen[bytes],
    stop: float,
    own: float,
    deadline: float | None,
    seconds: float,
    max_output: int,
    overflow: str,
) -> tuple[list[bytes], bool]:
    """The output of ``process`` until it ends (its chunks, and whether the rest was dropped
    past ``max_output`` bytes), read until ``stop`` (a ``time.monotonic()`` value: ``own``,
    the run's own time limit, or ``deadline``). Raises :class:`DeadlineReached`,
    :class:`TimedOut`, :class:`OutputTooLarge`; the caller stops the process."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    chunks: list[bytes] = []
    total = 0
    truncated = False
    ended = False
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            if not ended and process.poll() is not None:
                # The run is over: what it wrote stays in the pipe; a child it left
                # behind (which may hold the pipe open) is killed.
                ended = True
                _kill_group(process)
            left = stop - time.monotonic()
            if left <= 0:
                out = b"".join(chunks)
                if deadline is not None and deadline < own:
                    raise DeadlineReached("the deadline passed", out)
                raise TimedOut(f"the run took more than {seconds} seconds", out)
            if not selector.select(min(left, 0.5)):
                continue
            if truncated:  # (overflow="truncate": the rest is read and dropped)
                if not os.read(fd, _CHUNK):
                    break
                continue
            chunk = os.read(fd, min(_CHUNK, max_output + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_output:
                if overflow == "raise":
                    raise OutputTooLarge(f"more than {max_output} bytes of output", b"".join(chunks))
                truncated = True
                chunks[-1] = chunk[: len(chunk) - (total - max_output)]
                total = max_output
    return chunks, truncated


def run_bounded(
    command: Sequence[str],
    cwd: str | os.PathLike[str],
    *,
    seconds: float,
    max_output: int,
    deadline: float | None = None,
    env: Mapping[str, str] | None = None,
    overflow: str = "raise",
) -> Finished:
    """Run ``command`` in ``cwd`` (environment ``env``, default this process's) until it
    ends, at most ``seconds`` seconds and until ``deadline`` (a ``time.monotonic()`` value),
    reading at most ``max_output`` bytes of its output: past it the run is killed
    (``overflow="raise"``) or the rest is read and dropped (``"truncate"``:
    ``Finished.truncated``). See the module for how the run is confined.

    Raises:
        StartError: the command cannot be started.
        TimedOut: ``seconds`` passed (the output so far in ``output``).
        DeadlineReached: ``deadline`` came first.
        OutputTooLarge: more than ``max_output`` bytes with ``overflow="raise"``.
    """
    started = time.monotonic()
    own = started + seconds
    stop = own if deadline is None else min(own, deadline)
    process = _start([os.fspath(part) for part in command], cwd, env)
    assert process.stdout is not None
    try:
        chunks, truncated = _read_output(process, stop, own, deadline, seconds, max_output, overflow)
    finally:
        _stop(process)
        process.stdout.close()
        process.wait()
    code = process.returncode
    return Finished(b"".join(chunks), code, time.monotonic() - started, truncated)
