"""Candidate sources for a failing test in a real repository.

:func:`gather` reads a test log (pytest's, or another runner's: :mod:`.logs`) and a
repository folder and returns candidate windows from three sources, ready for ``bugcontext.build``:

* **failure** (:mod:`.failure`): the function around each traceback frame that lies in the
  repository; the deepest such frame's file is the failure file;
* **reference** (:mod:`.references`): definitions, found with tree-sitter (:mod:`.symbols`),
  of the symbols used on the failing lines and in the failing test, callers of the failing
  function, and the failing file's import graph;
* **search** (:mod:`.search`): function-level chunks of the repository ranked with BM25
  against the exception, its message and the test name.

Every window's ``content`` is exactly its lines of the file (line endings kept), and its
``path`` is repository-relative with ``/`` separators.
"""

from bugcontext.job.sources.failure import ProjectFrame, failure_windows, project_frames, resolve_frames
from bugcontext.job.sources.files import Repository, SourceFile
from bugcontext.job.sources.gather import Gathered, gather
from bugcontext.job.sources.logs import detect_format, parse_log
from bugcontext.job.sources.pytest_log import parse_pytest_log
from bugcontext.job.sources.references import (
    DefinitionIndex,
    names_on_line,
    reference_evidence,
    reference_windows,
)
from bugcontext.job.sources.reports import Frame, TestFailure, strip_ansi
from bugcontext.job.sources.runs import FailingTest, UnknownTestError
from bugcontext.job.sources.search import build_query, chunk_spans, search_windows, tokenize
from bugcontext.job.sources.symbols import Definition, Import, Reference, SymbolIndex
from bugcontext.job.sources.window import Window

__all__ = [
    "Definition",
    "DefinitionIndex",
    "FailingTest",
    "Frame",
    "Gathered",
    "Import",
    "ProjectFrame",
    "Reference",
    "Repository",
    "SourceFile",
    "SymbolIndex",
    "TestFailure",
    "UnknownTestError",
    "Window",
    "build_query",
    "chunk_spans",
    "detect_format",
    "failure_windows",
    "gather",
    "names_on_line",
    "parse_log",
    "parse_pytest_log",
    "project_frames",
    "reference_evidence",
    "reference_windows",
    "resolve_frames",
    "search_windows",
    "strip_ansi",
    "tokenize",
]
