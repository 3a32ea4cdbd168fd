"""bugcontext's tracer: the lines and calls of repository code, per test, of one process.

Started by this folder's ``sitecustomize`` when ``BUGCONTEXT_TRACE_DIR`` is set. The
environment says what to do:

* ``BUGCONTEXT_TRACE_DIR``: the folder each traced process writes its record to, at exit
  (``trace-<pid>-<random>.json``);
* ``BUGCONTEXT_TRACE_ROOT``: the repository folder; only code in files under it (real
  paths), and not under the interpreter's prefixes nor in a ``site-packages`` or
  ``dist-packages`` folder, is recorded;
* ``BUGCONTEXT_TRACE_TEST``: the test running when the process started (set by the
  pytest plugin ``_bugcontext_pytest`` around each test, so a child process inherits it);
* ``BUGCONTEXT_TRACE_MAX_BYTES``: the most bytes the record may take.

For each test (``None``: code run outside a test, such as imports and collection) the
record holds the lines executed per repository-relative path and the call edges, each
``[caller path, caller first line, callee path, callee first line]`` (a code object's
``co_firstlineno``: the first decorator's line of a decorated function; ``0`` for a
module's own code), the caller being the nearest repository frame below the callee
(comprehensions and generator expressions count as the function they are in). With
``sys.monitoring`` (Python 3.12 and later) the events are ``PY_START`` (global) and
``LINE`` (set on repository code only); before, ``sys.settrace`` and ``threading.settrace``.

With ``sys.settrace``, another tracer that takes its place (coverage, a debugger) is seen
when the next test starts and said in the record (``"displaced"``). Written for every Python
from 3.6 on (no newer syntax); it never raises into the traced program.
"""

import atexit
import json
import os
import sys
import threading

VERSION = 1
_ENV_DIR = "BUGCONTEXT_TRACE_DIR"
_ENV_ROOT = "BUGCONTEXT_TRACE_ROOT"
_ENV_TEST = "BUGCONTEXT_TRACE_TEST"
_ENV_MAX = "BUGCONTEXT_TRACE_MAX_BYTES"
_INLINE = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "error": 2, "failed": 3}
_MAX_DEPTH = 64

_state = {"started": False, "error": None, "rootdir": None, "displaced": False}
_root = ""
_out = ""
_limit = 0
_test = None
_lines = {}  # test -> path -> set of lines
_edges = {}  # test -> set of (caller path, line, callee path, line)
_outcomes = {}  # node id -> outcome
_cur_lines = {}
_cur_edges = set()
_paths = {}  # co_filename -> repository-relative path, or None
_excluded = ()
_tool = None


def _relative(filename):
    """The repository-relative path of a code object's file name, or ``None``."""
    try:
        return _paths[filename]
    except KeyError:
        pass
    rel = None
    try:
        if filename and not filename.startswith("<"):
            real = os.path.realpath(filename)
            if real.startswith(_root + os.sep) and not any(
                real == ex or real.startswith(ex + os.sep) for ex in _excluded
            ):
                rel = real[len(_root) + 1 :].replace(os.sep, "/")
                parts = rel.split("/")
                if "site-packages" in parts or "dist-packages" in parts or "__pycache__" in parts:
                    rel = None
    except Exception:
        rel = None
    _paths[filename] = rel
    return rel


def _switch(test):
    global _test, _cur_lines, _cur_edges
    _test = test
    _cur_lines = _lines.setdefault(test, {})
    _cur_edges = _edges.setdefault(test, set())


def set_test(test):
    """Name the test now running (``None``: none); the node id also goes into the
    environment, for child processes."""
    if not _state["started"]:
        return
    _switch(test)
    if test is None:
        os.environ.pop(_ENV_TEST, None)
    else:
        os.environ[_ENV_TEST] = test
    if _tool is not None:
        try:
            sys.monitoring.restart_events()
        except Exception:
            pass
    elif sys.gettrace() is not _global:
        _state["displaced"] = True  # another tracer (coverage, a debugger) took its place


def set_rootdir(path):
    """Record pytest's root folder (the node ids are relative to it)."""
    _state["rootdir"] = path


def set_outcome(test, outcome):
    """Record a test's outcome; of several reports, the worst (failed, error, skipped or
    xfailed, passed)."""
    before = _outcomes.get(test)
    if before is None or _RANK.get(outcome, 0) > _RANK.get(before, 0):
        _outcomes[test] = outcome


def _caller(frame):
    """The repository function ``frame`` was called from: (path, first line), or ``None``."""
    depth = 0
    while frame is not None and depth < _MAX_DEPTH:
        code = frame.f_code
        rel = _relative(code.co_filename)
        if rel is not None and code.co_name not in _INLINE:
            return rel, (0 if code.co_name == "<module>" else code.co_firstlineno)
        frame = frame.f_back
        depth += 1
    return None


def _edge(code, rel, frame):
    if code.co_name in _INLINE:
        return
    found = _caller(frame)
    if found is not None:
        callee = 0 if code.co_name == "<module>" else code.co_firstlineno
        _cur_edges.add((found[0], found[1], rel, callee))


# -- sys.settrace (before Python 3.12) ---------------------------------------------------


