"""``bugcontext eval`` on the command line (also ``python -m bugcontext.evaluation``)."""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bugcontext.core._arguments import shown_text, whole_number
from bugcontext.core._extras import require
from bugcontext.core._io import OutputError, warn, write_stream
from bugcontext.core._writer import (
    AtomicFile,
    OutputConflictError,
    check_output,
    commit_all,
    make_folder,
    refuse_same_files,
)
from bugcontext.core.composer import header_path
from bugcontext.core.errors import ResourceLimitError
from bugcontext.core.secrets import redact_text
from bugcontext.evaluation.evaluate import (
    DEFAULT_BUDGETS,
    DEFAULT_CASE_FILES,
    DEFAULT_REPEAT,
    DEFAULT_WORK,
    VARIANTS,
    ablation,
    evaluate,
)
from bugcontext.evaluation.realbugs import load_cases, select_cases
from bugcontext.evaluation.report import ablation_report, coverage_chart, markdown_report, recall_chart
from bugcontext.job.sources.gather import SOURCES

__all__ = ["add_eval_parser", "main", "run_eval"]


def _budgets(text: str) -> tuple[int, ...]:
    problem = f"expected comma-separated positive budgets, got {shown_text(text)}"
    try:
        values = tuple(whole_number(1)(part) for part in text.split(",") if part.strip())
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(problem) from None
    if not values:
        raise argparse.ArgumentTypeError(problem)
    return tuple(sorted(set(values)))


#: The default gathering variants: without and with the issue text.
DEFAULT_VARIANTS = ("log", "log+issue")


def _variants(text: str) -> tuple[str, ...]:
    values = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [v for v in values if v not in VARIANTS]
    if not values or unknown:
        known = ", ".join(VARIANTS)
        raise argparse.ArgumentTypeError(f"expected variants among {known}, got {shown_text(text)}")
    return values


def _positive(text: str) -> int:
    return whole_number(1)(text)


def _error(message: str) -> None:
    warn(f"bugcontext eval: {' '.join(message.splitlines())}")


#: The files ``--out DIR`` writes in ``DIR`` (together, by :func:`bugcontext.core._writer.commit_all`).
_OUT_FILES = ("eval.md", "coverage.png", "recall.png")


def _make_folder(out: Path) -> None:
    """Make the folder ``--out`` names (and its parents); ``OutputError`` if it cannot be
    (:func:`bugcontext.core._writer.make_folder`: a file there, a link to a missing target)."""
    make_folder(out)


def _selected_cases(files: list[Path], selected: list[str] | None) -> list[dict[str, Any]] | None:
    """The cases of ``files`` that ``selected`` names (all by default), or ``None`` after
    printing why a file cannot be read or a case is unknown."""
    every: list[dict[str, Any]] = []
    for cases_file in files:
        try:
            every += load_cases(cases_file)
        except OSError as exc:
            _error(f"cannot read {header_path(str(cases_file))}: {exc.strerror or exc}")
            return None
        except ResourceLimitError as exc:
            _error(str(exc))
            return None
        except ValueError as exc:
            _error(f"invalid cases file {header_path(str(cases_file))}: {exc}")
            return None
    try:
        cases = select_cases(every, selected)
    except KeyError as exc:
        _error(str(exc.args[0]))
        return None
    return cases


def run_eval(args: argparse.Namespace) -> int:
    """Run ``bugcontext eval`` with parsed arguments; returns the exit status: 0; 1 when a case
    could not be prepared (the others are still reported on standard output, and ``--out`` is
    left as it was: its files are the record of a complete run only) or the report cannot be
    written; 2 for a bad cases file or an unknown case (found before anything is created);
    130 when interrupted."""
    require("matplotlib", "eval")  # the charts: checked before hours of work, not after
    files = list(args.cases or DEFAULT_CASE_FILES)
    written = [] if args.out is None else [Path(args.out) / name for name in _OUT_FILES]
    try:
        refuse_same_files(
            [("--out", path) for path in written], [("--cases", cases_file) for cases_file in files]
        )
    except OutputConflictError as exc:
        _error(str(exc))
        return 2
    cases = _selected_cases(files, args.case)
    if cases is None:
        return 2
    try:  # before any work, arguments checked: a folder that cannot be made, a file in it
        if args.out is not None:
            _make_folder(Path(args.out))
        for path in written:
            check_output(path)
    except OutputError as exc:
        _error(str(exc))
        return 1

    def progress(message: str) -> None:
        warn(f"[eval] {header_path(message)}")

    variants = args.variants
    evaluation, failed = evaluate(
        cases,
        args.work,
        budgets=args.budgets,
        refresh=args.refresh,
        repeat=args.repeat,
        log=progress,
        trees=args.trees,
        variants=variants,
        exclude=tuple(args.exclude),
    )
    for case_id, problem in failed:
        _error(f"{header_path(case_id)}: preparation failed: {problem}")
    report = markdown_report(evaluation)
    if args.ablation:
        rows = ablation(
            evaluation,
            cases,
            args.work,
            sources=tuple(args.ablate) or SOURCES,
            trees=args.trees,
            log=progress,
        )
        report += ablation_report(rows)
    report = redact_text(report)  # no secret leaves the program
    try:
        write_stream(sys.stdout, report)
        if args.out is not None and failed:
            _error(f"{header_path(str(args.out))} left as it was: {len(failed)} case(s) not prepared")
        elif args.out is not None:
            _write_out(Path(args.out), report, evaluation)
    except OutputError as exc:
        _error(str(exc))
        return 1
    return 1 if failed else 0


