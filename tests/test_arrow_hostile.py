"""Hostile Arrow data: ``build_table`` checks every string cell it reads before reading it.

The C data interface hands buffers that the reader trusts, and Parquet does not check UTF-8, so a
producer can give any bytes, offsets, views or dictionary indices. Both engines must refuse the
same cell with the same ``InvalidCandidateError`` (column, group, row, message), and never let a
Rust panic (a ``BaseException``) cross into Python.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from bugcontext import InvalidCandidateError, InvalidInputError, build_table
from bugcontext.core.errors import InternalError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ENGINES = pytest.mark.parametrize("build", [build_table, reference.build_table], ids=["native", "reference"])
STRING_TYPES = ["string", "large_string", "string_view", "dictionary"]
NOT_UTF8 = "is not valid UTF-8"
OUT_OF_BOUNDS = "is not valid Arrow data: its offsets point outside the column's data"


def strings(values: list[bytes | None], kind: str) -> Any:
    """A string column holding ``values`` byte for byte, UTF-8 or not (pyarrow's unchecked
    cast: the bytes a Parquet file or a C data producer can hand over)."""
    array = pa.array(values, pa.binary()).cast(pa.string(), safe=False)
    if kind == "dictionary":
        return array.dictionary_encode()
    return array.cast(getattr(pa, kind)())


def table(**columns: Any) -> Any:
    base: dict[str, Any] = {
        "path": ["a.py", "a.py", "b.py"],
        "start": [1, 5, 1],
        "end": [10, 12, 3],
        "content": ["x" * 10, "yé" * 4, "z" * 100],
        "reason": ["reference", "search", "failure"],
        "score": [1.0, 2.0, 0.5],
        "task": ["t1", "t2", "t1"],
        "failing": [["a.py"], [], ["a.py"]],
    }
    base.update(columns)
    return pa.table(base)


def outcome(build: Any, data: Any, **options: Any) -> tuple[Any, ...]:
    try:
        return ("ok", build(data, **options))
    except InvalidInputError as exc:
        return ("error", type(exc), exc.index, exc.field, exc.problem, str(exc))


def both(data: Any, **options: Any) -> tuple[Any, ...]:
    """The outcome of both engines, asserted equal."""
    native = outcome(build_table, data, **options)
    assert native == outcome(reference.build_table, data, **options)
    return native


@pytest.mark.parametrize("kind", STRING_TYPES)
@pytest.mark.parametrize("column", ["path", "content", "reason"])
def test_invalid_utf8_in_a_candidate_column_names_column_group_and_row(column: str, kind: str) -> None:
    values = [v.encode() for v in table().column(column).to_pylist()]
    values[2] = b"\xff" + values[2]
    data = table(**{column: strings(values, kind)})
    got = both(data, budget=50, group_by="task")
    assert got[:5] == (
        "error",
        InvalidCandidateError,
        2,
        column,
        f"{NOT_UTF8} (group 't1', row 1 of the group)",
    )
    assert got[5] == f"candidate 2: field {column!r}: {NOT_UTF8} (group 't1', row 1 of the group)"


@pytest.mark.parametrize("kind", STRING_TYPES)
def test_invalid_utf8_in_the_group_key_names_the_row(kind: str) -> None:
    data = table(task=strings([b"t1", b"t\xc3", b"t1"], kind))
    got = both(data, budget=50, group_by="task")
    assert got[1:] == (InvalidCandidateError, 1, "task", NOT_UTF8, f"candidate 1: field 'task': {NOT_UTF8}")


def test_a_null_key_before_an_invalid_one_is_reported_first() -> None:
    data = table(task=strings([b"t1", None, b"\xff"], "string"))
    assert both(data, budget=50, group_by="task")[4] == "is null"
    data = table(task=strings([b"\xff", None, b"t1"], "string"))
    assert both(data, budget=50, group_by="task")[2:5] == (0, "task", NOT_UTF8)


@pytest.mark.parametrize("kind", ["string", "large_string", "string_view"])
def test_invalid_utf8_in_a_failing_file_names_the_item(kind: str) -> None:
    items = strings([b"a.py", b"\xfe.py", b"a.py"], kind)
    failing = pa.ListArray.from_arrays(pa.array([0, 1, 1, 3], pa.int32()), items)
    got = both(table(failing=failing), budget=50, group_by="task", failure_files="failing")
    assert got[1:5] == (
        InvalidCandidateError,
        2,
        "failing",
        f"item 0: {NOT_UTF8} (group 't1', row 1 of the group)",
    )


def test_the_first_bad_cell_in_table_order_then_column_order_is_reported() -> None:
    # Invalid data is found before any other row check (a null start in row 0 comes later).
    data = table(
        start=[None, 5, 1],
        content=strings([b"x", b"\xff", b"z"], "string"),
        path=strings([b"a.py", b"\xff", b"b.py"], "string"),
    )
    got = both(data, budget=50, group_by="task")
    assert got[2:5] == (1, "path", f"{NOT_UTF8} (group 't2', row 0 of the group)")


def test_bytes_no_cell_reads_are_not_checked() -> None:
    # Invalid bytes under a null cell, in a dictionary value no row references, outside a slice.
    base = table().select(["path", "start", "end", "content", "reason", "score", "task"])
    reason = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, 2], pa.int32()), strings([b"reference", b"search", b"failure", b"\xff"], "string")
    )
    sliced = strings([b"\xff", b"a.py", b"a.py", b"b.py", b"\xff"], "string").slice(1, 3)
    data = base.set_column(4, "reason", reason).set_column(0, "path", sliced)
    got = both(data, budget=50, group_by="task")
    assert got[0] == "ok"
    assert got[1] == build_table(base, budget=50, group_by="task")
    keys = strings([b"t1", b"\xff", b"t1"], "string")
    nulls = pa.array([True, False, True]).buffers()[1]
    keyed = pa.Array.from_buffers(pa.string(), 3, [nulls, *keys.buffers()[1:]])
    assert both(base.set_column(6, "task", keyed), budget=50, group_by="task")[2:5] == (1, "task", "is null")


def test_a_column_no_build_reads_is_not_checked() -> None:
    plain = table().drop_columns(["failing"])
    data = plain.append_column("notes", strings([b"\xff", b"ok", b"\xfe"], "string"))
    got = both(data, budget=50, group_by="task")
    assert got[0] == "ok"
    assert got[1] == build_table(plain, budget=50, group_by="task")


@ENGINES
def test_dictionary_index_out_of_range_is_not_null(build: Any) -> None:
    reason = pa.DictionaryArray.from_arrays(
        pa.array([0, 7, -1], pa.int32()), pa.array(["reference", "search"]), safe=False
    )
    with pytest.raises(InvalidCandidateError) as info:
        build(table(reason=reason), budget=50, group_by="task")
    assert str(info.value) == (
        "candidate 1: field 'reason': has dictionary index 7, out of range for 2 dictionary values"
        " (group 't2', row 0 of the group)"
    )
    key = pa.DictionaryArray.from_arrays(pa.array([0, 0, 3], pa.int8()), pa.array(["t1"]), safe=False)
    with pytest.raises(InvalidCandidateError) as info:
        build(table(task=key), budget=50, group_by="task")
    assert (
        str(info.value)
        == "candidate 2: field 'task': has dictionary index 3, out of range for 1 dictionary values"
    )


def offsets_array(kind: str, offsets: list[int], data: bytes, n: int) -> Any:
    code = "<" + ("i" if kind == "string" else "q") * len(offsets)
    buffers = [None, pa.py_buffer(struct.pack(code, *offsets)), pa.py_buffer(data)]
    return pa.Array.from_buffers(getattr(pa, kind)(), n, buffers)


@pytest.mark.parametrize("kind", ["string", "large_string"])
def test_offsets_outside_the_data_are_refused(kind: str) -> None:
    # Row 1 ends past the last offset (the data's length), row 2 runs backwards.
    path = offsets_array(kind, [0, 4, 20, 14], b"a.pyb.pyxxxxxx", 3)
    got = both(table(path=path), budget=50, group_by="task")
    assert got[2:5] == (1, "path", f"{OUT_OF_BOUNDS} (group 't2', row 0 of the group)")
    # Row 1 runs backwards (4..2).
    path = offsets_array(kind, [0, 4, 2, 6], b"a.pyb.", 3)
    got = both(table(path=path), budget=50, group_by="task")
    assert got[2:5] == (1, "path", f"{OUT_OF_BOUNDS} (group 't2', row 0 of the group)")


def view(length: int, prefix: bytes, buffer: int, offset: int) -> bytes:
    return struct.pack("<i4sii", length, prefix, buffer, offset)


def test_string_views_outside_their_buffers_are_refused() -> None:
    data = b"reference-and-more" + b"searching-for-more"
    inline = struct.pack("<i12s", 7, b"failure")
    views = view(18, b"refe", 0, 0) + view(18, b"sear", 0, 30) + inline
    reason = pa.Array.from_buffers(pa.string_view(), 3, [None, pa.py_buffer(views), pa.py_buffer(data)])
    got = both(table(reason=reason), budget=50, group_by="task")
    assert got[2:5] == (1, "reason", f"{OUT_OF_BOUNDS} (group 't2', row 0 of the group)")
    views = view(18, b"refe", 0, 0) + view(18, b"sear", 3, 0) + inline
    reason = pa.Array.from_buffers(pa.string_view(), 3, [None, pa.py_buffer(views), pa.py_buffer(data)])
    assert both(table(reason=reason), budget=50, group_by="task")[2:5] == (1, "reason", got[4])
    bad = struct.pack("<i12s", 3, b"\xffab")
    reason = pa.Array.from_buffers(
        pa.string_view(), 3, [None, pa.py_buffer(view(18, b"refe", 0, 0) + bad + inline), pa.py_buffer(data)]
    )
    got = both(table(reason=reason), budget=50, group_by="task")
    assert got[2:5] == (1, "reason", f"{NOT_UTF8} (group 't2', row 0 of the group)")


def test_list_offsets_outside_the_items_are_refused() -> None:
    items = pa.array(["a.py", "a.py"])
    offsets = pa.py_buffer(struct.pack("<4i", 0, 1, 1, 2))
    good = pa.Array.from_buffers(pa.list_(pa.string()), 3, [None, offsets], children=[items])
    assert both(table(failing=good), budget=50, group_by="task", failure_files="failing")[0] == "ok"
    # The child is longer than the offsets reach, so pyarrow's basic check passes.
    offsets = pa.py_buffer(struct.pack("<4i", 0, 1, 0, 2))
    bad = pa.Array.from_buffers(pa.list_(pa.string()), 3, [None, offsets], children=[items])
    got = both(table(failing=bad), budget=50, group_by="task", failure_files="failing")
    assert got[2:5] == (1, "failing", f"{OUT_OF_BOUNDS} (group 't2', row 0 of the group)")


@ENGINES
def test_invalid_utf8_from_a_parquet_file(build: Any, tmp_path: Path) -> None:
    # Parquet does not check UTF-8: a string column written from unchecked bytes reads back as is.
    source = tmp_path / "hostile.parquet"
    pq.write_table(table(reason=strings([b"reference", b"search", b"\xfffailure"], "string")), source)
    data = pq.read_table(source)
    assert pa.types.is_string(data.schema.field("reason").type)
    with pytest.raises(InvalidCandidateError) as info:
        build(data, budget=50, group_by="task")
    assert str(info.value) == f"candidate 2: field 'reason': {NOT_UTF8} (group 't1', row 1 of the group)"


def test_no_group_by_names_no_group() -> None:
    got = both(table(content=strings([b"x", b"y", b"\xc3("], "large_string")), budget=50)
    assert got[5] == f"candidate 2: field 'content': {NOT_UTF8}"


def test_a_panic_becomes_an_internal_error_not_a_base_exception() -> None:
    with pytest.raises(InternalError) as info:
        bugcontext._core._panic("boom")
    assert isinstance(info.value, RuntimeError)
    assert str(info.value) == "bugcontext: internal error in _panic: boom (a bug: please report it)"


def entry_points(source: str) -> list[tuple[str, str]]:
    """``(name, first body line that is not a comment)`` of every ``#[pyfunction]`` and every method of a
    ``#[pymethods]`` block in ``source``."""
    found = []
    lines = source.splitlines()
    in_methods = False
    for i, line in enumerate(lines):
        if line.startswith("#[pymethods]"):
            in_methods = True
        elif in_methods and line == "}":
            in_methods = False
        is_fn = line.startswith("fn ") or (in_methods and line.startswith("    fn "))
        exposed = in_methods or any(lines[k].startswith("#[pyfunction]") for k in range(max(i - 4, 0), i))
        if is_fn and exposed:
            name = line.split("fn ", 1)[1].split("(", 1)[0].split("<", 1)[0]
            j = i
            while not lines[j].rstrip().endswith("{"):
                j += 1
            body = (text.strip() for text in lines[j + 1 :])
            found.append((name, next(text for text in body if not text.startswith("//"))))
    return found


