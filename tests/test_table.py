"""The columnar path: ``build_table`` (Rust) against ``reference_build_table`` (pure Python over
pyarrow, one ``reference.build`` per group), and against ``build`` group by group.

Inputs come as pyarrow tables of several chunks, with every accepted column type (``utf8``,
``large_utf8``, ``string_view``, dictionary strings; any integer type; float32/float64 scores),
and as Polars data frames; invalid tables may hold a string cell that is not UTF-8 (as Parquet or
a C data producer can hand over). Invalid inputs must raise the same error type with the same
index, field, problem and message.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from bugcontext import InvalidCandidateError, InvalidInputError, TableResult, build_table
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")

TABLE_SETTINGS = settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

PATHS = ["a.py", "./a.py", "src/b.py", "src//b.py/", "c/d.py", "ü/ß.py", "x\\y.py", "/abs.py", "a/../b", ""]
VALID_PATHS = PATHS[:6]
CONTENTS = ["", "x", "héllo\n", "日本語", "emoji 🚀\nline", "a" * 30]
REASONS = ["failure", "reference", "search"]
STRING_TYPES = ["string", "large_string", "string_view", "dictionary"]
INT_RANGES = {
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint8": (0, 255),
}


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    try:
        return ("ok", fn(*args, **kwargs))
    except InvalidInputError as exc:
        return ("error", type(exc), exc.index, exc.field, exc.problem, str(exc))


def _strings(values: list[Any], kind: str) -> Any:
    if any(isinstance(v, bytes) for v in values):
        # Bytes that may not be UTF-8, as Parquet or a C data producer hands them over.
        raw = [v.encode() if isinstance(v, str) else v for v in values]
        unchecked = pa.array(raw, pa.binary()).cast(pa.string(), safe=False)
        return unchecked.dictionary_encode() if kind == "dictionary" else unchecked.cast(getattr(pa, kind)())
    if kind == "dictionary":
        return pa.array(values, pa.string()).dictionary_encode()
    return pa.array(values, getattr(pa, kind)())


def _ints(values: list[Any], kind: str) -> Any:
    return pa.array(values, getattr(pa, kind)())


@st.composite
def tables(draw: st.DrawFn, valid: bool = False, max_rows: int = 24) -> dict[str, Any]:
    """A table of candidate rows with a group key, budget and failing-files columns."""
    n = draw(st.integers(0, max_rows), label="rows")
    n_keys = draw(st.integers(1, 4), label="keys")
    contiguous = draw(st.booleans(), label="contiguous")
    keys = [draw(st.integers(0, n_keys - 1)) for _ in range(n)]
    if contiguous:
        keys.sort()
    bad = 0.0 if valid else draw(st.sampled_from([0.0, 0.02, 0.1]), label="bad")

    def maybe(good: Any, wrong: Any) -> Any:
        return draw(wrong) if bad and draw(st.floats(0, 1)) < bad else draw(good)

    rows = []
    for _ in range(n):
        start = maybe(st.integers(1, 30), st.sampled_from([0, -1, 2**31, None]))
        length = draw(st.integers(0, 8))
        end = maybe(
            st.just(None if start is None else max(start, 1) + length),
            st.sampled_from([None, 0, 2**31, 2**40]),
        )
        rows.append(
            {
                "path": maybe(st.sampled_from(VALID_PATHS), st.sampled_from([*PATHS[6:], None])),
                "start": start,
                "end": end,
                "content": maybe(st.sampled_from(CONTENTS), st.just(None)),
                "reason": maybe(st.sampled_from(REASONS), st.sampled_from(["Search", "", "nope 'x'", None])),
                "score": maybe(
                    st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0, 1e300, 7]),
                    st.sampled_from([math.nan, math.inf, -math.inf, None]),
                ),
            }
        )
    # One budget and one failing-files list per key.
    budgets = {k: draw(st.integers(0, 60)) for k in range(n_keys)}
    failing_choices = [[], ["a.py"], ["src/b.py", "./a.py"], ["c/d.py", "c/d.py"], ["nowhere.py"]]
    failing = {k: draw(st.sampled_from(failing_choices)) for k in range(n_keys)}
    budget_cells: list[Any] = [budgets[k] for k in keys]
    failure_cells: list[Any] = [failing[k] for k in keys]
    if not valid and n and draw(st.booleans(), label="bad cells"):
        at = draw(st.integers(0, n - 1))
        budget_cells[at] = draw(st.sampled_from([None, -1, 1000]))
        at = draw(st.integers(0, n - 1))
        failure_cells[at] = draw(st.sampled_from([None, ["../x"], [None], ["other.py"]]))

    # One string cell that is not UTF-8 (a path, content, reason or group key).
    hostile = (
        None if valid or not n else draw(st.sampled_from([None, None, "path", "content", "reason", "task"]))
    )
    if hostile in ("path", "content", "reason"):
        at = draw(st.integers(0, n - 1), label="hostile row")
        cell = rows[at][hostile]
        rows[at][hostile] = None if cell is None else b"\xff" + cell.encode()
    string_kind = draw(st.sampled_from(STRING_TYPES), label="strings")
    int_kind = draw(st.sampled_from(list(INT_RANGES)), label="ints")
    score_kind = draw(st.sampled_from(["float64", "float32", "int64"]), label="scores")
    key_kind = draw(st.sampled_from(["int64", "uint8", "string", "dictionary"]), label="key")
    if score_kind == "int64":
        for r in rows:
            s = r["score"]
            r["score"] = int(s) if isinstance(s, float) and math.isfinite(s) and abs(s) < 2**62 else None
            if r["score"] is None and valid:
                r["score"] = 3
    low, high = INT_RANGES[int_kind]
    for r in rows:
        for f in ("start", "end"):
            if r[f] is not None and r[f] < low:
                r[f] = low
            if r[f] is not None and r[f] > high:
                r[f] = None
    if score_kind == "float32":
        for r in rows:
            if r["score"] == 1e300:
                r["score"] = 1e30
    columns = {
        "path": _strings([r["path"] for r in rows], string_kind),
        "start": _ints([r["start"] for r in rows], int_kind),
        "end": _ints([r["end"] for r in rows], int_kind),
        "content": _strings([r["content"] for r in rows], string_kind),
        "reason": _strings([r["reason"] for r in rows], string_kind),
        "score": pa.array([r["score"] for r in rows], getattr(pa, score_kind)()),
        "task": (
            _strings(
                [f"t{k}".encode() + b"\xc3" * (hostile == "task" and i == n - 1) for i, k in enumerate(keys)],
                key_kind,
            )
            if key_kind in ("string", "dictionary")
            else _ints(keys, key_kind)
        ),
        "budget": pa.array(budget_cells, pa.int64()),
        "failing": pa.array(failure_cells, pa.list_(pa.string())),
    }
    table = pa.table(columns)
    # Several chunks.
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=3), label="cuts")))
    if n and cuts:
        bounds = [0, *cuts, n]
        table = pa.Table.from_batches(
            [b for lo, hi in itertools.pairwise(bounds) for b in table.slice(lo, hi - lo).to_batches()],
            schema=table.schema,
        )
    options = {
        "group_by": draw(st.sampled_from(["task", None]), label="group_by"),
        "budget": draw(st.sampled_from(["budget", 0, 10, 40, 10**30]), label="budget"),
        "failure_files": draw(st.sampled_from(["failing", None]), label="failure_files"),
    }
    if options["group_by"] is None:
        # Without groups a budget or failing-files column must be constant over the table.
        if options["budget"] == "budget" and len(set(budget_cells)) > 1:
            options["budget"] = 25
        if options["failure_files"] == "failing" and len({repr(c) for c in failure_cells}) > 1:
            options["failure_files"] = None
    return {"table": table, **options}


@TABLE_SETTINGS
@given(case=tables())
def test_native_equals_reference(case: dict[str, Any]) -> None:
    table = case.pop("table")
    native = _outcome(build_table, table, **case)
    ref = _outcome(reference.build_table, table, **case)
    assert native == ref


@settings(TABLE_SETTINGS, max_examples=100)
@given(case=tables(valid=True))
def test_valid_tables_build_and_polars_agrees(case: dict[str, Any]) -> None:
    pl = pytest.importorskip("polars")
    table = case.pop("table")
    native = build_table(table, **case)
    assert native == reference.build_table(table, **case)
    assert native == build_table(table, threads=1, **case)
    # The same rows as a Polars frame (its own string and chunk layout).
    frame = pl.from_arrow(table)
    via_polars = build_table(frame, **case)
    assert via_polars.decisions.drop_columns("group").equals(native.decisions.drop_columns("group"))
    assert via_polars.decisions.column("group").to_pylist() == native.decisions.column("group").to_pylist()
    assert via_polars.groups.drop_columns("group").equals(native.groups.drop_columns("group"))
    assert via_polars == reference.build_table(frame, **case)


def _group_candidates(table: Any, rows: list[int]) -> list[dict[str, Any]]:
    records = table.select(["path", "start", "end", "content", "reason", "score"]).to_pylist()
    return [records[row] for row in rows]


@settings(TABLE_SETTINGS, max_examples=80)
@given(case=tables(valid=True))
def test_each_group_decides_as_build(case: dict[str, Any]) -> None:
    """Against the per-object Rust engine, group by group."""
    table = case["table"]
    result = build_table(**case)
    decisions = result.decisions.to_pylist()
    groups: dict[Any, list[int]] = {}
    if case["group_by"] is None:
        groups[None] = list(range(table.num_rows))
    else:
        for row, key in enumerate(table.column(case["group_by"]).to_pylist()):
            groups.setdefault(key, []).append(row)
    summary = result.groups.to_pylist()
    assert [g["group"] for g in summary] == list(groups)
    for (key, rows), g in zip(groups.items(), summary, strict=True):
        budget = case["budget"]
        if isinstance(budget, str):
            budget = table.column(budget)[rows[0]].as_py() if rows else 0
        failing = None
        if case["failure_files"] and rows:
            failing = table.column(case["failure_files"])[rows[0]].as_py()
        built = bugcontext.build(
            {"candidates": _group_candidates(table, rows), "budget": budget, "failure_files": failing}
        )
        mine = [decisions[r] for r in rows]
        assert [d["index"] for d in mine] == list(range(len(rows)))
        assert all(d["group"] == key for d in mine)
        selected = sorted((d["order"], d["index"]) for d in mine if d["selected"])
        assert [i for _, i in selected] == list(built.selected)
        omitted = sorted(
            (d["rank"], d["index"], d["omission"], d["overlaps"]) for d in mine if not d["selected"]
        )
        assert omitted == [(o.rank, o.index, o.reason, o.overlaps) for o in built.omitted]
        assert g["used"] == built.used
        assert g["truncated"] == built.truncated
        assert g["candidates"] == len(rows)
        assert g["first_row"] == (rows[0] if rows else 0)
        assert sum(d["cost"] for d in mine if d["selected"]) == built.used


def _table(**columns: Any) -> Any:
    base = {
        "path": ["a.py", "a.py", "b.py"],
        "start": [1, 5, 1],
        "end": [10, 12, 3],
        "content": ["x" * 10, "yé" * 4, "z" * 100],
        "reason": ["reference", "search", "failure"],
        "score": [1.0, 2.0, 0.5],
        "task": ["t1", "t2", "t1"],
    }
    base.update(columns)
    return pa.table(base)


def test_decisions_and_groups_exact() -> None:
    result = build_table(_table(), budget=50, group_by="task")
    assert result.decisions.column_names == [
        "group",
        "index",
        "rank",
        "selected",
        "order",
        "omission",
        "overlaps",
        "cost",
    ]
    assert result.decisions.to_pylist() == [
        {"group": "t1", "index": 0, "rank": 0, "selected": True, "order": 0, "omission": None,
         "overlaps": None, "cost": 10},
        {"group": "t2", "index": 0, "rank": 0, "selected": True, "order": 0, "omission": None,
         "overlaps": None, "cost": 8},
        {"group": "t1", "index": 1, "rank": 1, "selected": False, "order": None, "omission": "budget",
         "overlaps": None, "cost": 100},
    ]  # fmt: skip
    assert result.groups.to_pylist() == [
        {"group": "t1", "first_row": 0, "candidates": 2, "selected": 1, "omitted_overlap": 0,
         "omitted_budget": 1, "used": 10, "budget": 50, "truncated": True},
        {"group": "t2", "first_row": 1, "candidates": 1, "selected": 1, "omitted_overlap": 0,
         "omitted_budget": 0, "used": 8, "budget": 50, "truncated": False},
    ]  # fmt: skip
    # The result exports its decisions through the Arrow PyCapsule interface.
    assert pa.table(result).equals(result.decisions)
    pl = pytest.importorskip("polars")
    assert pl.DataFrame(result).to_dicts() == pl.from_arrow(result.decisions).to_dicts()


def test_overlap_names_the_blocker_within_the_group() -> None:
    table = _table(task=["t", "t", "t"], start=[1, 5, 1], end=[10, 12, 3], path=["a.py", "./a.py", "b.py"])
    d = build_table(table, budget=1000, group_by="task").decisions.to_pylist()
    # Rank: the reference row 0, the failure row 2, the search row 1, which hits row 0.
    assert [(r["rank"], r["selected"], r["omission"], r["overlaps"]) for r in d] == [
        (0, True, None, None),
        (2, False, "overlap", 0),
        (1, True, None, None),
    ]


def test_inputs_record_batch_reader_and_single_batch() -> None:
    table = _table()
    expected = build_table(table, budget=50, group_by="task")
    assert build_table(table.to_batches()[0], budget=50, group_by="task") == expected
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    assert build_table(reader, budget=50, group_by="task") == expected
    assert isinstance(expected, TableResult)


def test_no_group_by_is_one_build_and_keys_are_null() -> None:
    result = build_table(_table(), budget=1000)
    assert result.decisions.column("group").null_count == 3
    assert result.decisions.column("index").to_pylist() == [0, 1, 2]
    assert result.groups.num_rows == 1
    empty = build_table(_table().slice(0, 0), budget=5)
    assert empty.decisions.num_rows == 0
    assert empty.groups.to_pylist() == [
        {"group": None, "first_row": 0, "candidates": 0, "selected": 0, "omitted_overlap": 0,
         "omitted_budget": 0, "used": 0, "budget": 5, "truncated": False}
    ]  # fmt: skip
    assert build_table(_table().slice(0, 0), budget=5, group_by="task").groups.num_rows == 0


@pytest.mark.parametrize("build", [build_table, reference.build_table], ids=["native", "reference"])
def test_null_cells_are_rejected_naming_row_and_group(build: Any) -> None:
    table = _table(start=[1, None, 1])
    with pytest.raises(InvalidCandidateError) as info:
        build(table, budget=50, group_by="task")
    assert (info.value.index, info.value.field) == (1, "start")
    assert str(info.value) == "candidate 1: field 'start': is null (group 't2', row 0 of the group)"
    table = _table(reason=["reference", "search", "Failure"])
    with pytest.raises(InvalidCandidateError) as info:
        build(table, budget=50, group_by="task")
    assert str(info.value) == (
        "candidate 2: field 'reason': must be one of 'failure', 'reference', 'search', got 'Failure'"
        " (group 't1', row 1 of the group)"
    )
    with pytest.raises(InvalidCandidateError) as info:
        build(_table(task=["t1", None, "t1"]), budget=50, group_by="task")
    assert str(info.value) == "candidate 1: field 'task': is null"


@pytest.mark.parametrize("build", [build_table, reference.build_table], ids=["native", "reference"])
def test_first_error_in_table_order_across_groups(build: Any) -> None:
    # Row 2 (group t1) is bad and so is row 1 (group t2): row 1 is reported.
    table = _table(end=[10, 0, 0])
    with pytest.raises(InvalidCandidateError) as info:
        build(table, budget=50, group_by="task")
    assert info.value.index == 1
    assert info.value.problem == "must be >= start (5), got 0 (group 't2', row 0 of the group)"


@pytest.mark.parametrize("build", [build_table, reference.build_table], ids=["native", "reference"])
def test_budget_column_must_be_constant_within_a_group(build: Any) -> None:
    table = _table(limit=pa.array([10, 7, 11], pa.int16()))
    with pytest.raises(InvalidCandidateError) as info:
        build(table, budget="limit", group_by="task")
    assert str(info.value) == (
        "candidate 2: field 'limit': must be the same in every row of a group, got 11 here and 10"
        " in row 0 of the group (group 't1', row 1 of the group)"
    )
    ok = build(_table(limit=pa.array([10, 7, 10], pa.int16())), budget="limit", group_by="task")
    assert ok.groups.column("budget").to_pylist() == [10, 7]


@pytest.mark.parametrize("build", [build_table, reference.build_table], ids=["native", "reference"])
def test_failure_files_column(build: Any) -> None:
    failing = pa.array([["b.py"], [], ["./b.py"]], pa.list_(pa.string()))
    with pytest.raises(InvalidCandidateError) as info:
        build(_table(failing=failing), budget=1000, group_by="task", failure_files="failing")
    assert info.value.problem == "must be the same in every row of a group (group 't1', row 1 of the group)"
    failing = pa.array([["b.py"], [], ["b.py"]], pa.list_(pa.string()))
    d = build(_table(failing=failing), budget=1000, group_by="task", failure_files="failing").decisions
    # In group t1, b.py (row 2) is the failing file: ranked first.
    assert d.column("rank").to_pylist() == [1, 0, 0]
    failing = pa.array([["../b.py"], [], ["../b.py"]], pa.list_(pa.string()))
    with pytest.raises(InvalidCandidateError) as info:
        build(_table(failing=failing), budget=1000, group_by="task", failure_files="failing")
    assert str(info.value) == (
        "candidate 0: field 'failing': item 0: must not contain a '..' segment"
        " (group 't1', row 0 of the group)"
    )


@pytest.mark.parametrize("build", [build_table, reference.build_table], ids=["native", "reference"])
@pytest.mark.parametrize(
    ("change", "kwargs", "field", "problem"),
    [
        ({"start": pa.array([1.0, 2.0, 3.0])}, {}, "start", "must be an integer column, not double"),
        ({"score": pa.array(["1", "2", "3"])}, {}, "score",
         "must be an integer or float32/float64 column, not string"),
        ({"path": pa.array([1, 2, 3])}, {}, "path", "must be a string column, not int64"),
        ({}, {"group_by": "nope"}, "nope", "is not a column of the table"),
        ({}, {"budget": "task"}, "task", "must be an integer column, not string"),
        ({}, {"failure_files": "path"}, "path", "must be a list<string> column, not string"),
        ({}, {"budget": -1}, "budget", "must be >= 0, got -1"),
        ({}, {"budget": 1.5}, "budget", "must be an int or a column name, not float"),
        ({}, {"cost": {"template": "xml"}}, "cost.template",
         "is not supported by build_table: a row costs its content alone"),
        ({}, {"threads": 0}, "threads", "must be >= 1, got 0"),
    ],
)  # fmt: skip
def test_column_and_argument_errors(
    build: Any, change: dict[str, Any], kwargs: dict[str, Any], field: str, problem: str
) -> None:
    options = {"budget": 10, **kwargs}
    with pytest.raises(InvalidInputError) as info:
        build(_table(**change), **options)
    assert (type(info.value), info.value.index, info.value.field, info.value.problem) == (
        InvalidInputError,
        None,
        field,
        problem,
    )


def test_missing_column_and_non_arrow_input() -> None:
    with pytest.raises(InvalidInputError, match="input field 'content': is not a column of the table"):
        build_table(_table().drop_columns("content"), budget=1)
    with pytest.raises(InvalidInputError, match="must export the Arrow PyCapsule interface"):
        build_table([{"path": "a.py"}], budget=1)


def test_token_costs_equal_the_reference() -> None:
    pytest.importorskip("tiktoken")
    table = _table(content=["def f(x):\n    return x\n", "héllo wörld " * 3, "日本語のテキスト"])
    for cost in ({"unit": "tokens"}, {"unit": "tokens", "encoding": "cl100k_base"}):
        native = build_table(table, budget=12, group_by="task", cost=cost)
        assert native == reference.build_table(table, budget=12, group_by="task", cost=cost)
    counter = bugcontext.TokenCounter("o200k_base")
    costs = build_table(table, budget=12, cost={"unit": "tokens"}).decisions.column("cost").to_pylist()
    assert costs == list(counter.count(table.column("content").to_pylist()))


def test_input_is_not_mutated_and_content_is_not_in_the_output() -> None:
    table = _table()
    before = table.to_pylist()
    result = build_table(table, budget=20, group_by="task")
    assert table.to_pylist() == before
    assert "content" not in result.decisions.column_names
