r"""Secrets in text: where they are, and the text with them redacted.

One detector serves the whole program: the reader (:mod:`bugcontext.job.sources.files`) redacts
each secret it finds in a file's lines (files that are secrets by name are withheld whole), and
every text that leaves the program (the Markdown context and its summary, the JSON output, error
messages, the pytest plugin's files) passes through :func:`redact` on its way out.

**Rules.** Detection is based on a maintained, published rule set: the plugins of
`detect-secrets <https://pypi.org/project/detect-secrets/>`_ (a dependency). On import, this
module reads the regular expressions of every regex-based plugin (:data:`RULE_SET` names the
version), translates the few constructs the Rust ``regex`` crate lacks (the lookarounds
``(?<=\W)|(?<=^)`` and ``(?!class)``, see :func:`translate`) and installs them in the Rust
detector (``bugcontext._core.install_secret_rules``), where they run with the built-in rules
for the formats that set lacks. The translation is kept in a small file of the cache folder,
so that a new process installs the rules without importing detect-secrets; a file that fails
any check is not used (see :func:`_read_rule_file`). A *family* (the ``kind`` of a finding)
is a plugin's name (``AWSKeyDetector``, ``SlackDetector``, ...) or a built-in rule's id;
:data:`KINDS` lists them all. Three plugins are not used, on purpose: ``KeywordDetector`` (its
expressions need lookaheads and back-references; its keyword list is kept in the built-in ``generic-password``
and ``generic-secret`` rules, whose values are judged by length, entropy and placeholder rules
instead), ``Base64HighEntropyString`` and ``HexHighEntropyString`` (any quoted string of high
entropy: hashes and test vectors everywhere), and ``IPPublicDetector`` (an address is not a
secret).

**Time.** Every rule runs in the Rust ``regex`` crate, in time linear in the text, whatever the
text (no backtracking).

**Values judged in code** (the built-in rules; thresholds in ``src/secrets/values.rs``): a quoted value
assigned to a password name (``password``, ``passwd``, ``pwd``, ``passphrase``, ...) is a secret
from 6 characters and 2.0 bits of entropy per character when it holds letters and digits
(``"hunter2"``), and from 14 characters and 3.2 bits when it is all letters or symbols (a short
word such as ``"python"`` is a test fixture as often as a password); a quoted value assigned to
another secret name (``secret``, ``token``, ``api_key``, ...) from 12 characters, 3.0 bits,
letters with digits or symbols; an unquoted value from 8 characters, 2.5 bits, letters with
digits. None of them is a placeholder: a template or variable reference (``${X}``, ``{{x}}``,
``%(x)s``, ``$X``, ``<x>``), a mask (``xxxx``, ``****``), or a value made *only* of placeholder
words (``changeme``, ``your_api_key_here``, ``test123``); a value that merely contains such a
word (``mytestvalue9Zq``) is not a placeholder. Names in code (``os.environ``, ``API_KEY``,
``get_token``, ``quoted-string``) are not values. The password of a URL (``redis://:pw@host``
too) is a secret unless it is a placeholder, equals the user name, or the host is a
documentation host (``example.com``/``.org``/``.net`` and names under them, RFC 2606):
``ftp://foo:bar@ftp.example.org/`` and ``postgres://user:pass@db`` are documentation.
Offsets are characters (code points).
"""

from __future__ import annotations

import bisect
import hashlib
import importlib
import importlib.util
import json
import os
import re
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bugcontext._core import install_secret_rules, secret_kinds, secret_spans
from bugcontext.core.terminal import TERMINAL_SEQUENCE

__all__ = [
    "EXCLUDED_PLUGINS",
    "KINDS",
    "RULE_SET",
    "SECRET_REDACTED",
    "Redaction",
    "Secret",
    "find_secrets",
    "redact",
    "redact_json",
    "redact_text",
    "redaction",
    "redaction_note",
    "unglued",
]

