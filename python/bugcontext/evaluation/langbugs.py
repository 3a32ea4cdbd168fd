"""Bugs in JavaScript, TypeScript, Go, Rust and Java projects, run against the projects' own tests.

A case (one object of ``langbugs.json`` beside this module) names a project in a registry reachable
with the ordinary clients (``source``), the bug as a unified diff laid over the release
(``patch``; ``kind`` is ``"injected"`` for a bug made for the set, see ``docs/langbugs.md``), the
shell command that runs the project's tests (``test_command``, run by ``bash`` in the tree with
the case's ``env``; ``$JUNIT_RUN`` names the Java runner :data:`JUNIT_RUNNER`), its expected exit
status, the *gold* line ranges of the buggy tree, and the log (and JUnit XML) recorded when the
case was made (``recorded_log``, ``recorded_junit``: paths relative to this module's folder; the
recorded JUnit XML without its ``<properties>`` block, which lists the recording machine's
system properties).

``source.registry`` is one of:

- ``"debian"``: a Debian binary package that carries the sources (``golang-*-dev``): fetched with
  ``apt-get download PACKAGE=VERSION`` and unpacked with ``dpkg-deb -x``; ``source.path`` is the
  project's folder inside the package;
- ``"debian-source"``: a Debian source package: fetched with ``apt-get source --download-only``
  (with a private apt configuration whose sources are the ``deb-src`` twins of the machine's own,
  so the system's own lists are not touched); the upstream tarball (``*.orig.tar.*``) is the tree;
- ``"crates.io"``: a crate release, fetched with ``cargo vendor`` of a scratch crate that
  depends on ``=VERSION`` (the registry's checksums verified by cargo). A ``"release-pair"``
  case (a real bug) names the release that fixed it (``source.fixed_version``) and the paths of
  that release laid over the buggy one (``source.overlay``: its regression tests); it has no
  ``patch``.

:func:`prepare_lang_case` makes ``<work>/<id>/repo`` (the release with the patch applied and the
case's ``setup`` commands run), runs the test command there and keeps ``failing.log`` and, when
the runner writes one (``junit``: its path in the tree), ``failing.junit.xml``. Downloads are kept
in ``<work>/downloads/``; a complete preparation is marked by ``prepared.json`` and reused.

:func:`recorded_case` needs nothing of the project: it returns the recorded log and report of a
case, for a check that reads logs and compiles nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bugcontext.core._writer import write_file
from bugcontext.evaluation.preparation import (
    PreparationError,
    PreparedCase,
    extract_tar,
    mark_prepared,
    quiet,
    reused,
    run_checked,
    run_failing_tests,
    start_afresh,
)

__all__ = [
    "DEFAULT_LANG_CASES",
    "JUNIT_RUNNER",
    "LANGUAGES",
    "RecordedCase",
    "is_lang_case",
    "patch_gold",
    "prepare_lang_case",
    "recorded_case",
    "validate_lang_case",
]

#: The cases file (package data).
DEFAULT_LANG_CASES = Path(__file__).with_name("langbugs.json")

#: The languages of the set.
LANGUAGES = ("go", "rust", "java", "javascript", "typescript")

_REGISTRIES = ("debian", "debian-source", "crates.io")

#: The Java cases' runner, written as ``<work>/<id>/junit-run.sh``: compiles the main sources
#: (``MAIN``, default ``src/main/java``) and the named test files (``TEST`` the test source root,
#: default ``src/test/java``) with ``javac`` against Debian's JUnit jars, and runs the test
#: classes with the JUnit Platform console launcher (JUnit 5, and JUnit 3/4 through the vintage
#: engine), which writes JUnit XML under ``build/reports``.
JUNIT_RUNNER = r"""# junit-run.sh TEST_FILE...
set -u
J=/usr/share/java
CP=$J/junit-jupiter-api.jar:$J/junit-jupiter-params.jar:$J/junit4.jar:$J/hamcrest.jar
CP=$CP:$J/opentest4j.jar:$J/apiguardian-api.jar:$J/junit-platform-commons.jar
rm -rf build; mkdir -p build/main build/test
main=${MAIN:-src/main/java}; test=${TEST:-src/test/java}
find "$main" -name '*.java' > build/main.txt
javac -nowarn -encoding UTF-8 -d build/main @build/main.txt 2>&1 | grep -v '^Note:' || true
[ -d src/main/resources ] && cp -r src/main/resources/. build/main/
javac -nowarn -encoding UTF-8 -d build/test -sourcepath "$test" -cp build/main:$CP "$@" 2>&1 \
  | grep -v '^Note:' || true