def test_every_entry_point_of_the_extension_runs_in_the_guard() -> None:
    sources = sorted((Path(__file__).parent.parent / "src" / "python").glob("*.rs"))
    if not sources:
        pytest.skip("the Rust sources are not beside the tests")
    # __traverse__ may not raise (the garbage collector calls it); __match_args__ is a constant.
    exempt = {"__traverse__", "__match_args__"}
    points = [(path.name, *point) for path in sources for point in entry_points(path.read_text())]
    assert len(points) > 40
    unguarded = [p for p in points if p[1] not in exempt and not p[2].startswith("guard(")]
    assert unguarded == []


def corrupted(kind: str, offsets: list[int], later: list[int], data: bytes) -> tuple[Any, Any]:
    """A string column made valid from ``offsets``, and a function that turns its offsets
    buffer into ``later`` in place: memory the producer still holds and changes after the
    export (pyarrow checks a column and a table when they are made, not when they are read)."""
    code = f"<{len(offsets)}{'q' if kind == 'large_string' else 'i'}"
    memory = bytearray(struct.pack(code, *offsets))
    buffers = [None, pa.py_buffer(memory), pa.py_buffer(data)]
    array = pa.Array.from_buffers(getattr(pa, kind)(), len(offsets) - 1, buffers)

    def corrupt() -> None:
        memory[:] = struct.pack(code, *later)

    return array, corrupt


