"""Stack-frame shapes shared by the runner parsers, and the failure they build.

Every stack trace shape read here prints the innermost call first (Node, Java, Go, Rust);
:class:`~..reports.TestFailure` keeps Python's order (outermost call first within each
exception of a chain), so the parsers turn each trace around. Frames into dependencies are
dropped here: ``node_modules`` (and the system's ``/usr/share/nodejs``), Node's own modules
(``node:internal/...``, ``<anonymous>``), the Go module cache (``pkg/mod``) and Go's own
library (``.../go/src/...``, ``GOROOT``), Cargo's registry and git checkouts
(``.cargo/registry``, ``.cargo/git``), Rust's own library
(``/rustc/<hash>/library/...``, ``.rustup/toolchains``), and JVM classes of the JDK, the
test frameworks and the build tools (:data:`JAVA_DEPENDENCIES`).

Every pattern runs in time linear in the line it reads: the parsing is done with
``str`` methods where a regular expression would need backtracking.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

from bugcontext.job.sources.reports import (
    BEYOND_LINE,
    ChainLink,
    Frame,
    Relation,
    Status,
    TestFailure,
    _beyond,
    _clean_lines,
    _line_number,
)

__all__ = [
    "JAVA_DEPENDENCIES",
    "Segment",
    "build_failure",
    "clean_lines",
    "is_dependency_path",
    "java_frame",
    "node_frame",
    "split_location",
    "trace_segments",
]

clean_lines = _clean_lines

#: Java (JVM) classes whose frames are not the project's: the JDK, the test frameworks, the
#: build tools and common test libraries (a prefix of the fully qualified class name).
JAVA_DEPENDENCIES = (
    "java.",
    "javax.",
    "jdk.",
    "sun.",
    "com.sun.",
    "org.junit.",
    "junit.",
    "org.opentest4j.",
    "org.apache.maven.",
    "org.gradle.",
    "worker.org.gradle.",
    "org.hamcrest.",
    "org.assertj.",
    "org.testng.",
    "org.mockito.",
    "net.bytebuddy.",
    "kotlin.",
    "kotlinx.coroutines.",
    "scala.",
)

# Libraries a Linux distribution installs for every project (Debian's Node and Go packages).
_SYSTEM_LIBRARIES = ("/usr/share/nodejs/", "/usr/lib/nodejs/", "/usr/lib/node_modules/", "/usr/share/gocode/")
_GO_ROOT = re.compile(r"(?:^|/)(?:go(?:-[\d.]++)?|goroot)/src/")
_RUSTC = re.compile(r"^/rustc/[0-9a-f]++/")
# `[ERR_ASSERTION]`, `[Error]` after a JavaScript error's name.
_JS_CODE = re.compile(r" \[[\w ]++\]$")
_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_$][\w$.]*+(?: \[[\w ]++\])?+)(?::(?: (?P<message>.*))?)?$")


def is_dependency_path(path: str) -> bool:
    """Whether a frame's ``path`` (as printed) is code of a dependency or of the language's
    own library rather than of the project (see the module's docstring)."""
    if not path or path.startswith(("node:", "<")) or path in ("native", "internal"):
        return True
    unified = path.replace("\\", "/")
    parts = unified.split("/")
    if "node_modules" in parts or unified.startswith(_SYSTEM_LIBRARIES):
        return True
    if "/pkg/mod/" in unified or _GO_ROOT.search(unified) is not None:
        return True
    if ".cargo" in parts and ("registry" in parts or "git" in parts):
        return True
    return ".rustup" in parts or _RUSTC.match(unified) is not None


def split_location(location: str) -> tuple[str, str, str | None] | None:
    """``(path, line digits, column digits or None)`` of ``path:line:col`` or ``path:line``
    (a ``file://`` URL read as its path, percent escapes decoded); ``None`` when
    ``location`` is not one."""
    if location.startswith("file://"):
        location = unquote(location[len("file://") :])
    head, sep, last = location.rpartition(":")
    if not sep or not last.isdigit() or not last.isascii():
        return None
    path, sep, middle = head.rpartition(":")
    if sep and middle.isdigit() and middle.isascii() and path:
        return path, middle, last
    if not head:
        return None
    return head, last, None


def node_frame(line: str) -> tuple[str, str, str | None] | None:
    """``(path, line digits, function or None)`` of a V8 stack frame line: ``at fn
    (path:line:col)``, ``at path:line:col``, ``at async fn (file:///path:line:col)``; the
    TAP reporter's ``fn (path:line:col)`` without ``at`` is read by passing ``bare``
    lines through :func:`tap_frame`. ``None`` for another line."""
    text = line.strip()
    if not text.startswith("at "):
        return None
    return _v8_location(text[3:])


def tap_frame(line: str) -> tuple[str, str, str | None] | None:
    """A frame line of the ``stack`` block of Node's TAP reporter: a V8 frame without its
    ``at`` (``fn (path:line:col)`` or ``path:line:col``)."""
    return _v8_location(line.strip())


def _v8_location(text: str) -> tuple[str, str, str | None] | None:
    function: str | None = None
    if text.endswith(")"):
        open_at = text.rfind(" (")
        if open_at < 0:
            return None
        function, location = text[:open_at].strip(), text[open_at + 2 : -1]
        if function.startswith("async "):
            function = function[len("async ") :]
        if function.startswith("new "):
            function = function[len("new ") :]
    else:
        location = text
    if " " in location and not location.startswith("file://"):
        return None
    found = split_location(location)
    if found is None or found[2] is None:
        return None
    return found[0], found[1], function or None


def java_frame(line: str, *, bare: bool = False) -> tuple[str, str, str | None] | None:
    """``(path, line digits, method)`` of a JVM stack frame line ``at pkg.Class.method(File.java:12)``
    (a module prefix ``java.base/`` or ``app//`` dropped; ``Outer$Inner`` is in ``Outer``'s
    package): the path is the package path and the file name (``pkg/File.java``), which the
    repository's source roots end with. ``bare``: the ``at`` may be missing (the JUnit 5
    console launcher's ``=>`` traces). ``None`` for another line, a frame without a line
    (``Native Method``, ``Unknown Source``) or of a :data:`JAVA_DEPENDENCIES` class."""
    text = line.strip()
    if text.startswith("at "):
        text = text[3:].lstrip()
    elif not bare:
        return None
    if not text.endswith(")"):
        # Logback and others append the jar: `(File.java:12) ~[app.jar:1.0]`.
        close = text.rfind(") ")
        if close < 0 or not text.endswith("]"):
            return None
        text = text[: close + 1]
    open_at = text.find("(")
    if open_at <= 0:
        return None
    qualified, inside = text[:open_at], text[open_at + 1 : -1]
    if " " in qualified or "(" in inside:
        return None
    qualified = qualified.rpartition("/")[2]
    owner, dot, method = qualified.rpartition(".")
    if not dot or not owner or not method:
        return None
    if owner.startswith(JAVA_DEPENDENCIES):
        return None
    file_name, colon, digits = inside.rpartition(":")
    if not colon or not digits.isdigit() or not digits.isascii() or "." not in file_name:
        return None
    package = owner.rpartition(".")[0]
    path = f"{package.replace('.', '/')}/{file_name}" if package else file_name
    return path, digits, method


@dataclass
class Segment:
    """One exception of a trace as a parser reads it: its type and message, and its frames
    innermost first (as printed)."""

    exception_type: str | None = None
    message: str = ""
    frames: list[tuple[str, str, str | None]] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def exception_line(text: str) -> tuple[str, str] | None:
    """``(type, message)`` of an error line ``TypeError: x is undefined``,
    ``AssertionError [ERR_ASSERTION]: ...``, ``java.lang.IllegalStateException: boom``
    (the code in brackets dropped); ``None`` for another line."""
    match = _EXCEPTION.match(text.strip())
    if match is None:
        return None
    name = _JS_CODE.sub("", match["type"])
    tail = name.rsplit(".", 1)[-1]
    if not (tail.endswith(("Error", "Exception", "Failure", "Failed", "Throwable")) or tail == "Error"):
        return None
    return name, (match["message"] or "").strip()


def trace_segments(lines: Iterable[str]) -> list[Segment]:
    """The exceptions of a block of lines in any of the stack-trace shapes (V8, JVM with
    ``Caused by:``, Rust backtraces, Python tracebacks are read elsewhere), in printed order
    (the outer exception first, its causes after it); frames innermost first; lines that are
    neither frames nor error lines are the current exception's messages."""
    segments: list[Segment] = [Segment()]
    previous = ""
    for line in lines:
        stripped = line.strip()
        frame: tuple[str, str, str | None] | None = None
        if stripped.startswith("at ") and previous:
            # A Rust backtrace: `  3: crate::module::function` then `at ./src/lib.rs:12:9`.
            numbered = previous.split(": ", 1)
            found = split_location(stripped[3:])
            if len(numbered) == 2 and numbered[0].isdigit() and found is not None:
                frame = (found[0], found[1], numbered[1].strip())
        frame = frame or node_frame(line) or java_frame(line)
        if frame is not None:
            if not is_dependency_path(frame[0]):
                segments[-1].frames.append(frame)
            previous = stripped
            continue
        if stripped.startswith(("Caused by: ", "[cause]: ")) or stripped.startswith("cause: "):
            rest = stripped.split(": ", 1)[1]
            found_exception = exception_line(rest)
            segment = Segment(*(found_exception or (None, rest)))
            segments.append(segment)
        elif segments[-1].exception_type is None and not segments[-1].frames:
            found_exception = exception_line(stripped)
            if found_exception is not None:
                segments[-1].exception_type, segments[-1].message = found_exception
            elif stripped:
                segments[-1].messages.append(stripped)
        elif stripped and not segments[-1].frames:
            segments[-1].messages.append(stripped)
        previous = stripped
    return [s for s in segments if s.frames or s.exception_type or s.messages] or [Segment()]


def build_failure(
    name: str | None,
    segments: Sequence[Segment],
    *,
    test_id: str | None = None,
    status: Status = "failed",
    origin: str,
    message_lines: Sequence[str] = (),
    outer_first: bool = True,
) -> TestFailure:
    """The :class:`TestFailure` of one test's report: ``segments`` in printed order (with
    ``outer_first``, the outer exception first and its causes after it, as Java and Node
    print them: the chain is turned around so that the root cause comes first and the
    exception the test saw last); each segment's frames innermost first (turned around,
    outermost first). Frames past ``2**31 - 1`` go to ``beyond``; a line 0 is dropped."""
    ordered = list(reversed(segments)) if outer_first else list(segments)
    links: list[ChainLink] = []
    frames: list[Frame] = []
    beyond: list[Frame] = []
    for index, segment in enumerate(ordered):
        own: list[Frame] = []
        for path, digits, function in reversed(segment.frames):
            if _beyond(digits):
                beyond.append(Frame(path, BEYOND_LINE, function, index))
                continue
            number = _line_number(digits)
            if number is None:
                continue  # line 0: no line at all
            frame = Frame(path, number, function, index)
            if not own or own[-1] != frame:
                own.append(frame)
        frames.extend(own)
        relation: Relation | None = "cause" if index < len(ordered) - 1 else None
        links.append(ChainLink(index, segment.exception_type, segment.message, tuple(own), relation))
    final = ordered[-1] if ordered else Segment()
    lines = tuple(message_lines) or tuple(
        line
        for segment in ordered
        for line in ([segment.message] if segment.message else []) + segment.messages
    )
    message = final.message or (final.messages[0] if final.messages else "")
    return TestFailure(
        name,
        tuple(frames),
        final.exception_type,
        message,
        lines,
        test_id=test_id,
        status=status,
        chain=tuple(links),
        origin=origin,
        phase="call" if status == "failed" else None,
        beyond=tuple(dict.fromkeys(beyond)),
    )