#: The detect-secrets plugins whose expressions are not installed (see the module docstring).
EXCLUDED_PLUGINS = frozenset(
    {"KeywordDetector", "Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector"}
)
#: Plugins whose capture group 1 is the secret (a keyword or URL around a value); in every
#: other plugin's expressions, the whole match is.
_VALUE_GROUP = frozenset(
    {
        "AWSKeyDetector",
        "BasicAuthDetector",
        "CloudantDetector",
        "IbmCloudIamDetector",
        "IbmCosHmacDetector",
        "SoftlayerDetector",
        "NpmDetector",
    }
)
_CHECKS = {
    "BasicAuthDetector": "url-password",
    "JwtTokenDetector": "jwt",
    "PrivateKeyDetector": "private-key",
}

_START_HALF = "(?:(?<=\\W)|(?<=^))"
_LOOKAHEAD = re.compile(r"\(\?!(\\w|\[(?:\\.|[^\]\\])*\])\)")
_LOOKAROUND = re.compile(r"\(\?<?[=!]")


class RuleError(ValueError):
    """An expression of the rule set that the Rust ``regex`` crate cannot run as it is."""


def _escape_class_dashes(pattern: str) -> str:
    """``pattern`` with each ``-`` inside a character class that is not a range (``[0-9-_]``,
    which Python reads as a literal ``-``) escaped, as the ``regex`` crate needs."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    items = 0  # class members since the last range (a `-` after a range is a literal)
    after_range = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(pattern[i : i + 2])
            i += 2
            items += 1
            after_range = False
            continue
        if not in_class:
            if c == "[":
                in_class, items, after_range = True, 0, False
                out.append(c)
                if pattern[i + 1 : i + 2] == "^":
                    out.append("^")
                    i += 1
                if pattern[i + 1 : i + 2] == "]":
                    out.append("\\]")
                    i += 1
                i += 1
                continue
            out.append(c)
            i += 1
            continue
        if c == "]":
            in_class = False
            out.append(c)
        elif c == "-":
            literal = items == 0 or after_range or pattern[i + 1 : i + 2] == "]"
            if literal:
                out.append("\\-")
                items += 1
                after_range = False
            else:
                out.append(c)
                # The next member closes the range.
                nxt = pattern[i + 1 : i + 3] if pattern[i + 1 : i + 2] == "\\" else pattern[i + 1 : i + 2]
                out.append(nxt)
                i += len(nxt)
                after_range = True
        else:
            out.append(c)
            items += 1
            after_range = False
        i += 1
    return "".join(out)


def translate(pattern: str, flags: int) -> tuple[str, str | None]:
    """The ``regex``-crate form of a Python expression of the rule set: ``(pattern,
    not_followed_by)``. ``(?:(?<=\\W)|(?<=^))`` becomes ``\\b{start-half}`` (same meaning);
    a ``(?!\\w)`` or ``(?![class])`` at the end of the expression or of its first group is
    removed and returned as ``not_followed_by`` (the class the byte after the secret may not
    be in, checked in Rust); a ``-`` that Python reads as a literal in a class is escaped;
    ``re.IGNORECASE`` and ``re.VERBOSE`` become ``(?i)`` and ``(?x)``, and ``(?m)`` makes
    ``^`` and ``$`` match at lines (the plugins run line by line). Raises :class:`RuleError`
    for any other lookaround."""
    text = pattern.replace(_START_HALF, r"\b{start-half}")
    follow: str | None = None
    for m in list(_LOOKAHEAD.finditer(text)):
        rest = text[m.end() :]
        if rest and not rest.startswith(")"):
            raise RuleError(f"a lookahead {m.group()!r} not at the end of the secret in {pattern!r}")
        if follow is not None:
            raise RuleError(f"two lookaheads in {pattern!r}")
        follow = "[A-Za-z0-9_]" if m.group(1) == "\\w" else m.group(1)
        text = text[: m.start()] + text[m.end() :]
    if _LOOKAROUND.search(text):
        raise RuleError(f"a lookaround the regex crate lacks in {pattern!r}")
    text = _escape_class_dashes(text)
    prefix = "(?m" + ("i" if flags & re.IGNORECASE else "") + ("x" if flags & re.VERBOSE else "") + ")"
    return prefix + text, None if follow is None else _escape_class_dashes(follow)


def _plugin_rules() -> list[tuple[str, str, str, bool, str | None]]:
    """The installed rules: one per expression of every regex-based detect-secrets plugin not
    in :data:`EXCLUDED_PLUGINS`, in the plugins' name order, as
    ``_core.install_secret_rules`` takes them."""
    # (imported as untyped modules: the rule set is data here)
    util: Any = importlib.import_module("detect_secrets.core.plugins.util")
    base: Any = importlib.import_module("detect_secrets.plugins.base")
    regex_based: type = base.RegexBasedDetector
    mapping = util.get_mapping_from_secret_type_to_class()
    plugins: list[Any] = sorted(mapping.values(), key=lambda c: c.__name__)
    rules: list[tuple[str, str, str, bool, str | None]] = []
    for plugin in plugins:
        name = plugin.__name__
        if name in EXCLUDED_PLUGINS or not issubclass(plugin, regex_based):
            continue
        for expression in plugin.denylist:
            translated, follow = translate(expression.pattern, expression.flags)
            group = name in _VALUE_GROUP and expression.groups >= 1
            rules.append((name, translated, _CHECKS.get(name, "token"), group, follow))
    return rules


# --------------------------------------------------------------------------------------
# The translated rules, cached on disk
#
# Importing detect-secrets (and ``requests``, which its plugins import) and translating its
# expressions is most of the cost of importing this module, so a new process reads the
# translation from a small file of the cache folder instead, when one made from the same
# inputs is there; else it imports detect-secrets, translates, and writes the file.

_Rule = tuple[str, str, str, bool, str | None]
#: The layout of a rules file; a file of another layout is not read.
RULE_CACHE_FORMAT = 1
#: A rules file larger than this is not read (the translation of detect-secrets 1.5.0: 5 kB).
RULE_CACHE_MAX_BYTES = 1 << 20
_CHECK_NAMES = frozenset({"token", *_CHECKS.values()})


#: The environment variable that, set to any non-empty value, keeps the process from reading
#: or writing the rules file (a process that must write nothing outside the folders it is given).
NO_RULE_FILE = "BUGCONTEXT_NO_RULE_FILE"


def _rule_cache() -> tuple[Path, str] | None:
    """The folder of the rules file and the key of the translation, or ``None`` when no file
    is used (:data:`NO_RULE_FILE` set, no ``platformdirs``, a user cache directory that is
    not an absolute path, detect-secrets not found as a folder with its distribution record beside it, this
    module's source unreadable).

    The folder is the package's default cache folder (``bugcontext`` in the user cache
    directory, as :func:`bugcontext.job.workspace.default_cache_dir`). The key is the SHA-256
    of everything the translation depends on, read without importing detect-secrets: the
    file layout, the Python version, this module's source (the translator and its tables),
    the names of detect-secrets' distribution records (``detect_secrets-VERSION.dist-info``)
    and the path and bytes of every file of its package folder."""
    if os.environ.get(NO_RULE_FILE):
        return None
    try:
        import platformdirs
    except ImportError:
        return None
    folder = Path(platformdirs.user_cache_dir("bugcontext", appauthor=False))
    if not folder.is_absolute():  # (a relative XDG_CACHE_HOME, no home folder: not the user's)
        return None
    try:
        spec = importlib.util.find_spec("detect_secrets")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    digest = hashlib.sha256()
    try:
        own = Path(__file__).read_bytes()
        records = sorted(
            name
            for name in os.listdir(package.parent)
            if name.startswith("detect_secrets-") and name.endswith((".dist-info", ".egg-info"))
        )
        if not records:
            return None
        for part in (str(RULE_CACHE_FORMAT), sys.version, *records):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(hashlib.sha256(own).digest())
        for inside, subfolders, files in os.walk(package):
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
            for name in sorted(files):
                path = os.path.join(inside, name)
                data = Path(path).read_bytes()
                relative = os.path.relpath(path, package)
                digest.update(relative.encode("utf-8", "surrogateescape") + b"\0")
                digest.update(len(data).to_bytes(8, "little") + hashlib.sha256(data).digest())
    except OSError:
        return None
    return folder, digest.hexdigest()


def _rule_file(folder: Path, key: str) -> Path:
    return folder / f"secret-rules-{key[:32]}.json"


def _owned(st: os.stat_result) -> bool:
    """Whether a file or folder is this user's alone to write (owned by the user, not
    writable by group or others); always true where there are no user ids."""
    getuid = getattr(os, "getuid", None)
    return getuid is None or (st.st_uid == getuid() and not st.st_mode & 0o022)


def _payload_digest(document: dict[str, Any]) -> str:
    body = {k: v for k, v in document.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _read_rule_file(folder: Path, key: str) -> tuple[str, list[_Rule]] | None:
    """The rule set name and rules of the rules file for ``key`` in ``folder``, or ``None``
    unless the file is there and passes every check: a regular file (not a link) of at most
    :data:`RULE_CACHE_MAX_BYTES`, in a folder, both owned by this user and writable by no
    one else; JSON of this layout, for this key, whose digest matches its content, each rule
    of the shapes ``install_secret_rules`` takes, its kind not an excluded plugin and its check
    a known one. (A rules file of this user is trusted as the user's installed packages are:
    whoever can write it can change those too.)"""
    path = _rule_file(folder, key)
    try:
        if not _owned(os.stat(folder)):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > RULE_CACHE_MAX_BYTES or not _owned(st):
            return None
        data = os.read(fd, RULE_CACHE_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        document = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
        return None
    if not (
        isinstance(document, dict)
        and set(document) == {"format", "key", "rule_set", "rules", "digest"}
        and document["format"] == RULE_CACHE_FORMAT
        and document["key"] == key
        and isinstance(document["digest"], str)
        and document["digest"] == _payload_digest(document)
        and isinstance(document["rule_set"], str)
        and document["rule_set"].startswith("detect-secrets ")
        and isinstance(document["rules"], list)
        and document["rules"]
    ):
        return None
    rules: list[_Rule] = []
    for rule in document["rules"]:
        if not (isinstance(rule, list) and len(rule) == 5):
            return None
        kind, pattern, check, group, follow = rule
        if not (
            isinstance(kind, str)
            and kind
            and kind not in EXCLUDED_PLUGINS
            and isinstance(pattern, str)
            and pattern
            and check in _CHECK_NAMES
            and isinstance(group, bool)
            and (follow is None or (isinstance(follow, str) and follow))
        ):
            return None
        rules.append((kind, pattern, check, group, follow))
    return document["rule_set"], rules


def _write_rule_file(folder: Path, key: str, rule_set: str, rules: list[_Rule]) -> None:
    """Write the rules file for ``key`` (atomically: a temporary file of this user alone,
    renamed into place); a failure leaves no file and is not an error."""
    import tempfile

    document: dict[str, Any] = {
        "format": RULE_CACHE_FORMAT,
        "key": key,
        "rule_set": rule_set,
        "rules": [list(rule) for rule in rules],
    }
    document["digest"] = _payload_digest(document)
    data = json.dumps(document, sort_keys=True, indent=0).encode()
    temporary = None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".secret-rules-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, _rule_file(folder, key))
        temporary = None
    except OSError:
        pass
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def _install_rules() -> str:
    """Install the rules (from the rules file when it passes its checks, else translated
    from detect-secrets, which writes the file) and return the rule set's name."""
    cache = _rule_cache()
    if cache is not None:
        found = _read_rule_file(*cache)
        if found is not None:
            try:
                install_secret_rules(found[1])
            except ValueError:
                pass  # (the rules in use are kept; the translation below replaces them)
            else:
                return found[0]
    from importlib import metadata

    rules = _plugin_rules()
    install_secret_rules(rules)
    rule_set = f"detect-secrets {metadata.version('detect-secrets')}"
    if cache is not None:
        _write_rule_file(*cache, rule_set, rules)
    return rule_set