def _write_out(out: Path, report: str, evaluation: Any) -> None:
    """Write ``eval.md`` and the two charts in ``out`` together (:func:`bugcontext.core._writer.
    commit_all`: all written and flushed before any is renamed, so a full disk replaces none)."""
    images: list[bytes] = []
    for chart in (coverage_chart, recall_chart):
        image = io.BytesIO()
        chart(evaluation, image)
        images.append(image.getvalue())
    _make_folder(out)
    outputs: list[AtomicFile] = []
    try:
        for name, data in zip(_OUT_FILES, [report.encode("utf-8", "backslashreplace"), *images], strict=True):
            output = AtomicFile(out / name)
            outputs.append(output)
            try:
                output.file.write(data)
            except OSError as exc:
                raise output.error(exc) from exc
    except BaseException:
        for output in outputs:
            output.abort()
        raise
    commit_all(outputs)


def add_eval_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``eval`` subcommand to ``subparsers`` (from ``ArgumentParser.add_subparsers``);
    its ``run`` default is :func:`run_eval`."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "eval",
        help="measure context strategies on real bugs",
        description="Prepare the real-bug cases (cached), gather their candidates and compare "
        "naive concatenation, score-only top-k, the layered builder and the layered builder with "
        "range merging at each budget (o200k_base tokens of the rendered Markdown section).",
    )
    _add_case_options(parser)
    _add_run_options(parser)
    parser.set_defaults(run=run_eval)
    return parser


def _add_case_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``eval`` that choose the cases, the variants and the sources."""
    parser.add_argument(
        "--cases",
        type=Path,
        action="append",
        default=None,
        metavar="FILE",
        help="cases file (repeatable; default both shipped lists: PyPI release pairs and "
        "SWE-bench-style cases)",
    )
    parser.add_argument(
        "--trees",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder of <id>.tar.gz repository trees of the SWE-bench-style cases (they come "
        "with the data set and are not shipped; needed until a case is prepared and cached)",
    )
    parser.add_argument(
        "--variants",
        type=_variants,
        default=DEFAULT_VARIANTS,
        metavar="V,V,...",
        help="gathering variants: log (the failing log alone), log+issue (with the case's issue "
        "text as gather(issue=...)), log+query (the issue text as extra search words), "
        "log+rerun and log+issue+rerun (with execution evidence: the failing tests re-run "
        "under the tracer in the case's prepared environment); default log,log+issue",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        choices=SOURCES,
        metavar="SOURCE",
        help=f"leave this source out when gathering (repeatable): {', '.join(SOURCES)}",
    )
    parser.add_argument(
        "--ablate",
        action="append",
        default=[],
        choices=SOURCES,
        metavar="SOURCE",
        help="with --ablation, leave out only these sources in turn (repeatable; default all)",
    )
    parser.add_argument(
        "--ablation",
        action="store_true",
        help="also leave out each source in turn and report the cases that lose their gold at 8k",
    )
    parser.add_argument(
        "--case",
        action="append",
        default=None,
        metavar="ID",
        help="evaluate this case (repeatable; default all)",
    )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``eval`` for the budgets, the output and the work folder."""
    parser.add_argument(
        "--budgets",
        type=_budgets,
        default=DEFAULT_BUDGETS,
        metavar="N,N,...",
        help="token budgets (default 2000,8000,32000)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="also write DIR/eval.md, DIR/coverage.png and DIR/recall.png",
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=DEFAULT_WORK,
        metavar="DIR",
        help="where cases are prepared and cached (default %(default)s)",
    )
    parser.add_argument("--refresh", action="store_true", help="prepare the cases again")
    parser.add_argument(
        "--repeat",
        type=_positive,
        default=DEFAULT_REPEAT,
        metavar="N",
        help="runs per strategy, case and budget; build time is the median (default %(default)s)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``bugcontext eval`` on its own: ``python -m bugcontext.evaluation [OPTIONS]``."""
    parser = argparse.ArgumentParser(prog="bugcontext")
    add_eval_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["eval", *(sys.argv[1:] if argv is None else argv)])
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for it
        warn("bugcontext eval: interrupted")
        return 130
    return status
