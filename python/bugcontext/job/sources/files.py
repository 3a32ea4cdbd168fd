"""Reading a repository's files: the one gate every source goes through.

:class:`Repository` lists, locates and reads the files of a repository folder, and nothing of
the repository reaches a candidate except through it. Its rules:

* **Paths** are repository-relative, ``/``-separated and canonical: the real path of the
  file (symbolic links inside the repository resolved), in the form the build contract
  accepts (a file name with a backslash, say, is not used).
* **Symbolic links** that resolve outside the repository are refused, for files and
  folders alike; a link inside the repository that points inside it is read as the file it
  points to, under that file's own path. Walks never follow a link (each file is listed
  once, under its real path), so link cycles cannot loop.
* **Ignored files** are never read: the rules of every ``.gitignore`` (the root's and each
  folder's, deeper files taking precedence, negations honoured) and of
  ``.git/info/exclude``, matched with `pathspec <https://pypi.org/project/pathspec/>`_'s
  ``GitIgnoreSpec`` (git's own semantics); a file in an ignored folder cannot be
  re-included. Matching takes bounded time whatever the pattern: Python's backtracking
  ``re`` takes exponential time on a pattern such as ``*a*a*a*a*a*a*a*a*a*a*b`` against a
  long name of ``a`` letters, so each pattern whose regular expression (pathspec's
  translation) has more than two quantifiers, or more than one that spans folders, is
  matched by `RE2 <https://pypi.org/project/google-re2/>`_ instead, in time linear in the
  path's length; the usual patterns stay with ``re`` (faster per call from Python, and at
  most about path length times name length steps). A pattern RE2 cannot compile is left
  out, like one pathspec cannot. A lone surrogate in a path (an
  undecodable byte of the name) is matched as U+FFFD, as undecodable bytes of a
  ``.gitignore`` are read. ``.git`` itself is never read (only its ``info/exclude`` rules), nor are
  hidden folders, virtual environments, ``site-packages``, ``node_modules``,
  ``__pycache__`` and ``*.egg-info``.
* **Walking** is iterative (an explicit stack, not recursion), so a folder nested
  thousands deep is listed like any other.
* **Resource limits** (:class:`bugcontext.core.limits.Limits`, ``Repository(limits=...)``):
  a walk that visits more than ``max_files`` entries raises ``ResourceLimitError`` (an
  error: most likely the wrong folder); the rest are **skipped, not an error**, and recorded
  in :attr:`Repository.skipped` with the setting's name and value: a folder deeper than
  ``max_depth`` below the root is not entered (nor is a file in it read), a file over
  ``max_file_bytes`` is not read, a rules file (``.gitignore``, ``.git/info/exclude``) over
  ``max_gitignore_bytes`` or with more than ``max_gitignore_patterns`` lines is not applied,
  and a pattern longer than ``max_gitignore_pattern_chars`` is left out.
* **Binary** files (a NUL byte in the first :data:`BINARY_BLOCK` bytes) and files over
  ``max_file_bytes`` (default 1 MiB) are skipped (:attr:`Repository.skipped` says why).
* **Secrets** are never emitted. A file is *refused* (:attr:`Repository.refused` maps its
  path to the reason) when it is a secret by nature, by its name (:data:`SECRET_NAME`):
  ``.env*`` and ``*.env``, private keys and key stores (``*.pem``, ``*.key``, ``*.p12``,
  ``*.pfx``, ``*.p8``, ``*.jks``, ``*.keystore``, ``*.ppk``, ``id_rsa*``, ``id_dsa*``,
  ``id_ecdsa*``, ``id_ed25519*``), credential files (``.netrc``, ``_netrc``, ``.pgpass``,
  ``.git-credentials``, ``.htpasswd``, ``.boto``, ``.s3cfg``, ``.dockercfg``,
  ``.vault-token``, a file named ``credentials`` such as ``.aws/credentials``,
  ``credentials*.json``, ``client_secret*.json``, ``*.tfstate``, ``*.kdbx``), the command
  histories of shells and database clients (``.bash_history``, ``.zsh_history``,
  ``.mysql_history``, ``.psql_history``, any ``.*_history``, ``.history``, ``.zhistory``: the
  passwords typed on a command line, in forms no detector knows) or a package-manager configuration
  (``.npmrc``, ``.pypirc``, ``.yarnrc``, ``.yarnrc.yml``, ``pip.conf``, ``pip.ini``) that
  holds a token or password. A refused file still has a :class:`SourceFile` -- its line
  count and its syntax tree with every string constant blanked, its lines empty but for
  their endings -- so that the sources see its definitions and propose the windows they
  would take, and none of them leaves the reader, whatever the window's priority (it may be
  the failing file): :meth:`Repository.screen` turns every window of a refused file into a
  :class:`PolicyOmission`. Any other file in which :mod:`bugcontext.core.secrets` finds a
  secret (its rule set and families are documented there; found in time linear in the
  file's length) is *redacted*, not hidden: its lines hold each secret replaced by
  ``[REDACTED: kind]`` (line endings kept, so every line keeps its number) and
  :attr:`SourceFile.redactions` says where, so its windows still reach the context with
  the secret's value replaced; its ``digest`` (and so the windows' ``source_sha256`` and
  the build's verification) is still that of the file's own bytes.
* **Text** is UTF-8 with a BOM dropped; a Python file that declares another encoding
  (PEP 263) is read in that one, as Python reads it. Line endings are kept exactly
  (``\\r\\n`` stays ``\\r\\n``). Bytes that are not valid in the encoding are kept as lone
  surrogates (``surrogateescape``: every window still maps back to the file's exact bytes)
  and counted in :attr:`SourceFile.undecodable`, which marks the file.
* **Windows** are cut from one reading of the file (:meth:`SourceFile.window`, which clamps
  an end past the last line and says so), and :meth:`Repository.screen` checks every window
  against the file as it is when the candidates are final: a window whose content is no
  longer exactly its lines is withheld too.

Line numbers are 1-based and ranges closed, as in the build contract. A file's lines are
split the way Python's own tokenizer and tracebacks count them (``\\n``, ``\\r\\n`` and a
lone ``\\r`` end a line; form feeds and Unicode line separators do not), and each line
keeps its own line ending, so the text of lines ``start..end`` is exactly that stretch of
the file.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import io
import os
import re
import stat
import threading
import time
import tokenize
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import ClassVar, TypeVar

from bugcontext.core._extras import needs

with needs("context"):
    import re2
    from pathspec import GitIgnoreSpec
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from bugcontext.core._input import PathProblem, canonical_path
from bugcontext.core._io import resolved_folder
from bugcontext.core._writer import reads_output
from bugcontext.core.composer import WindowLike
from bugcontext.core.limits import DEFAULT_LIMITS, Limits, describe, limit_error, resolve
from bugcontext.core.secrets import find_secrets, redact

__all__ = [
    "BINARY_BLOCK",
    "MAX_FILE_BYTES",
    "SECRET_CONTENT",
    "SECRET_NAME",
    "SECRET_REDACTED_IN_FILE",
    "WINDOW_CHANGED",
    "WINDOW_UNREADABLE",
    "PolicyOmission",
    "Repository",
    "SourceFile",
    "decode_source",
    "enclosing_function",
    "node_span",
    "secret_in_text",
    "secret_name",
    "split_lines",
]

#: The default of ``Limits.max_file_bytes`` (:mod:`bugcontext.core.limits`, where it is set):
#: files larger than this many bytes (1 MiB) are not read (generated tables, vendored blobs);
#: ``Repository(root, max_file_bytes=...)`` or ``Repository(root, limits=...)`` changes it.
MAX_FILE_BYTES = DEFAULT_LIMITS.max_file_bytes

#: A file with a NUL byte in its first this many bytes is binary and not read.
BINARY_BLOCK = 8192

#: The reason a file is refused for its name (:data:`Repository.refused`).
SECRET_NAME = "policy: secret name"
#: The reason a file is refused for its content.
SECRET_CONTENT = "policy: secret content"
#: Why a secret's value was replaced in a file's lines (:attr:`SourceFile.redactions`).
SECRET_REDACTED_IN_FILE = "policy: secret in the file"
#: Why :meth:`Repository.screen` withholds a window whose file cannot be read through the
#: reader (outside the repository, ignored, binary, too large, gone) or whose path is not
#: the file's canonical path.
WINDOW_UNREADABLE = "policy: not a readable file of the repository"
#: Why :meth:`Repository.screen` withholds a window whose content is not its lines of the file.
WINDOW_CHANGED = "policy: content does not match the file"

# Folder names never entered when walking a repository (hidden folders are skipped too).
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_ENDING = re.compile(r"(?:\r\n|\r|\n)\Z")

# File names (compared in lower case) that are secrets whatever they hold.
_SECRET_NAMES = re.compile(
    r"""
    \.env.* | .+\.env                                   # environment files
    | .+\.(?:pem|key|p12|pfx|p8|jks|keystore|ppk|kdbx|tfstate|tfstate\.backup)
    | id_(?:rsa|dsa|ecdsa|ed25519).*                    # SSH keys
    | \.netrc | _netrc | \.pgpass | \.git-credentials | \.htpasswd
    | \.boto | \.s3cfg | \.dockercfg | \.vault-token
    | credentials | credentials.*\.json | client_secret.*\.json
    | \.[a-z0-9_-]*_history | \.z?history               # shells' and clients' histories
    """,
    re.VERBOSE,
)

# Package-manager configurations: secrets when they hold a token or password. Linear in the
# text: `^` anchors each try at a line start, and the one repetition that can backtrack (the
# key) gives back only key characters, at each of which the keyword's first letter fails or,
# after a keyword, the next character is a key character that no separator matches.
_CREDENTIAL_CONFIGS = frozenset({".npmrc", ".pypirc", ".yarnrc", ".yarnrc.yml", "pip.conf", "pip.ini"})
_CREDENTIAL_ENTRY = re.compile(
    r"^[ \t]*[\w./:@-]*(?:authtoken|_auth|_password|password|token)[ \t\"']*[=:][ \t\"']*[^\s\"']",
    re.IGNORECASE | re.MULTILINE,
)


def split_lines(text: str) -> tuple[str, ...]:
    """Split ``text`` into lines, each keeping its line ending.

    ``"".join(split_lines(text)) == text`` always holds. Only ``\\n``, ``\\r\\n`` and ``\\r``
    end a line (as for Python's tokenizer), unlike ``str.splitlines``.
    """
    return tuple(_LINE.findall(text))


def decode_source(data: bytes) -> str:
    """Decode a Python file's bytes the way Python reads source, with the BOM dropped.

    The encoding is UTF-8 unless a PEP 263 coding cookie names another. Bytes that are
    invalid in that encoding become lone surrogates (``surrogateescape``), so decoding
    never fails and the text still maps back to the file's bytes.
    """
    return _decode(data, python=True)[0]


def _decode(data: bytes, *, python: bool) -> tuple[str, int]:
    """``data`` as text (see :func:`decode_source`; a coding cookie counts only when
    ``python``) and the number of bytes that were not valid in the encoding."""
    encoding = "utf-8-sig"
    if python:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError:  # unknown codec named by a cookie, or a BOM that contradicts it
            encoding = "utf-8-sig"
    try:
        return data.decode(encoding), 0
    except (LookupError, UnicodeError):
        pass
    try:
        text = data.decode(encoding, errors="surrogateescape")
    except (LookupError, UnicodeError):  # codecs without surrogateescape support
        text = data.decode("utf-8-sig", errors="surrogateescape")
    return text, sum(1 for ch in text if "\udc80" <= ch <= "\udcff")


def secret_name(path: str) -> bool:
    """Whether the file name of ``path`` (repository-relative) is that of a secret, whatever
    the file holds (package-manager configurations are judged by :func:`secret_in_text`)."""
    name = path.rsplit("/", 1)[-1].lower()
    return _SECRET_NAMES.fullmatch(name) is not None


def secret_in_text(path: str, text: str) -> str | None:
    """Why the file at ``path`` with content ``text`` is a secret (:data:`SECRET_NAME` for
    a package-manager configuration holding a token or password, :data:`SECRET_CONTENT` for
    a secret of any kind of :data:`bugcontext.core.secrets.KINDS` anywhere in it), or ``None``.
    Linear in ``len(text)``."""
    name = path.rsplit("/", 1)[-1].lower()
    if name in _CREDENTIAL_CONFIGS and _CREDENTIAL_ENTRY.search(text):
        return SECRET_NAME
    return SECRET_CONTENT if find_secrets(text) else None


def node_span(node: ast.stmt) -> tuple[int, int]:
    """The closed line range ``(start, end)`` of a statement, decorators included."""
    start = node.lineno
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    for decorator in decorators:
        start = min(start, decorator.lineno)
    end = node.end_lineno if node.end_lineno is not None else node.lineno
    return start, end


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def walk_around(tree: ast.AST, line: int) -> Iterator[ast.AST]:
    """The nodes of ``tree`` in ``ast.walk`` order, leaving out every node (and its
    descendants) whose line range, decorators included, does not contain ``line``: a
    descendant lies within its ancestor's range, so no node containing ``line`` is lost."""
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        start = getattr(node, "lineno", None)
        if start is not None:
            end = getattr(node, "end_lineno", None) or start
            for decorator in getattr(node, "decorator_list", ()):
                start = min(start, decorator.lineno)
            if not start <= line <= end:
                continue
        todo.extend(ast.iter_child_nodes(node))
        yield node


def enclosing_function(tree: ast.Module, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost ``def`` (or ``async def``) whose span contains ``line``, else ``None``.

    Lambdas are not functions here: a frame inside a lambda maps to the ``def`` around it.
    """
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    best_size = 0
    for node in walk_around(tree, line):
        if isinstance(node, _FUNCTIONS):
            start, end = node_span(node)
            if start <= line <= end and (best is None or end - start < best_size):
                best, best_size = node, end - start
    return best


@dataclass(frozen=True)
class SourceFile:
    """One file of the repository, as read once.

    ``path`` is repository-relative with ``/`` separators (the file's canonical path);
    ``lines`` hold the decoded text line by line (``lines[0]`` is line 1) with line endings
    kept; ``python`` says whether it is a ``.py``/``.pyi`` file; :attr:`tree` is its parsed
    module (parsed with ``ast`` on first use, once), or ``None`` when the file is not Python
    or not valid Python for this interpreter.

    ``refused`` is ``None``, or the policy reason (:data:`SECRET_NAME`) the file's text is
    withheld for: then every line is empty but for its line ending and string constants in
    ``tree`` are blanked, so the file's shape (line count, definitions, names) is known to
    the sources and its secrets are not; :meth:`Repository.screen` withholds every window of
    it. ``redactions`` lists the secrets found in a file that is not refused, each
    ``(first_line, last_line, kind)`` (1-based, closed, in order): in ``lines`` (and in
    ``tree``, parsed from them) each one's value is replaced by ``[REDACTED: kind]``.
    ``undecodable`` counts the bytes that were not valid in the file's encoding (kept as
    lone surrogates); ``digest`` is the SHA-256 of the bytes read (the file's own bytes,
    before any redaction).
    """

    path: str
    lines: tuple[str, ...]
    python: bool = False
    refused: str | None = None
    undecodable: int = 0
    digest: str = field(default="", repr=False)
    redactions: tuple[tuple[int, int, str], ...] = ()

    @property
    def tree(self) -> ast.Module | None:
        """The parsed module (``ast.parse`` of :attr:`lines`, on first use), or ``None`` when
        the file is not Python or does not parse; a refused file's was parsed from its text
        as read, string constants blanked."""
        try:
            return self.__dict__["_tree"]  # type: ignore[no-any-return]
        except KeyError:
            tree = _parse("".join(self.lines)) if self.python else None
            self.__dict__["_tree"] = tree
            return tree

    def parsed(self) -> bool:
        """Whether :attr:`tree` has been made already."""
        return "_tree" in self.__dict__

    def redactions_in(self, start: int, end: int) -> tuple[tuple[int, int, str], ...]:
        """The :attr:`redactions` that touch lines ``start..end`` (1-based, closed)."""
        return tuple(r for r in self.redactions if r[0] <= end and r[1] >= start)

    @property
    def line_count(self) -> int:
        """Number of lines in the file."""
        return len(self.lines)

    def text(self, start: int, end: int) -> str:
        """Exactly lines ``start..end`` (1-based, closed) of the file, line endings kept.

        Raises ``ValueError`` if the range is empty or outside the file.
        """
        if not 1 <= start <= end <= len(self.lines):
            raise ValueError(f"{self.path}: lines {start}-{end} outside 1-{len(self.lines)}")
        return "".join(self.lines[start - 1 : end])

    def window(self, start: int, end: int) -> tuple[str, int]:
        """``(content, end)``: the text of lines ``start..end``, with an ``end`` past the
        last line clamped to it (the returned ``end``; compare it with the one asked for to
        record the clamp).

        Raises ``ValueError`` if ``start`` is not a line of the file or ``end < start``.
        """
        if not 1 <= start <= len(self.lines) or end < start:
            raise ValueError(f"{self.path}: window {start}-{end} does not start in 1-{len(self.lines)}")
        end = min(end, len(self.lines))
        return "".join(self.lines[start - 1 : end]), end

    def matches(self, start: int, end: int, content: str) -> bool:
        """Whether ``content`` is exactly lines ``start..end`` of the file."""
        return 1 <= start <= end <= len(self.lines) and "".join(self.lines[start - 1 : end]) == content

    def clamp(self, start: int, end: int) -> tuple[int, int]:
        """``(start, end)`` clipped to the file's lines (the file must have a line)."""
        last = max(len(self.lines), 1)
        return max(1, min(start, last)), max(1, min(end, last))


@dataclass(frozen=True)
class PolicyOmission:
    """A window the sources would have taken and the reader withheld.

    Lines ``start..end`` of ``path``, from the source ``source`` (``"failure"``,
    ``"reference"`` or ``"search"``); ``why`` is the policy that withheld it
    (:data:`SECRET_NAME`, :data:`SECRET_CONTENT`, :data:`WINDOW_UNREADABLE`,
    :data:`WINDOW_CHANGED`). Its omission reason is always ``"policy"``: no priority
    overrides it.
    """

    path: str
    start: int
    end: int
    source: str
    why: str

    reason: ClassVar[str] = "policy"

    def to_dict(self) -> dict[str, object]:
        """The JSON form: ``path``, ``start``, ``end``, ``source``, ``reason`` (``"policy"``)
        and ``why``."""
        return {
            "path": self.path,
            "start": self.start,
            "end": self.end,
            "source": self.source,
            "reason": self.reason,
            "why": self.why,
        }


_W = TypeVar("_W", bound=WindowLike)


@dataclass
class Repository:
    """A folder of source code, read lazily and cached, through the rules of the module
    docstring.

    ``root`` is the repository folder; ``max_file_bytes`` the largest file read (default
    ``limits.max_file_bytes``; given, it overrides ``limits``); ``gitignore`` whether
    ``.gitignore`` and ``.git/info/exclude`` rules apply (default yes); ``limits`` the resource
    limits (:class:`bugcontext.core.limits.Limits`, default ``DEFAULT_LIMITS``; kept, with
    ``max_file_bytes`` in it, as :attr:`resource_limits`).
    ``refused`` maps the path of every file refused so far to the policy reason
    (:data:`SECRET_NAME`; :data:`SECRET_CONTENT` only for a file whose redaction would not
    keep its lines); ``skipped`` maps files not read for
    another reason (binary, too large, not a regular file), folders not entered (deeper than
    ``max_depth``) and rules files not applied in full (over a ``.gitignore`` limit) to a short
    explanation.

    Raises ``NotADirectoryError`` if ``root`` is not a folder, ``InvalidInputError`` (field
    ``repo``) for a ``root`` of another type, with a NUL character, or that the system refuses
    (a name too long, a loop of links: :func:`bugcontext.core._io.resolved_folder`);
    :meth:`files` (and everything that lists the repository) raises ``ResourceLimitError``
    (``field`` ``"repo"``, ``limit`` ``"max_files"``) for a walk over ``max_files`` entries.
    """

    root: Path
    max_file_bytes: int = -1
    gitignore: bool = True
    limits: InitVar[Limits | None] = None
    resource_limits: Limits = field(default=DEFAULT_LIMITS, init=False, repr=False)
    refused: dict[str, str] = field(default_factory=dict, init=False)
    skipped: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    _files: dict[str, SourceFile | None] = field(default_factory=dict, init=False, repr=False)
    _relative: dict[str, str | None] = field(default_factory=dict, init=False, repr=False)
    _dirs: dict[str, bool] = field(default_factory=dict, init=False, repr=False)
    _specs: dict[str, GitIgnoreSpec | None] = field(default_factory=dict, init=False, repr=False)
    _chains: dict[str, tuple[tuple[str, GitIgnoreSpec], ...]] = field(
        default_factory=dict, init=False, repr=False
    )
    _listed: dict[tuple[str, ...] | None, list[str]] = field(default_factory=dict, init=False, repr=False)
    _root_text: str = field(default="", init=False, repr=False)
    #: The folders' listings kept between walks (see :meth:`_listing`); ``None``: each walk
    #: lists every folder.
    folders: dict[str, tuple[tuple[int, int, int, int], int, list[tuple[str, str]]]] | None = field(
        default=None, init=False, repr=False
    )

    def __post_init__(self, limits: Limits | None) -> None:
        chosen = resolve(limits)
        if self.max_file_bytes == -1:  # not given: the limits' own
            self.max_file_bytes = chosen.max_file_bytes
        elif self.max_file_bytes != chosen.max_file_bytes:
            chosen = chosen.replace(max_file_bytes=self.max_file_bytes)
        self.resource_limits = chosen
        self.root = resolved_folder("repo", self.root)
        self._root_text = os.fspath(self.root)

    # --- locating -------------------------------------------------------------------------

    def relative(self, path: str) -> str | None:
        """The repository-relative canonical path of the file ``path`` names, if the reader
        may read it.

        A relative ``path`` is taken relative to ``root``. Returns ``None`` for files
        outside the repository (after resolving symbolic links and ``..``), in a skipped
        folder (``.git``, a hidden folder, a virtual environment, ``site-packages``, ...),
        ignored by a ``.gitignore`` or ``.git/info/exclude`` rule, for paths the build
        contract rejects, for pseudo-files such as ``<frozen importlib._bootstrap>`` and for
        files that do not exist. A secret file has a path: :meth:`source` refuses it.
        """
        if path in self._relative:
            return self._relative[path]
        found = self._locate(path)
        self._relative[path] = found
        return found

    def _locate(self, path: str) -> str | None:
        if not path or path.startswith("<"):
            return None
        try:
            candidate = Path(path)
            if not candidate.is_absolute():
                candidate = self.root / candidate
            resolved = candidate.resolve()
            rel = resolved.relative_to(self.root).as_posix()
            if not resolved.is_file():
                return None
        except (OSError, RuntimeError, ValueError):  # a link loop, a NUL, outside the root
            return None
        if rel == "." or not _usable(rel) or self._excluded_file(rel):
            return None
        return rel

    def _excluded_file(self, rel: str) -> bool:
        """Whether the file ``rel`` is in a skipped or ignored folder, or is ignored itself."""
        parent, _, name = rel.rpartition("/")
        if name == ".git" or (parent and self._excluded_dir(parent)):
            return True
        return self._ignored(rel, is_dir=False)

    def _excluded_dir(self, rel: str) -> bool:
        """Whether the folder ``rel`` (or a folder above it) is skipped or ignored."""
        cached = self._dirs.get(rel)
        if cached is not None:
            return cached
        parent = rel.rpartition("/")[0]
        above = self._dirs.get(parent) if parent else False
        if above is not None:  # the folders above are known (a walk's usual case)
            verdict = self._dir_verdict(rel, rel.count("/") + 1, above)
            self._dirs[rel] = verdict
            return verdict
        # From the top down, without recursion: a folder is excluded if its parent is, or if
        # it is deeper than max_depth (skipped, recorded; its folders are not looked at).
        parts = rel.split("/")
        excluded = False
        here = ""
        for depth, name in enumerate(parts, 1):
            here = f"{here}/{name}" if here else name
            known = self._dirs.get(here)
            if known is None:
                known = self._dir_verdict(here, depth, excluded)
                self._dirs[here] = known
            excluded = known
        return excluded

    def _dir_verdict(self, here: str, depth: int, excluded: bool) -> bool:
        """Whether the folder ``here`` (at ``depth``) is excluded, its parent being
        ``excluded`` or not: deeper than ``max_depth`` (recorded in :attr:`skipped`), a
        skipped folder, or ignored."""
        deepest = self.resource_limits.max_depth
        if not excluded and depth > deepest:
            self.skipped[here] = describe("max_depth", "the folder's depth", depth, deepest)
            return True
        name = here.rpartition("/")[2]
        return excluded or _skipped_dir(name, f"{self._root_text}/{here}") or self._ignored(here, is_dir=True)

    def _ignored(self, rel: str, *, is_dir: bool) -> bool:
        """Whether ``rel`` itself matches the ignore rules (its folders are checked apart):
        the deepest ``.gitignore`` with a matching pattern decides (its last matching
        pattern, a negation re-including), then ``.git/info/exclude``."""
        if not self.gitignore:
            return False
        chain = self._rules_above(rel.rpartition("/")[0])
        if not chain and self._spec(None) is None:  # no rules apply here
            return False
        matched = _SURROGATE.sub("\ufffd", rel) + ("/" if is_dir else "")
        for folder, spec in reversed(chain):
            verdict = spec.check_file(matched[len(folder) + 1 :] if folder else matched).include
            if verdict is not None:
                return verdict
        exclude = self._spec(None)
        if exclude is not None:
            return exclude.check_file(matched).include is True
        return False

    def _rules_above(self, folder: str) -> tuple[tuple[str, GitIgnoreSpec], ...]:
        """The ``.gitignore`` rules of ``folder`` and of each folder above it, the root's
        first, as ``(folder, spec)`` (folders without rules left out). Computed without
        recursion and cached per folder, so a deep tree costs one lookup per folder."""
        if folder in self._chains:
            return self._chains[folder]
        parts = folder.split("/") if folder else []
        chain: tuple[tuple[str, GitIgnoreSpec], ...] = ()
        for depth in range(len(parts) + 1):
            here = "/".join(parts[:depth])
            known = self._chains.get(here)
            if known is None:
                spec = self._spec(here)
                known = (*chain, (here, spec)) if spec is not None else chain
                self._chains[here] = known
            chain = known
        return chain

    def _spec(self, folder: str | None) -> GitIgnoreSpec | None:
        """The rules of ``folder``'s ``.gitignore`` (``""``: the root's; ``None``:
        ``.git/info/exclude``), or ``None`` without any. Like git, a rules file that is a
        symbolic link is not read."""
        key = "\x00exclude" if folder is None else folder
        if key in self._specs:
            return self._specs[key]
        if folder is None:
            git = self.root / ".git"
            rel = ".git/info/exclude"
            rules = git / "info" / "exclude" if git.is_dir() and not git.is_symlink() else None
        else:
            rel = f"{folder}/.gitignore" if folder else ".gitignore"
            rules = self.root / rel
        spec = None
        if rules is not None:
            spec, note = _read_rules(rules, self.resource_limits)
            if note is not None:
                self.skipped[rel] = note
        self._specs[key] = spec
        return spec

    def reads_output(self, path: str | os.PathLike[str]) -> bool:
        """Whether the output ``path`` is an existing file this reader reads (links resolved:
        :meth:`relative` finds it), or a hard link to one of :meth:`files` (device and inode):
        an output there would replace or grow an input
        (:func:`bugcontext.core._writer.reads_output`)."""
        return reads_output(
            path,
            lambda real: self.relative(real) is not None,
            lambda: (self.root / rel for rel in self.files()),
        )

    # --- listing --------------------------------------------------------------------------

    def files(self, suffixes: Iterable[str] | None = None) -> list[str]:
        """Repository-relative paths of the repository's files, sorted: every regular file
        (not a symbolic link: a link inside the repository is listed as the file it points
        to) outside skipped and ignored folders, not ignored itself, whose path the build
        contract accepts; only names ending with one of ``suffixes`` (case-insensitive, e.g.
        ``(".py", ".js")``) if given. Files are not read: :meth:`source` may still skip or
        refuse one."""
        key = None if suffixes is None else tuple(sorted({s.lower() for s in suffixes}))
        if key not in self._listed:
            self._listed[key] = sorted(self._walk(key))
        return list(self._listed[key])

    def python_files(self) -> list[str]:
        """Repository-relative paths of every ``.py`` file (see :meth:`files`), sorted."""
        return self.files((".py",))

    def python_sources(self) -> Iterator[SourceFile]:
        """Every readable ``.py`` file of the repository, in path order (refused files
        included: their text is withheld, see :class:`SourceFile`)."""
        return self.sources((".py",))

    def sources(self, suffixes: Iterable[str] | None = None) -> Iterator[SourceFile]:
        """Every readable file of :meth:`files` ``(suffixes)``, in path order."""
        for rel in self.files(suffixes):
            source = self.source(rel)
            if source is not None:
                yield source

    def _walk(self, suffixes: tuple[str, ...] | None) -> Iterator[str]:
        """The files under ``root`` (see :meth:`files`), in no particular order: an
        iterative walk with an explicit stack of folders, which never follows a link."""
        stack = [""]
        most = self.resource_limits.max_files
        seen = 0
        top = self._root_text
        while stack:
            base = stack.pop()
            prefix = base + "/" if base else ""
            listed, seen = self._listing(base, f"{top}/{base}" if base else top, seen, most)
            if listed is None:  # gone, or not readable
                continue
            if self.gitignore and base not in self._specs and all(n.casefold() != _RULES for n, _ in listed):
                # The folder has no rules file (as listed; any case, for a file system that
                # ignores it): it is not looked for again.
                self._specs[base] = None
            for name, kind in listed:
                # (``prefix`` is a usable path and ``name`` a folder entry's name: their join
                # is usable unless the name holds a backslash or a NUL; see _usable.)
                if kind == "link" or "\\" in name or "\x00" in name:
                    continue
                rel = prefix + name
                if kind == "dir":
                    if not self._excluded_dir(rel):
                        stack.append(rel)
                elif name != ".git" and (suffixes is None or name.lower().endswith(suffixes)):
                    if not self._ignored(rel, is_dir=False):
                        yield rel

    def _listing(
        self, base: str, path: str, seen: int, most: int
    ) -> tuple[list[tuple[str, str]] | None, int]:
        """The entries ``(name, kind)`` of the folder ``base`` (at ``path``), or ``None`` if it
        cannot be listed, and the count of entries seen in the walk so far. With
        :attr:`folders` (a workspace's, kept between calls), a folder whose stat (device,
        inode, modification and change time) is the one it had when listed, and was not
        within :data:`FOLDER_AMBIGUOUS_NS` of that time, gives its kept entries: adding,
        removing or renaming an entry changes a folder's modification time."""
        folders = self.folders
        key: tuple[int, int, int, int] | None = None
        stamp = 0
        if folders is not None:
            stamp = time.time_ns()
            try:
                st = os.stat(path, follow_symlinks=False)
                key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
            except (OSError, ValueError):
                key = None
            kept = folders.get(base)
            if key is not None and kept is not None and kept[0] == key:
                if max(key[2], key[3]) < kept[1] - FOLDER_AMBIGUOUS_NS:
                    if seen + len(kept[2]) > most:
                        raise limit_error(
                            "repo", "max_files", "the walk of the repository", most + 1, most, exact=False
                        )
                    return kept[2], seen + len(kept[2])
        listed = []
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    seen += 1
                    if seen > most:  # before the entry is kept or looked at
                        raise limit_error(
                            "repo", "max_files", "the walk of the repository", seen, most, exact=False
                        )
                    listed.append((entry.name, _kind(entry)))
        except OSError:
            if folders is not None:
                folders.pop(base, None)
            return None, seen
        if folders is not None and key is not None:
            folders[base] = (key, stamp, listed)
        return listed, seen

    # --- reading --------------------------------------------------------------------------

    def source(self, path: str) -> SourceFile | None:
        """The file ``path`` names (see :meth:`relative`), read once through the rules, or
        ``None`` if it may not or cannot be read (outside, ignored, binary, too large, gone).

        A refused secret file gives a :class:`SourceFile` with ``refused`` set and no text.
        ``.py`` and ``.pyi`` files are also parsed with ``ast``.
        """
        rel = self.relative(path)
        if rel is None:
            return None
        if rel not in self._files:
            self._files[rel] = self._load(rel)
        return self._files[rel]

    def _load(self, rel: str) -> SourceFile | None:
        named = secret_name(rel)
        if named:
            self.refused[rel] = SECRET_NAME
        data = self._read(rel)
        if data is None:
            return None
        if b"\x00" in data[:BINARY_BLOCK]:
            if not named:
                self.skipped[rel] = "binary"
            return None
        python = rel.endswith((".py", ".pyi"))
        text, undecodable = _decode(data, python=python)
        refused = SECRET_NAME if named else secret_in_text(rel, text)
        lines = split_lines(text)
        redactions: tuple[tuple[int, int, str], ...] = ()
        if refused == SECRET_CONTENT:
            redacted = _redacted_lines(lines, text)
            if redacted is not None:
                # A secret in the content: its value is replaced, the file is not withheld.
                refused = None
                lines, redactions = redacted
                text = "".join(lines)
        tree = None
        if refused is not None:
            self.refused[rel] = refused
            lines = _withheld_lines(lines, text, refused)
            # The shape of a withheld file comes from its text as read, parsed now.
            tree = _blank_strings(_parse(text) if python else None)
        else:
            self.refused.pop(rel, None)
        self.skipped.pop(rel, None)
        digest = hashlib.sha256(data).hexdigest()
        source = SourceFile(
            rel, lines, python, refused=refused, undecodable=undecodable, digest=digest, redactions=redactions
        )
        if refused is not None:
            source.__dict__["_tree"] = tree
        return source

    def _read(self, rel: str) -> bytes | None:
        """The bytes of the regular file ``rel`` (a canonical path: no link on the way), or
        ``None``, with the reason in :attr:`skipped`."""
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self.root / rel, flags)
        except OSError:
            self.skipped[rel] = "cannot be opened"
            return None
        with os.fdopen(fd, "rb") as handle:
            try:
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode):
                    self.skipped[rel] = "not a regular file"
                    return None
                data = handle.read(self.max_file_bytes + 1) if info.st_size <= self.max_file_bytes else None
            except OSError:
                self.skipped[rel] = "cannot be read"
                return None
        if data is None or len(data) > self.max_file_bytes:
            size = info.st_size if data is None else len(data)
            words = describe("max_file_bytes", "the file", size, self.max_file_bytes, exact=data is None)
            self.skipped[rel] = words
            return None
        return data

    # --- checking -------------------------------------------------------------------------

    def screen(self, windows: Iterable[_W]) -> tuple[list[_W], list[PolicyOmission]]:
        """Split ``windows`` (anything with ``path``, ``start``, ``end``, ``content`` and
        ``reason``) into those that may leave the reader, in their order, and the
        :class:`PolicyOmission` of each one that may not.

        Each file is read again, once per call, and every window is checked against it: a
        window is withheld if its file is refused (a secret: the file's reason), if its path
        is not the canonical path of a readable file of the repository
        (:data:`WINDOW_UNREADABLE`), or if its content is not exactly its lines of the file
        as read now (:data:`WINDOW_CHANGED`). Reading again refreshes the cache, so
        :attr:`refused` reflects the files as they are now.
        """
        fresh: dict[str, SourceFile | None] = {}
        kept: list[_W] = []
        withheld: list[PolicyOmission] = []
        for window in windows:
            path = window.path
            if path not in fresh:
                fresh[path] = self._reread(path)
            source = fresh[path]
            if source is None:
                why: str | None = self.refused.get(path, WINDOW_UNREADABLE)
            elif source.refused is not None:
                why = source.refused
            elif not source.matches(window.start, window.end, window.content):
                why = WINDOW_CHANGED
            else:
                why = None
            if why is None:
                kept.append(window)
            else:
                withheld.append(PolicyOmission(path, window.start, window.end, str(window.reason), why))
        return kept, withheld

    def _reread(self, path: str) -> SourceFile | None:
        """The file at the canonical path ``path`` read again (``None`` if ``path`` is not
        canonical or the file cannot be read); the cache keeps the new reading."""
        if self.relative(path) != path:
            return None
        cached = self._files.get(path)
        loaded = self._load(path)
        if cached is not None and loaded is not None and cached.digest == loaded.digest:
            loaded = cached
        self._files[path] = loaded
        return loaded