#: The rule set installed: ``"detect-secrets VERSION"``.
RULE_SET = _install_rules()

#: The kinds (families) of secret detected: the installed plugins' names, then the built-in
#: rules' ids, in rule order (see the module docstring).
KINDS: tuple[str, ...] = tuple(secret_kinds())


@dataclass(frozen=True)
class Secret:
    """A secret found in a text: characters ``start..end`` (code points, half-open) are a
    secret of kind ``kind`` (one of :data:`KINDS`)."""

    start: int
    end: int
    kind: str


def find_secrets(text: str) -> list[Secret]:
    """Every secret in ``text``, sorted by ``start``, never overlapping (overlapping findings
    are merged under the kind of the first). Linear in ``len(text)``. Raises ``TypeError`` if
    ``text`` is not a ``str``."""
    return [Secret(start, end, kind) for start, end, kind in _spans(text)]


def redaction(kind: str) -> str:
    """The text that replaces a secret of kind ``kind``: ``[REDACTED: kind]``."""
    return f"[REDACTED: {kind}]"


@dataclass(frozen=True)
class Redaction:
    """``text`` with every secret replaced, and the kinds replaced (in order, repeated)."""

    text: str
    kinds: tuple[str, ...]


_ENDING = re.compile(r"\r\n|\r|\n")


