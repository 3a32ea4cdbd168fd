"""Start bugcontext's tracer in a Python process, then run the interpreter's own
``sitecustomize`` (the next one on ``sys.path``), if there is one.

This folder is put first on ``PYTHONPATH`` by a traced re-run
(``bugcontext.job.sources.rerun``); Python imports this module at start-up. The tracer starts
only when ``BUGCONTEXT_TRACE_DIR`` is set, so a child process that inherits the path but
not the variable runs untouched. Written for every Python from 3.6 on.
"""

import os
import sys


def _start():
    if not os.environ.get("BUGCONTEXT_TRACE_DIR"):
        return
    try:
        import _bugcontext_trace
    except Exception:  # the tracer never breaks the program it traces
        return
    _bugcontext_trace.start()


def _chain():
    """Import the ``sitecustomize`` this one hides (the next on ``sys.path``)."""
    here = os.path.dirname(os.path.abspath(__file__))
    me = sys.modules.get(__name__)
    saved = list(sys.path)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
        sys.modules.pop("sitecustomize", None)
        try:
            import sitecustomize  # noqa: F401  (the interpreter's or the project's own)
        except ImportError as exc:
            if getattr(exc, "name", None) != "sitecustomize":
                raise
    finally:
        added = [p for p in sys.path if p not in saved]
        sys.path[:] = saved + added
        if "sitecustomize" not in sys.modules and me is not None:
            sys.modules["sitecustomize"] = me


_start()
_chain()