def _kind(entry: os.DirEntry[str]) -> str:
    """``"link"``, ``"dir"`` or ``"file"`` (anything else that is not a link) for a folder
    entry, without following links."""
    try:
        if entry.is_symlink():
            return "link"
        return "dir" if entry.is_dir(follow_symlinks=False) else "file"
    except OSError:
        return "link"  # cannot be examined: not walked into, not listed


def _skipped_dir(name: str, path: str) -> bool:
    """Whether the folder ``name`` at ``path`` is skipped: hidden, a cache, packages or
    build metadata, or a virtual environment (it holds a ``pyvenv.cfg`` file)."""
    return (
        name.startswith(".")
        or name in _SKIPPED_DIRS
        or name.endswith(".egg-info")
        or os.path.isfile(f"{path}/pyvenv.cfg")
    )


#: A folder modified or changed within this many nanoseconds (2 s) of the time it was listed
#: may have changed again in the same timestamp tick: it is listed again (as the workspace
#: does for files, ``AMBIGUOUS_NS``).
FOLDER_AMBIGUOUS_NS = 2_000_000_000

_SURROGATE = re.compile("[\ud800-\udfff]")
_RULES = ".gitignore"

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


# In a regular expression of pathspec's: an escape (skipped), a quantifier that may span
# folders (``.*``, ``.+``) or one that stays in a name (``[^/]*`` and the like).
_QUANTIFIER = re.compile(r"\\.|\.[*+]|[*+]")