def _replaced(text: str, start: int, end: int, kind: str) -> str:
    """What replaces ``text[start:end]``, a secret of ``kind``: :func:`redaction` of the kind
    and the line endings that keep the text's number of lines (``\\n``, ``\\r\\n`` and ``\\r``
    end a line). A ``\\n`` that completes a ``\\r`` just before the secret stays before the
    replacement; the endings inside the secret follow it, a lone ``\\r`` written as ``\\n`` (so
    two endings never merge into one) but for the last, which may complete a ``\\r\\n`` with
    the text after the secret. A secret that ends the text on a line without an ending (a
    private key without its END line runs to the end) has its endings first and the
    replacement on that last line: after its endings, nothing would be left of the line (its
    first ending written ``\\r\\n`` where a ``\\n`` would complete a ``\\r`` before it)."""
    secret = text[start:end]
    lead = ""
    if secret.startswith("\n") and start > 0 and text[start - 1] == "\r":
        lead, secret = "\n", secret[1:]
    found = _ENDING.findall(secret)
    kept = ["\n" if e == "\r" else e for e in found]
    if secret.endswith("\r"):
        kept[-1] = "\r"
    if end == len(text) and found and not secret.endswith(("\n", "\r")):
        if not lead and start > 0 and text[start - 1] == "\r" and kept[0] == "\n":
            kept[0] = "\r\n"  # a "\n" right after the text's "\r" would complete it
        return lead + "".join(kept) + redaction(kind)
    return lead + redaction(kind) + "".join(kept)