[ -d src/test/resources ] && cp -r src/test/resources/. build/test/
sel=""; for f in "$@"; do c=${f#"$test"/}; c=${c%.java}; sel="$sel --select-class ${c//\//.}"; done
java -jar $J/junit-platform-console-standalone.jar \
  -cp build/main:build/test:$CP:$J/junit-jupiter-engine.jar:$J/junit-vintage-engine.jar \
  --disable-banner --disable-ansi-colors --details=tree --reports-dir build/reports $sel
"""


def is_lang_case(case: Mapping[str, Any]) -> bool:
    """Whether ``case`` is a case of this set (it names its ``language`` and ``source``)."""
    return "language" in case and "source" in case


def validate_lang_case(case: Mapping[str, Any]) -> None:
    """Check the fields of a case; raises ``ValueError`` naming the case and the field."""
    cid = case.get("id")

    def bad(field: str, why: str) -> ValueError:
        return ValueError(f"case {cid!r}: field {field!r} {why}")

    if not isinstance(cid, str) or not cid or "/" in cid or cid.startswith("."):
        raise ValueError(f"case {cid!r}: field 'id' must be a plain name")
    if case.get("language") not in LANGUAGES:
        raise bad("language", f"must be one of {', '.join(LANGUAGES)}")
    if case.get("kind") not in ("injected", "release-pair"):
        raise bad("kind", "must be 'injected' or 'release-pair'")
    source = case.get("source")
    if not isinstance(source, Mapping) or source.get("registry") not in _REGISTRIES:
        raise bad("source", f"must name a registry among {', '.join(_REGISTRIES)}")
    for key in ("package", "version"):
        if not isinstance(source.get(key), str) or not source[key]:
            raise bad(f"source.{key}", "must be a non-empty string")
    for key in ("test_command", "recorded_log"):
        if not isinstance(case.get(key), str) or not case[key]:
            raise bad(key, "must be a non-empty string")
    if case["kind"] == "injected" and (not isinstance(case.get("patch"), str) or not case["patch"]):
        raise bad("patch", "must be a non-empty string for an injected bug")
    if case["kind"] == "release-pair":
        overlay = source.get("overlay")
        if not isinstance(source.get("fixed_version"), str) or not source["fixed_version"]:
            raise bad("source.fixed_version", "must name the fixed release of a release pair")
        if not isinstance(overlay, list) or not overlay or not all(isinstance(o, str) and o for o in overlay):
            raise bad("source.overlay", "must list the fixed release's paths laid over the buggy one")
        if any(Path(o).is_absolute() or ".." in Path(o).parts for o in overlay):
            raise bad("source.overlay", "must hold relative paths inside the tree")
    gold = case.get("gold")
    if not isinstance(gold, list) or not gold:
        raise bad("gold", "must be a non-empty list")
    for index, hunk in enumerate(gold):
        ok = isinstance(hunk, Mapping) and isinstance(hunk.get("path"), str)
        ok = ok and isinstance(hunk.get("start"), int) and isinstance(hunk.get("end"), int)
        if not ok or not 1 <= hunk["start"] <= hunk["end"]:
            raise bad(f"gold[{index}]", "must be {path, start, end} with 1 <= start <= end")
        if Path(hunk["path"]).is_absolute() or ".." in Path(hunk["path"]).parts:
            raise bad(f"gold[{index}].path", "must be a relative path inside the tree")


def patch_gold(patch: str) -> list[tuple[str, int, int]]:
    """The lines a unified diff ``patch`` changes in the patched (buggy) tree, as
    ``(path, start, end)`` (1-based, closed): each run of added lines, or for a run of removed
    lines alone the two lines around the gap. Raises ``ValueError`` for a hunk outside a file."""
    ranges: list[tuple[str, int, int]] = []
    path: str | None = None
    line = 0
    run_start: int | None = None
    removed = False

    def close() -> None:
        nonlocal run_start, removed
        if path is not None and run_start is not None and run_start < line:
            ranges.append((path, run_start, line - 1))
        elif path is not None and removed:
            ranges.append((path, max(line - 1, 1), line))
        run_start, removed = None, False

    for text in patch.splitlines():
        if text.startswith("+++ "):
            close()
            name = text[4:].split("\t", 1)[0]
            path = name[2:] if name.startswith("b/") else name
        elif text.startswith("@@"):
            close()
            if path is None:
                raise ValueError("a hunk before any '+++' file header")
            new = text.split("+", 1)[1].split(" ", 1)[0]
            line = int(new.split(",", 1)[0])
        elif text.startswith("---"):
            continue
        elif text.startswith("+"):
            if run_start is None:
                run_start = line
            line += 1
        elif text.startswith("-"):
            removed = True
        else:
            close()
            line += 1
    close()
    return ranges


class RecordedCase:
    """The recorded failing run of a case: ``log`` (text) and ``junit`` (text or ``None``)."""

    def __init__(self, case: Mapping[str, Any], log: str, junit: str | None) -> None:
        self.case = case
        self.log = log
        self.junit = junit

    @property
    def id(self) -> str:
        """The case id."""
        return str(self.case["id"])


def _data_path(relative: str) -> Path:
    path = Path(relative)
    if path.is_absolute() or ".." in path.parts:
        raise ValueError(f"recorded file {relative!r} must be relative to the cases folder")
    return DEFAULT_LANG_CASES.parent / path


def recorded_case(case: Mapping[str, Any]) -> RecordedCase:
    """The log (and JUnit XML) recorded when ``case`` was made, read from the package data.
    Raises ``ValueError`` for a bad case, ``OSError`` when a recorded file cannot be read."""
    validate_lang_case(case)
    log = _data_path(str(case["recorded_log"])).read_text(encoding="utf-8")
    junit_name = case.get("recorded_junit")
    junit = _data_path(str(junit_name)).read_text(encoding="utf-8") if junit_name else None
    return RecordedCase(case, log, junit)


def _source_entries(etc: Path = Path("/etc/apt")) -> tuple[str, str]:
    """The machine's own apt sources turned into source-package ones: ``(one-line entries,
    deb822 entries)``, each ``deb`` entry of ``sources.list``, ``sources.list.d/*.list`` and
    ``sources.list.d/*.sources`` as ``deb-src``. Raises :class:`PreparationError` when there
    is none."""
    lines: list[str] = []
    stanzas: list[str] = []
    list_files = [etc / "sources.list", *sorted((etc / "sources.list.d").glob("*.list"))]
    for path in list_files:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        lines += [
            "deb-src " + line.split(None, 1)[1] for line in text.splitlines() if line.startswith("deb ")
        ]
    for path in sorted((etc / "sources.list.d").glob("*.sources")):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        for stanza in text.split("\n\n"):
            fields = stanza.strip().splitlines()
            if any(f.split(":", 1)[0] == "Types" and "deb" in f.split(":", 1)[1].split() for f in fields):
                kept = [f for f in fields if f.split(":", 1)[0] not in ("Types", "Enabled")]
                stanzas.append("\n".join(["Types: deb-src", *kept]))
    if not lines and not stanzas:
        raise PreparationError("no Debian package source in /etc/apt to take the source packages from")
    return "".join(line + "\n" for line in lines), "".join(stanza + "\n\n" for stanza in stanzas)


def _apt_source_options(work: Path, log: Callable[[str], None]) -> list[str]:
    """apt options of a private configuration whose sources are the ``deb-src`` twins of the
    machine's own (:func:`_source_entries`); its lists are fetched once under ``work/apt``
    (the system's lists are not touched)."""
    apt = work / "apt"
    lists = apt / "lists"
    options = [
        "-o",
        f"Dir::Etc::SourceList={apt / 'sources.list'}",
        "-o",
        f"Dir::Etc::SourceParts={apt / 'sources.list.d'}",
        "-o",
        f"Dir::State::Lists={lists}",
        "-o",
        "APT::Sandbox::User=root",
    ]
    if not (apt / "updated").is_file():
        (lists / "partial").mkdir(parents=True, exist_ok=True)
        (apt / "sources.list.d").mkdir(parents=True, exist_ok=True)
        one_line, deb822 = _source_entries()
        write_file(apt / "sources.list", one_line)
        write_file(apt / "sources.list.d" / "deb-src.sources", deb822)
        log("fetching the Debian source package lists")
        run_checked(["apt-get", "-qq", *options, "update"], what="apt-get update (deb-src)")
        write_file(apt / "updated", "")
    return options


def _fetch_debian(source: Mapping[str, Any], work: Path, log: Callable[[str], None]) -> Path:
    """The unpacked binary package ``source.package=source.version`` (cached)."""
    dest = work / "downloads" / f"deb-{source['package']}-{source['version']}"
    if not (dest / ".complete").is_file():
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        log(f"apt-get download {source['package']}={source['version']}")
        run_checked(
            ["apt-get", "download", "-qq", f"{source['package']}={source['version']}"],
            cwd=dest,
            what="apt-get download",
        )
        debs = sorted(dest.glob("*.deb"))
        if len(debs) != 1:
            raise PreparationError(
                f"apt-get download {source['package']}: expected one .deb, got {len(debs)}"
            )
        run_checked(["dpkg-deb", "-x", str(debs[0]), str(dest / "root")], what="dpkg-deb -x")
        write_file(dest / ".complete", "")
    return dest / "root"


def _fetch_debian_source(source: Mapping[str, Any], work: Path, log: Callable[[str], None]) -> Path:
    """The upstream tarball of the source package ``source.package=source.version`` (cached).

    Only the ``*.orig.tar.*`` file is needed: a failure to fetch the Debian part alone is not
    an error."""
    dest = work / "downloads" / f"src-{source['package']}-{source['version']}"
    found = sorted(dest.glob("*.orig.tar.*")) if dest.is_dir() else []
    if not found:
        options = _apt_source_options(work, log)
        dest.mkdir(parents=True, exist_ok=True)
        log(f"apt-get source {source['package']}={source['version']}")
        proc = subprocess.run(
            [
                "apt-get",
                "-qq",
                *options,
                "source",
                "--download-only",
                f"{source['package']}={source['version']}",
            ],
            cwd=dest,
            capture_output=True,
            text=True,
            check=False,
        )
        found = sorted(dest.glob("*.orig.tar.*"))
        if not found:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
            raise PreparationError(f"apt-get source {source['package']}: no upstream tarball\n{tail}")
    return found[0]


def _fetch_crate(source: Mapping[str, Any], work: Path, log: Callable[[str], None]) -> Path:
    """The sources of crate ``source.package`` at ``source.version`` (cached), by ``cargo vendor``."""
    name, version = str(source["package"]), str(source["version"])
    dest = work / "downloads" / f"crate-{name}-{version}"
    if not (dest / ".complete").is_file():
        shutil.rmtree(dest, ignore_errors=True)
        (dest / "src").mkdir(parents=True)
        write_file(
            dest / "Cargo.toml",
            '[package]\nname = "langbugs-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n'
            f"[dependencies]\n{json.dumps(name)} = {json.dumps('=' + version)}\n",
        )
        write_file(dest / "src" / "lib.rs", "")
        log(f"cargo vendor {name} {version}")
        run_checked(["cargo", "vendor", "-q", "--versioned-dirs", "vendor"], cwd=dest, what="cargo vendor")
        write_file(dest / ".complete", "")
    crate = dest / "vendor" / f"{name}-{version}"
    if not crate.is_dir():
        raise PreparationError(f"cargo vendor did not bring {name} {version}")
    return crate


def _copy_tree(src: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest, symlinks=False)


def _unpack_tarball(tarball: Path, dest: Path) -> None:
    """Unpack ``tarball`` into ``dest``, dropping its single top-level folder."""
    tmp = dest.with_name(dest.name + ".unpack")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    extract_tar(tarball, tmp)
    entries = list(tmp.iterdir())
    top = entries[0] if len(entries) == 1 and entries[0].is_dir() else tmp
    shutil.rmtree(dest, ignore_errors=True)
    shutil.move(str(top), str(dest))
    shutil.rmtree(tmp, ignore_errors=True)


def _lay_tree(case: Mapping[str, Any], work: Path, repo: Path, log: Callable[[str], None]) -> None:
    source = case["source"]
    registry = source["registry"]
    sub = str(source.get("path") or "")
    if Path(sub).is_absolute() or ".." in Path(sub).parts:
        raise PreparationError(f"case {case['id']}: source.path must be relative")
    if registry == "debian":
        _copy_tree(_fetch_debian(source, work, log) / sub, repo)
    elif registry == "debian-source":
        _unpack_tarball(_fetch_debian_source(source, work, log), repo)
    else:
        _copy_tree(_fetch_crate(source, work, log), repo)
        (repo / ".cargo-checksum.json").unlink(missing_ok=True)
    if case["kind"] == "release-pair":
        if registry != "crates.io":
            raise PreparationError(f"case {case['id']}: release pairs are read from crates.io only")
        fixed = _fetch_crate({"package": source["package"], "version": source["fixed_version"]}, work, log)
        for part in source["overlay"]:
            log(f"laying {part} of {source['package']} {source['fixed_version']} over the tree")
            target = repo / part
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
            if (fixed / part).is_dir():
                shutil.copytree(fixed / part, target)
            else:
                shutil.copyfile(fixed / part, target)


def _env(case: Mapping[str, Any]) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in dict(case.get("env") or {}).items():
        env[str(key)] = str(value).replace("$PATH", os.environ.get("PATH", ""))
    return env


def prepare_lang_case(
    case: dict[str, Any],
    work: str | Path,
    *,
    refresh: bool = False,
    log: Callable[[str], None] = quiet,
) -> PreparedCase:
    """Prepare ``case`` under ``work/<id>/`` (see the module docstring) and return it.

    Raises ``ValueError`` for a bad case and :class:`PreparationError` when a download, the
    patch, a setup command fails, or the test command does not exit with ``expected_exit``.
    """
    validate_lang_case(case)
    work = Path(work)
    out = work / str(case["id"])
    earlier = reused(case, out, refresh, log)
    if earlier is not None:
        return earlier
    start_afresh(out)
    repo = out / "repo"
    _lay_tree(case, work, repo, log)
    env = _env(case)
    write_file(out / "junit-run.sh", JUNIT_RUNNER)
    env["JUNIT_RUN"] = str(out / "junit-run.sh")
    for command in case.get("setup", []):
        log(f"+ {command}")
        run_checked(["bash", "-c", str(command)], cwd=repo, what="setup", env=env)
    if case.get("patch"):
        write_file(out / "bug.patch", str(case["patch"]))
        run_checked(
            ["patch", "-p1", "--no-backup-if-mismatch", "-i", str(out / "bug.patch")], cwd=repo, what="patch"
        )
    log(f"running {case['test_command']}")
    expected = int(case.get("expected_exit", 1))
    run_failing_tests(
        ["bash", "-c", str(case["test_command"])],
        cwd=repo,
        env=env,
        out=out,
        case_id=str(case["id"]),
        expected=expected,
    )
    if case.get("junit_command"):
        log(f"running {case['junit_command']}")
        subprocess.run(
            ["bash", "-c", str(case["junit_command"])],
            cwd=repo,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
    junit = case.get("junit")
    if junit:
        report = repo / str(junit)
        if not report.is_file():
            raise PreparationError(f"case {case['id']}: the runner wrote no report {junit}")
        shutil.copyfile(report, out / "failing.junit.xml")
    return mark_prepared(case, out, exit=expected)