def _backtracks(regex: str) -> bool:
    """Whether Python's backtracking ``re`` could take more than about ``len(path) *
    len(name)`` steps on ``regex`` (pathspec's translation of one pattern): it has more than
    two quantifiers, or more than one that spans folders. Within that bound (every usual
    pattern: ``*.py[cod]``, ``build/``, ``**/generated/*.txt``) ``re`` is kept, being faster
    per call than RE2 from Python."""
    quantifiers = spanning = 0
    for token in _QUANTIFIER.findall(regex):
        if not token.startswith("\\"):
            quantifiers += 1
            spanning += token.startswith(".")
    return quantifiers > 2 or spanning > 1


class _LinearPattern(GitIgnoreSpecPattern):
    """A gitignore pattern (pathspec's ``GitIgnoreSpecPattern``: its parsing, its regular
    expression, its semantics) matched in bounded time: by RE2, in time linear in the
    path's length, when Python's ``re`` could backtrack (:func:`_backtracks`)."""

    def __init__(self, pattern: str, include: bool | None = None) -> None:
        super().__init__(pattern, include)
        if self.regex is not None and _backtracks(self.regex.pattern):
            try:
                self.regex = re2.compile(self.regex.pattern, _RE2_OPTIONS)
            except re2.error as exc:
                raise ValueError(f"pattern {pattern!r} cannot be compiled: {exc}") from None