def _with_replaced(text: str, found: list[tuple[int, int, str]]) -> str:
    """``text`` with each of the sorted, disjoint secrets ``found`` (``(start, end, kind)``)
    replaced (:func:`_replaced`)."""
    parts: list[str] = []
    at = 0
    for start, end, kind in found:
        parts += [text[at:start], _replaced(text, start, end, kind)]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def redact(text: str) -> Redaction:
    """``text`` with every secret (:func:`find_secrets`) replaced by :func:`redaction` of its
    kind, the line endings inside a secret (a private key block) kept after the replacement, so
    that the text keeps its lines; and the kinds replaced. Repeated until the text holds no
    secret (a replacement can cut a longer value that was not a secret into one that is), so
    ``find_secrets(redact(text).text) == []``. A text without secrets is returned as it is.

    The base64 fields of an XML section (:mod:`bugcontext.core.composer`: a body after
    ``encoding="base64">``, a ``path-base64``/``test-base64`` attribute; also with the quotes
    JSON-escaped) are screened too: each is decoded, its text redacted (this function) and
    encoded again, so that a secret in a snippet written as base64 (its content held a control
    character) is replaced like any other. An escape (``\\x01``, ``\\t``, ``\\u0001``, ``\\udce9``:
    how ``repr`` and the printed names write a character) is also read with its last character
    as a blank, so that its hex digit or letter does not glue a token after it to a word. A
    text with numbered lines (a section rendered with ``line_numbers``, ``"12 | "`` before each
    line) is also read without the numbers, and an XML section with its character references
    read as characters (a ``\\r`` is ``&#13;`` there), so that a secret spanning lines (a
    private key's body) is replaced whole; the numbers stay."""
    numbered = _redact_numbered(text)
    plain = _redact_plain(numbered.text)
    if numbered.kinds:
        plain = Redaction(plain.text, (*numbered.kinds, *plain.kinds))
    escaped = _redact_escaped(plain.text)
    if escaped.kinds:
        again = _redact_plain(escaped.text)
        plain = Redaction(again.text, (*plain.kinds, *escaped.kinds, *again.kinds))
    tails = _redact_key_tails(plain.text)
    if tails.kinds:
        plain = Redaction(tails.text, (*plain.kinds, *tails.kinds))
    if "base64" not in plain.text:
        return plain
    fields = _redact_base64_fields(plain.text)
    if not fields.kinds:
        return plain
    again = _redact_plain(fields.text)
    return Redaction(again.text, (*plain.kinds, *fields.kinds, *again.kinds))