@pytest.mark.parametrize("column", ["path", "content", "reason", "task"])
@pytest.mark.parametrize("kind", ["string", "large_string"])
def test_a_last_offset_past_the_data_is_refused_before_any_cell_is_read(column: str, kind: str) -> None:
    # The C data interface carries no buffer lengths: the reader takes the data to be as long as
    # the last offset says, so a last offset past the real data would be read outside its memory
    # (a crash, once). Arrow's structural check refuses the chunk first, by column, in both engines.
    values = {
        "path": b"a.pyb.pyc.py",
        "content": b"xxxxyyyyzzzz",
        "reason": b"failsearfail",
        "task": b"t1t1t2t2t1t1",
    }
    data = values[column]
    third = len(data) // 3
    hostile, corrupt = corrupted(kind, [0, third, 2 * third, len(data)], [0, third, 2 * third, 1 << 30], data)
    one = table(**{column: hostile})
    corrupt()
    got = both(one, budget=50, group_by="task")
    assert got[:4] == ("error", InvalidInputError, None, column)
    assert got[4].startswith("chunk 0 is not valid Arrow data: ")
    assert "larger than values array" in got[4]
    # A later chunk is named by its number.
    hostile, corrupt = corrupted(kind, [0, third, 2 * third, len(data)], [0, third, 2 * third, 1 << 30], data)
    fresh = pa.array(table().column(column).to_pylist(), getattr(pa, kind)())
    two = pa.concat_tables([table(**{column: fresh}), table(**{column: hostile})])
    corrupt()
    got = both(two, budget=50, group_by="task")
    assert got[:4] == ("error", InvalidInputError, None, column)
    assert got[4].startswith("chunk 1 is not valid Arrow data: ")
