"""bugcontext's pytest plugin for a traced re-run (``-p _bugcontext_pytest``).

Around each test's run (setup, call and teardown) it names the test to the tracer
(``_bugcontext_trace.set_test``; the node id also goes into ``BUGCONTEXT_TRACE_TEST``, so
child processes started by the test are traced as part of it), and it records each test's
outcome from its reports: ``failed`` (a call that failed), ``error`` (a setup or teardown
that failed), ``skipped``, ``xfailed``, else ``passed``; and pytest's root folder, which
the node ids are relative to. Written for every Python from 3.6
and pytest from 3.0 on.
"""

import pytest

try:
    import _bugcontext_trace as _trace
except Exception:  # pragma: no cover - the plugin without the tracer does nothing
    _trace = None


def pytest_configure(config):
    if _trace is not None:
        root = getattr(config, "rootpath", None) or getattr(config, "rootdir", None)
        if root is not None:
            _trace.set_rootdir(str(root))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _trace is not None:
        _trace.set_test(item.nodeid)
    try:
        yield
    finally:
        if _trace is not None:
            _trace.set_test(None)


def pytest_runtest_logreport(report):
    if _trace is None:
        return
    if report.outcome == "failed":
        outcome = "failed" if report.when == "call" else "error"
    elif report.outcome == "skipped":
        outcome = "xfailed" if getattr(report, "wasxfail", None) is not None else "skipped"
    else:
        outcome = "passed" if report.when == "call" else None
    if outcome is not None:
        _trace.set_outcome(report.nodeid, outcome)
