"""``repo-context eval`` on the command line (also ``python -m repo_context.evaluation``)."""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._io import OutputError, warn, write_file, write_stream
from ..composer import header_path
from ..errors import ResourceLimitError
from ..secrets import redact_text
from .evaluate import DEFAULT_BUDGETS, DEFAULT_CASES, DEFAULT_REPEAT, DEFAULT_WORK, evaluate
from .realbugs import load_cases, select_cases
from .report import coverage_chart, markdown_report

__all__ = ["add_eval_parser", "main", "run_eval"]


def _budgets(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive budgets, got {text!r}")
    return tuple(sorted(set(values)))


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _error(message: str) -> None:
    warn(f"repo-context eval: {' '.join(message.splitlines())}")


def run_eval(args: argparse.Namespace) -> int:
    """Run ``repo-context eval`` with parsed arguments; returns the exit status: 0; 1 when a case
    could not be prepared (the others are still reported) or the report cannot be written; 2
    for a bad cases file or an unknown case."""
    try:
        cases = select_cases(load_cases(args.cases), args.case)
    except OSError as exc:
        _error(f"cannot read {header_path(str(args.cases))}: {exc.strerror or exc}")
        return 2
    except ResourceLimitError as exc:
        _error(str(exc))
        return 2
    except ValueError as exc:
        _error(f"invalid cases file {header_path(str(args.cases))}: {exc}")
        return 2
    except KeyError as exc:
        _error(str(exc.args[0]))
        return 2

    def progress(message: str) -> None:
        warn(f"[eval] {header_path(message)}")

    evaluation, failed = evaluate(cases, args.work, budgets=args.budgets, refresh=args.refresh, log=progress)
    for case_id, problem in failed:
        _error(f"{header_path(case_id)}: preparation failed: {problem}")
    report = redact_text(markdown_report(evaluation))  # no secret leaves the program
    try:
        write_stream(sys.stdout, report)
        if args.out is not None:
            out = Path(args.out)
            try:
                out.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OutputError(f"cannot write {header_path(str(out))}: {exc.strerror or exc}") from exc
            write_file(out / "eval.md", report)
            chart = io.BytesIO()
            coverage_chart(evaluation, chart)
            write_file(out / "coverage.png", chart.getvalue())
    except OutputError as exc:
        _error(str(exc))
        return 1
    return 1 if failed else 0


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
    parser.add_argument(
        "--cases", type=Path, default=DEFAULT_CASES, metavar="FILE", help="cases file (default %(default)s)"
    )
    parser.add_argument(
        "--case",
        action="append",
        default=None,
        metavar="ID",
        help="evaluate this case (repeatable; default all)",
    )
    parser.add_argument(
        "--budgets",
        type=_budgets,
        default=DEFAULT_BUDGETS,
        metavar="N,N,...",
        help="token budgets (default 2000,8000,32000)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, metavar="DIR", help="also write DIR/eval.md and DIR/coverage.png"
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
    parser.set_defaults(run=run_eval)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``repo-context eval`` on its own: ``python -m repo_context.evaluation [OPTIONS]``."""
    parser = argparse.ArgumentParser(prog="repo-context")
    add_eval_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["eval", *(sys.argv[1:] if argv is None else argv)])
    status: int = args.run(args)
    return status