#: The number a numbered line starts with (:func:`bugcontext.core.composer.number_lines`).
_NUMBER = re.compile(r" *[0-9]+ \| ")
_NUMBERED = re.compile(r"(?m)^ *[0-9]+ \| ")
#: An XML section (:mod:`bugcontext.core.composer`), and the references it writes characters as.
_XML_SECTION = re.compile(r"<(?:snippet|failure) ")
_REFERENCES = {
    "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#9;": "\t", "&#10;": "\n", "&#13;": "\r"
}
_REFERENCE = re.compile("|".join(re.escape(name) for name in _REFERENCES))
def _redact_numbered(text: str) -> Redaction:
    """``text`` with the secrets found in it as a reader of the section sees it replaced: read
    without its line numbers (:data:`_NUMBER` at the start of a line) and, in an XML section,
    with its character references (``&amp;``, ``&#13;``, ...) as the characters they stand
    for. Each line keeps its number: a secret's first line gets the replacement, the text of
    its other lines goes (the text after the secret on its last line stays). A text with
    neither is returned as it is."""
    xml = "&" in text and _XML_SECTION.search(text) is not None and _REFERENCE.search(text) is not None
    if not xml and (" | " not in text or _NUMBERED.search(text) is None):
        return Redaction(text, ())
    kinds_of_mark = [r"(?P<number>^ *[0-9]+ \| )"]
    if xml:
        kinds_of_mark.append(f"(?P<reference>{_REFERENCE.pattern})")
    marks = re.compile("(?m)" + "|".join(kinds_of_mark))
    # The text as read, in runs: (start in the view, start and end in the text, whether the
    # run is the text itself); a line number is shown as nothing, a reference as one character.
    view: list[str] = []
    runs: list[tuple[int, int, int, bool]] = []
    at = shown = 0
    for mark in marks.finditer(text):
        if mark.start() > at:
            runs.append((shown, at, mark.start(), True))
            view.append(text[at : mark.start()])
            shown += mark.start() - at
        if mark.lastgroup != "number":
            runs.append((shown, mark.start(), mark.end(), False))
            view.append(_REFERENCES[mark.group(0)])
            shown += 1
        at = mark.end()
    if at < len(text):
        runs.append((shown, at, len(text), True))
        view.append(text[at:])
    found = _spans("".join(view))
    if not found:
        return Redaction(text, ())
    firsts = [run[0] for run in runs]

    def where(char: int) -> tuple[int, int]:
        """The text's characters that the view's character ``char`` is read from."""
        first, start, end, itself = runs[bisect.bisect_right(firsts, char) - 1]
        return (start + char - first, start + char - first + 1) if itself else (start, end)

    parts: list[str] = []
    kinds: list[str] = []
    done = 0
    for start, end, kind in found:
        a, b = where(start)[0], where(end - 1)[1]
        kept = [m.group(0) for m in re.finditer(r"\n(?: *[0-9]+ \| )?", text[a:b])]
        parts += [text[done:a], redaction(kind), *kept]
        done = b
        kinds.append(kind)
    parts.append(text[done:])
    return Redaction("".join(parts), tuple(kinds))