def _local(frame, event, arg):
    if event == "line":
        rel = _paths.get(frame.f_code.co_filename)
        if rel is not None:
            lines = _cur_lines.get(rel)
            if lines is None:
                lines = _cur_lines[rel] = set()
            lines.add(frame.f_lineno)
    return _local


def _global(frame, event, arg):
    if event != "call":
        return None
    code = frame.f_code
    rel = _relative(code.co_filename)
    if rel is None:
        return None
    try:
        _edge(code, rel, frame.f_back)
    except Exception:
        pass
    return _local


# -- sys.monitoring (Python 3.12 and later) ----------------------------------------------


def _py_start(code, offset):
    rel = _relative(code.co_filename)
    if rel is None:
        return sys.monitoring.DISABLE
    try:
        sys.monitoring.set_local_events(_tool, code, sys.monitoring.events.LINE)
        frame = sys._getframe(1)
        if frame.f_code is code:
            _edge(code, rel, frame.f_back)
    except Exception:
        pass
    return None


def _line(code, line):
    rel = _paths.get(code.co_filename)
    if rel is not None:
        lines = _cur_lines.get(rel)
        if lines is None:
            lines = _cur_lines[rel] = set()
        lines.add(line)
    return sys.monitoring.DISABLE  # until the next test (restart_events)


def _start_monitoring():
    global _tool
    mon = sys.monitoring
    for tool in (4, 3, 2, 1, 5):
        if mon.get_tool(tool) is None:
            mon.use_tool_id(tool, "bugcontext")
            _tool = tool
            break
    else:
        raise RuntimeError("no free sys.monitoring tool id")
    mon.register_callback(_tool, mon.events.PY_START, _py_start)
    mon.register_callback(_tool, mon.events.LINE, _line)
    mon.set_events(_tool, mon.events.PY_START)


# -- start and write ---------------------------------------------------------------------


def _reset_after_fork():
    global _lines, _edges, _outcomes
    _lines, _edges, _outcomes = {}, {}, {}
    _switch(_test)


def start():
    """Start tracing this process (once), as the environment says; a record is written at
    exit. A failure to start is written as a record holding only ``"error"``."""
    global _root, _out, _limit, _excluded
    if _state["started"]:
        return
    try:
        _out = os.environ[_ENV_DIR]
        _root = os.path.realpath(os.environ.get(_ENV_ROOT) or os.getcwd())
        _limit = int(os.environ.get(_ENV_MAX) or 0)
        prefixes = set()
        for name in ("prefix", "base_prefix", "exec_prefix", "base_exec_prefix"):
            value = getattr(sys, name, None)
            if value:
                prefixes.add(os.path.realpath(value))
        here = os.path.dirname(os.path.realpath(__file__))
        prefixes.add(here)
        # A prefix that holds the repository (a system interpreter at /usr, the repository
        # under it) excludes nothing.
        _excluded = tuple(p for p in prefixes if not (_root == p or _root.startswith(p + os.sep)))
        _switch(os.environ.get(_ENV_TEST) or None)
        _state["started"] = True
        atexit.register(_write)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_reset_after_fork)
        if getattr(sys, "monitoring", None) is not None:
            _start_monitoring()
        else:
            threading.settrace(_global)
            sys.settrace(_global)
    except Exception as exc:
        _state["error"] = "%s: %s" % (type(exc).__name__, exc)
        _state["started"] = False
        _write()


def _record(with_edges, only_failing):
    runs = []
    keys = sorted(set(_lines) | set(_edges), key=lambda t: (t is not None, t or ""))
    for test in keys:
        if only_failing and test is not None and _outcomes.get(test) not in ("failed", "error"):
            continue
        lines = _lines.get(test, {})
        edges = _edges.get(test, set()) if with_edges else set()
        if not lines and not edges:
            continue
        runs.append(
            {
                "test": test,
                "lines": {path: sorted(found) for path, found in sorted(lines.items())},
                "edges": sorted(list(e) for e in edges),
            }
        )
    return runs


def _write():
    """Write this process's record (at exit), within the byte limit: without the call
    edges, then with the failing tests' runs only, then empty, saying ``"truncated"``."""
    try:
        if _tool is not None:
            sys.monitoring.set_events(_tool, 0)
        else:
            sys.settrace(None)
            threading.settrace(None)
    except Exception:
        pass
    try:
        base = {
            "version": VERSION,
            "pid": os.getpid(),
            "python": "%d.%d.%d" % sys.version_info[:3],
            "monitoring": _tool is not None,
            "error": _state["error"],
            "rootdir": _state["rootdir"],
            "displaced": _state["displaced"],
            "outcomes": dict(_outcomes),
            "truncated": None,
        }
        text = None
        for step, (edges, failing) in enumerate(((True, False), (False, False), (False, True))):
            data = dict(base, runs=_record(edges, failing))
            if step:
                data["truncated"] = "edges" if step == 1 else "passing runs"
            text = json.dumps(data, separators=(",", ":"))
            if not _limit or len(text) <= _limit:
                break
        else:
            data = dict(base, runs=[], truncated="everything")
            text = json.dumps(data, separators=(",", ":"))
        name = "trace-%d-%s.json" % (os.getpid(), os.urandom(4).hex())
        part = os.path.join(_out, name + ".part")
        with open(part, "w") as handle:
            handle.write(text)
        os.rename(part, os.path.join(_out, name))
    except Exception:
        pass
