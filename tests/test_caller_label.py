"""A caller of the failing function is labelled as a caller, not as a referenced definition.

The label follows the candidate's ``source_id``: a ``reference`` candidate whose ``source_id``
is exactly ``CALLER_SOURCE`` is ``"caller of the failing function"``; its reason stays
``reference``. Both renderers and both engines (costing the rendered block) agree.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import bugcontext
import pytest
from bugcontext import _core
from bugcontext.core.composer import (
    CALLER_LABEL,
    CALLER_SOURCE,
    label,
    parse_xml_section,
    render,
    render_block,
)
from bugcontext.core.cost import Cost
from bugcontext.job.sources import gather
from hostile import EqualStr


@pytest.mark.parametrize(
    ("reason", "failing", "source_id", "expected"),
    [
        ("reference", False, CALLER_SOURCE, "caller of the failing function"),
        ("reference", True, CALLER_SOURCE, "caller of the failing function in the failing file"),
        ("reference", False, "reference", "referenced definition"),
        ("reference", False, CALLER_SOURCE + " ", "referenced definition"),
        ("reference", False, EqualStr(CALLER_SOURCE), "caller of the failing function"),
        ("reference", False, EqualStr("other"), "referenced definition"),
        ("search", False, CALLER_SOURCE, "search hit"),
        ("failure", True, CALLER_SOURCE, "failure evidence in the failing file"),
        ("reference", False, 3, "referenced definition"),
    ],
)
def test_label(reason: str, failing: bool, source_id: object, expected: str) -> None:
    assert label(reason, failing, source_id) == expected
    for template in ("markdown", "xml"):
        args = ("a.py", 1, 2, "x\n", reason)
        python = render_block(
            *args, failing=failing, template=template, line_numbers=False, source_id=source_id
        )
        rust = _core.render_block(
            *args, failing=failing, template=template, line_numbers=False, source_id=source_id
        )
        assert python == rust
        assert expected in python


def test_the_xml_reader_takes_the_caller_label() -> None:
    text = render_block(
        "a.py",
        1,
        1,
        "x",
        "reference",
        failing=False,
        template="xml",
        line_numbers=False,
        source_id=CALLER_SOURCE,
    )
    (item,) = parse_xml_section(text)
    assert item["label"] == CALLER_LABEL and item["reason"] == "reference"


@pytest.mark.parametrize("engine", ["native", "reference"])
def test_the_caller_label_is_costed(engine: str) -> None:
    build = bugcontext.build if engine == "native" else bugcontext.reference.build
    candidate = {"path": "a.py", "start": 1, "end": 1, "content": "x\n", "reason": "reference", "score": 1}
    cost = Cost(unit="chars", template="markdown")
    plain = build({"candidates": [candidate], "max_chars": 10_000, "cost": cost})
    caller = build(
        {"candidates": [{**candidate, "source_id": CALLER_SOURCE}], "max_chars": 10_000, "cost": cost}
    )
    assert caller.used - plain.used == len(CALLER_LABEL) - len("referenced definition")
    assert render(caller).startswith(f"### a.py:1-1 ({CALLER_LABEL})\n")
    assert len(render(caller)) == caller.used


def test_gathered_callers_carry_the_caller_source(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "conv.py").write_text("def to_char(n):\n    return chr(n)\n")
    (tmp_path / "pkg" / "use.py").write_text(
        "from pkg.conv import to_char\n\n\ndef spell(codes):\n    return ''.join(to_char(c) for c in codes)\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_conv.py").write_text(
        "from pkg.conv import to_char\n\n\ndef test_big():\n    assert to_char(0x110000)\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rA",
            "--tb=long",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "tests",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    log = proc.stdout
    found = gather(tmp_path, log)
    callers = [w for w in found.candidates if w.source == CALLER_SOURCE]
    assert [(w.path, w.start, w.end, w.reason) for w in callers] == [("pkg/use.py", 4, 5, "reference")]