#: The last character of an escape as ``repr`` writes a character (``\\x01``, ``\\t``,
#: ``\\udce9``, ``\\U0001f600``) and as printed names do
#: (:func:`bugcontext.core.composer.header_path`: ``\\u0001``), when a letter or digit follows it.
_ESCAPE_END = re.compile(r"(\\(?:x[0-9a-fA-F]|u[0-9a-fA-F]{3}|U[0-9a-fA-F]{7})?)[0-9A-Za-z](?=[0-9A-Za-z])")


#: The last line of a PEM private key, and a line of its base64 body (after a line number).
_KEY_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----")
_KEY_BODY = re.compile(r"(?: *[0-9]+ \| )?[ \t]*[A-Za-z0-9+/=]{8,}[ \t]*\r?")
#: The family of a private key (its header's plugin).
_KEY_KIND = "PrivateKeyDetector"


def _redact_key_tails(text: str) -> Redaction:
    """``text`` with the end of a private key whose header it does not hold (a window of a
    file that starts inside the key) replaced: the base64 lines before an ``-----END ...
    PRIVATE KEY-----`` line and that line, the first of them by the replacement, the others
    left empty (a line number and the line ending stay). Linear: each line is looked at from
    at most one ``END`` line. A text without such a tail is returned as it is."""
    if "PRIVATE KEY" not in text or _KEY_END.search(text) is None:
        return Redaction(text, ())
    lines = text.split("\n")
    kinds: list[str] = []
    for index, line in enumerate(lines):
        end = _KEY_END.search(line)
        if end is None:
            continue
        first = index
        while first > 0 and _KEY_BODY.fullmatch(lines[first - 1]):
            first -= 1
        if first == index:
            continue  # no body before it: an END line alone is no secret
        for at in range(first, index + 1):
            number = _NUMBER.match(lines[at])
            head = lines[at][: number.end()] if number is not None else ""
            if at == index:
                lines[at] = head + lines[at][end.end() :]
            else:
                ending = "\r" if lines[at].endswith("\r") else ""
                lines[at] = head + (redaction(_KEY_KIND) if at == first else "") + ending
        kinds.append(_KEY_KIND)
    if not kinds:
        return Redaction(text, ())
    return Redaction("\n".join(lines), tuple(kinds))


def unglued(text: str) -> str:
    """``text`` with the last character of each escape followed by a letter or digit
    (:data:`_ESCAPE_END`: ``\\x01``, ``\\t``, ``\\u0001``) as a blank: the same length, each other
    character where it was, and no token glued to a word by an escape before it."""
    return _ESCAPE_END.sub(r"\1 ", text) if "\\" in text else text


def _redact_escaped(text: str) -> Redaction:
    """``text`` with the secrets replaced that it holds read with the last character of each
    escape followed by a letter or digit (:data:`_ESCAPE_END`) as a blank, so that it does not
    glue the token after it to a word; every character stays where it was, so a secret found
    so is replaced at the same place in ``text``. A text without such an escape, or without a
    secret so read, is returned as it is."""
    blanked = unglued(text)
    if blanked == text:
        return Redaction(text, ())
    found = _spans(blanked)
    if not found:
        return Redaction(text, ())
    return Redaction(_with_replaced(text, found), tuple(kind for _, _, kind in found))


#: A base64 field of an XML section: a body (``encoding="base64">B64<``) or an attribute
#: (``path-base64="B64"``, ``test-base64="B64"``); the quotes may be JSON-escaped (``\"``).
_BASE64_FIELD = re.compile(r'(?:encoding=\\?"base64\\?">|-base64=\\?")([A-Za-z0-9+/]+={0,2})')