#: What compiling a pattern that cannot be compiled raises: pathspec's ``ValueError`` (an
#: invalid pattern), Python's ``re.error`` (pathspec passes it on: ``[z-a]``, a character
#: range whose end is below its start) and :class:`_LinearPattern`'s ``ValueError`` (RE2).
_PATTERN_ERRORS = (ValueError, re.error)


def _rules(lines: list[str]) -> GitIgnoreSpec:
    return GitIgnoreSpec.from_lines(lines, pattern_factory=_LinearPattern, backend="simple")


def _read_rules(path: Path, limits: Limits) -> tuple[GitIgnoreSpec | None, str | None]:
    """The ignore rules in the file ``path`` (``None`` if there is no such regular file, or it
    is a symbolic link) and a note of what ``limits`` left out (``None`` if nothing). Skipped,
    not an error: a file over ``max_gitignore_bytes`` (at most one byte more is read) or of
    more than ``max_gitignore_patterns`` lines gives no rules; a pattern longer than
    ``max_gitignore_pattern_chars`` is left out before it is compiled. A pattern pathspec or
    RE2 cannot compile is left out too."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    most = limits.max_gitignore_bytes
    try:
        fd = os.open(path, flags)
    except OSError:  # none, a link (O_NOFOLLOW), unreadable
        return None, None
    with os.fdopen(fd, "rb") as handle:
        try:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None, None
            data = handle.read(most + 1)
        except OSError:
            return None, None
    if len(data) > most:
        return None, "rules not applied: " + describe(
            "max_gitignore_bytes", "the file", len(data), most, exact=False
        )
    lines = data.decode("utf-8", errors="replace").splitlines()
    if len(lines) > limits.max_gitignore_patterns:
        words = describe("max_gitignore_patterns", "the file", len(lines), limits.max_gitignore_patterns)
        return None, "rules not applied: " + words
    longest = limits.max_gitignore_pattern_chars
    long_lines = [number for number, line in enumerate(lines, 1) if len(line) > longest]
    note = None
    if long_lines:
        first = long_lines[0]
        size = len(lines[first - 1])
        note = f"{len(long_lines)} pattern(s) left out, the first on line {first}: " + describe(
            "max_gitignore_pattern_chars", "its length", size, longest
        )
        lines = [line for line in lines if len(line) <= longest]
    return _compiled_rules(lines), note


def _compiled_rules(lines: list[str]) -> GitIgnoreSpec:
    """The rules of ``lines``, a line pathspec or RE2 cannot compile left out."""
    try:
        return _rules(lines)
    except _PATTERN_ERRORS:  # an invalid pattern: keep the others
        good = []
        for line in lines:
            try:
                _rules([line])
            except _PATTERN_ERRORS:
                continue
            good.append(line)
        return _rules(good)


def _redacted_lines(
    lines: tuple[str, ...], text: str
) -> tuple[tuple[str, ...], tuple[tuple[int, int, str], ...]] | None:
    """``lines`` (of ``text``) with every secret replaced by ``[REDACTED: kind]``
    (:func:`bugcontext.core.secrets.redact`, line endings kept), and each secret's
    ``(first_line, last_line, kind)``; ``None`` if the redacted text does not keep the line
    count (then the file is withheld whole)."""
    starts: list[int] = []
    at = 0
    for line in lines:
        starts.append(at)
        at += len(line)
    where = [
        (bisect.bisect_right(starts, s.start), bisect.bisect_right(starts, max(s.start, s.end - 1)), s.kind)
        for s in find_secrets(text)
    ]
    done = redact(text)
    masked = split_lines(done.text)
    if len(masked) != len(lines) or find_secrets(done.text):
        return None
    return masked, tuple(where)


def _withheld_lines(lines: tuple[str, ...], text: str, refused: str) -> tuple[str, ...]:
    """The lines a refused file keeps: for a secret found in its content
    (:data:`SECRET_CONTENT`), its lines with every secret replaced by ``[REDACTED: kind]``
    (:func:`bugcontext.core.secrets.redact`), so that the sources still see its definitions and
    names and propose their windows, which :meth:`Repository.screen` then withholds; for a
    secret name (the whole file is the secret), its line endings only."""
    if refused == SECRET_CONTENT:
        masked = split_lines(redact(text).text)
        if len(masked) == len(lines):
            return masked
    return tuple(_line_ending(line) for line in lines)


def _line_ending(line: str) -> str:
    match = _ENDING.search(line)
    return match.group() if match else ""


def _blank_strings(tree: ast.Module | None) -> ast.Module | None:
    """``tree`` with every ``str`` and ``bytes`` constant (docstrings included) emptied."""
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant):
                if isinstance(node.value, str):
                    node.value = ""
                elif isinstance(node.value, bytes):
                    node.value = b""
    return tree


def _usable(rel: str) -> bool:
    """Whether the builder accepts the repository-relative path ``rel`` as it is (a file
    name may hold a backslash, say, which the build contract rejects in a path)."""
    try:
        return canonical_path(rel) == rel
    except PathProblem:
        return False


#: ``ast.parse`` one thread at a time: CPython 3.11 and 3.12 keep the depth counter of the
#: syntax-tree constructor per interpreter, so two threads parsing at once can fail with
#: ``SystemError: AST constructor recursion depth mismatch`` (a CPython bug); workspaces
#: used from several threads (the MCP server, a backend) parse files concurrently.
_PARSE_LOCK = threading.Lock()


def _parse(text: str) -> ast.Module | None:
    try:
        with _PARSE_LOCK:
            return ast.parse(text)
    except (SyntaxError, ValueError, UnicodeEncodeError, RecursionError, MemoryError):
        return None
