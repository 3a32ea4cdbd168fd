"""A context option of the wrong type is an ``InvalidInputError`` naming it, before any work.

``Workspace.context(log, test=123)`` raised ``AttributeError`` ('int' object has no attribute
'partition'), ``query=["x"]`` and ``issue=b"x"`` a ``TypeError`` of the regular expression
module, ``junit_xml=5`` ``TypeError: object of type 'int' has no len()``; ``engine=5`` was a
bare ``ValueError``, and ``deadline=float("nan")`` was taken (no call is ever past it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bugcontext
import pytest
from bugcontext.core.errors import InvalidInputError
from builders import ratios_log, ratios_repo


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"test": 123}, "test"),
        ({"test": ["tests/test_ratios.py::test_mean_ratio"]}, "test"),
        ({"query": ["mean"]}, "query"),
        ({"query": b"mean"}, "query"),
        ({"issue": b"the mean is wrong"}, "issue"),
        ({"issue": 3}, "issue"),
        ({"junit_xml": 5}, "junit_xml"),
        ({"junit_xml": ["<testsuite/>"]}, "junit_xml"),
        ({"engine": 5}, "engine"),
        ({"engine": "rust"}, "engine"),
        ({"deadline": float("nan")}, "deadline"),
        ({"deadline": "soon"}, "deadline"),
        ({"deadline": True}, "deadline"),
    ],
)
def test_a_wrong_type_is_an_invalid_input_error_naming_the_option(
    tmp_path: Path, options: dict[str, Any], field: str
) -> None:
    ws = bugcontext.Workspace(ratios_repo(tmp_path), cache=False)
    with pytest.raises(InvalidInputError) as caught:
        ws.context(ratios_log(), **options)
    assert caught.value.field == field and str(caught.value).startswith(f"input field {field!r}: ")
    assert len(str(caught.value)) < 300


def test_the_one_call_form_checks_them_too(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError) as caught:
        bugcontext.context(ratios_repo(tmp_path), ratios_log(), cache=False, query=5)
    assert caught.value.field == "query"


def test_the_right_types_still_work(tmp_path: Path) -> None:
    ws = bugcontext.Workspace(ratios_repo(tmp_path), cache=False)
    done = ws.context(
        ratios_log(), test="tests/test_ratios.py::test_mean_ratio", query="mean", issue="wrong", deadline=1e18
    )
    assert done.section


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (123, "must be a str or os.PathLike naming a folder, not int"),
        (None, "must be a str or os.PathLike naming a folder, not NoneType"),
        (b"repo", "must be a str or os.PathLike naming a folder, not bytes"),
        ("re\x00po", "must not contain a NUL character"),
        (Path("re\x00po"), "must not contain a NUL character"),
    ],
)
def test_a_folder_argument_of_the_wrong_kind_is_an_invalid_input_error_naming_it(
    tmp_path: Path, value: Any, problem: str
) -> None:
    """``Workspace(123)`` was a ``TypeError`` of ``pathlib``, a NUL a bare ``ValueError``."""
    repo = ratios_repo(tmp_path)
    for make, field in [
        (lambda: bugcontext.Workspace(value), "root"),
        (lambda: bugcontext.Workspace(repo, cache_dir=value), "cache_dir"),
        (lambda: bugcontext.context(value, ratios_log(), cache=False), "repo"),
        (lambda: bugcontext.context(repo, ratios_log(), cache_dir=value), "cache_dir"),
    ]:
        if value is None and field == "cache_dir":
            continue  # None is the default cache folder
        with pytest.raises(InvalidInputError) as caught:
            make()
        assert (caught.value.field, caught.value.problem) == (field, problem)