def _redact_base64_fields(text: str) -> Redaction:
    """``text`` with every secret inside its base64 fields (:data:`_BASE64_FIELD`) replaced:
    the field decoded (UTF-8, lone surrogates as the composer writes them), redacted and
    encoded again. A field that is not base64 of UTF-8 is left as it is."""
    import base64
    import binascii

    kinds: list[str] = []

    def screened(match: re.Match[str]) -> str:
        encoded = match.group(1)
        try:
            decoded = base64.b64decode(encoded, validate=True).decode("utf-8", "surrogatepass")
        except (binascii.Error, ValueError):
            return match.group(0)
        done = redact(decoded)
        if not done.kinds:
            return match.group(0)
        kinds.extend(done.kinds)
        again = base64.b64encode(done.text.encode("utf-8", "surrogatepass")).decode("ascii")
        return match.group(0)[: match.start(1) - match.start(0)] + again

    out = _BASE64_FIELD.sub(screened, text)
    return Redaction(out, tuple(kinds))


def _redact_plain(text: str) -> Redaction:
    """:func:`redact` of ``text`` read as plain text (its base64 fields as they are)."""
    found = _spans(text)
    if not found:
        return Redaction(text, ())
    kinds: list[str] = []
    # Until nothing is found: replacing a secret inside the value of a keyword assignment
    # that was not a secret as a whole (its value held a placeholder word further on) cuts
    # the value at the replacement, and what is left of it may be one. Each pass replaces
    # characters of the text itself (a replacement holds no secret), so this ends.
    while found:
        text = _with_replaced(text, found)
        kinds.extend(kind for _, _, kind in found)
        found = _spans(text)
    return Redaction(text, tuple(kinds))


# A terminal sequence (:data:`bugcontext.core.terminal.TERMINAL_SEQUENCE`: colours, titles,
# links). Its last byte is a letter, so a key right after it (``\x1b[31mAKIA...``) would not
# start at a word boundary and be missed.


def _spans(text: str) -> list[tuple[int, int, str]]:
    """:func:`secret_spans` of ``text`` with each terminal sequence read as spaces of its
    length (offsets unchanged), so colour codes around a secret do not hide it."""
    if "\x1b" in text or "\x9b" in text or "\x9d" in text:
        text = TERMINAL_SEQUENCE.sub(lambda m: " " * len(m.group()), text)
    return list(secret_spans(text))


def redact_text(text: str) -> str:
    """``redact(text).text``: ``text`` with its secrets replaced."""
    return redact(text).text


#: Why a secret was replaced in an output (``"policy_redacted"`` records).
SECRET_REDACTED = "policy: secret in the output"


def redaction_note(kinds: Sequence[str]) -> str:
    """The line that reports the secrets redacted from an output (``kinds`` as
    :attr:`Redaction.kinds`)."""
    n = len(kinds)
    return f"{n} secret{'s' if n != 1 else ''} redacted from this output (reason policy): " + ", ".join(
        dict.fromkeys(kinds)
    )


def redact_json(value: Any, where: str = "$") -> tuple[Any, list[dict[str, str]]]:
    """``value`` (a JSON value: ``dict``, ``list``, ``str``, numbers) with every secret in a
    string, keys included, replaced by ``[REDACTED: kind]``; and one record per secret:
    ``{"where": JSONPath of the string, "kind", "reason": "policy", "why": "policy: secret in
    the output"}``. ``value`` is not changed."""
    found: list[dict[str, str]] = []

    def walk(item: Any, at: str) -> Any:
        if isinstance(item, str):
            done = redact(item)
            found.extend(
                {"where": at, "kind": kind, "reason": "policy", "why": SECRET_REDACTED} for kind in done.kinds
            )
            return done.text
        if isinstance(item, dict):
            out: dict[Any, Any] = {}
            for k, v in item.items():
                # The JSONPath names the key as shown: a secret in a key never reaches a record.
                shown = walk(k, f"{at}.<key>")
                out[shown] = walk(v, f"{at}.{shown}")
            return out
        if isinstance(item, (list, tuple)):
            return [walk(v, f"{at}[{i}]") for i, v in enumerate(item)]
        return item

    return walk(value, where), found
