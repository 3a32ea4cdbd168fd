"""Fuzz target: rendering a build result (``bugcontext.render``, ``composer``).

The input is a build input, read as in ``fuzz_build`` (JSON, else drawn from the bytes, with
valid values only);
a valid input's result is rendered in every template, order and line-number choice.
Invariants:

* the XML section read back with ``parse_xml_section`` gives each block's exact path,
  line range, reason, label and content (numbered when asked), in render order;
* the Markdown section splits back into its blocks: each header names the item's path
  (control characters as ``\\uXXXX``), line range and label, each fence is longer than any
  backtick run of the body, and the body is the content (a final newline added when missing);
* the section is the concatenation of ``plan``'s blocks, and the Rust renderer
  (``_core.render_block``) gives every block byte for byte;
* with a template in the result's cost, ``used`` is the cost of ``render(result)`` (its
  characters, or its tokens in the cost's encoding): the section the budget counted;
* no error but the documented ones; bounded time per input byte.

Run: ``python tests/fuzz/fuzz_render.py [libFuzzer arguments] [corpus folders]``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bugcontext
from _common import fuzz_main
from bugcontext import _core
from bugcontext.core import composer
from fuzz_build import build_both, warm_up  # imports bugcontext, instrumented


def _markdown_blocks(section: str) -> list[dict[str, Any]]:
    """Split a Markdown section into ``{"header", "lang", "body"}`` blocks."""
    blocks = []
    at = 0
    while at < len(section):
        header_end = section.index("\n", at)
        header = section[at:header_end]
        assert header.startswith("### "), header
        fence_end = section.index("\n", header_end + 1)
        fence_line = section[header_end + 1 : fence_end]
        ticks = len(fence_line) - len(fence_line.lstrip("`"))
        assert ticks >= 3, fence_line
        closing = "\n" + "`" * ticks + "\n\n"
        body_end = section.index(closing, fence_end)
        body = section[fence_end + 1 : body_end + 1]
        longest = max((len(run) for run in composer._BACKTICKS.findall(body)), default=0)
        assert longest < ticks, (longest, ticks)
        blocks.append({"header": header[4:], "lang": fence_line[ticks:], "body": body})
        at = body_end + len(closing)
    return blocks


def _check_result(result: bugcontext.BuildResult) -> None:
    failing = set(result.failure_files)
    for template in composer.TEMPLATES:
        for line_numbers in (False, True):
            for order in composer.ORDERS:
                blocks = composer.plan(result, template=template, line_numbers=line_numbers, order=order)
                section = bugcontext.render(result, template, line_numbers, order)
                assert section == "".join(block.text for block in blocks)
                items = [result.items[block.rank] for block in blocks]
                assert sorted(block.rank for block in blocks) == list(range(len(result.items)))
                for item, block in zip(items, blocks, strict=True):
                    native = _core.render_block(
                        item.path,
                        item.start,
                        item.end,
                        item.content,
                        item.reason,
                        failing=item.path in failing,
                        template=template,
                        line_numbers=line_numbers,
                    )
                    assert native == block.text, (native, block.text)
                bodies = [
                    composer.number_lines(item.content, item.start) if line_numbers else item.content
                    for item in items
                ]
                labels = [composer.label(item.reason, item.path in failing) for item in items]
                if template == "xml":
                    back = composer.parse_xml_section(section)
                    assert [(b["path"], b["start"], b["end"]) for b in back] == [
                        (item.path, item.start, item.end) for item in items
                    ]
                    assert [b["reason"] for b in back] == [str(item.reason) for item in items]
                    assert [b["label"] for b in back] == labels
                    assert [b["content"] for b in back] == bodies
                else:
                    back = _markdown_blocks(section)
                    assert [b["header"] for b in back] == [
                        f"{composer.header_path(item.path)}:{item.start}-{item.end} ({tag})"
                        for item, tag in zip(items, labels, strict=True)
                    ]
                    assert [b["lang"] for b in back] == [composer.block_language(item.path) for item in items]
                    assert [b["body"] for b in back] == [
                        body if body.endswith("\n") else body + "\n" for body in bodies
                    ]
    cost = result.cost
    if cost.template is not None:
        section = bugcontext.render(result)
        if cost.unit == "chars":
            assert result.used == len(section), (result.used, len(section))
        else:
            assert cost.encoding is not None
            counted = bugcontext.TokenCounter(cost.encoding).count([section])[0]
            assert result.used == counted, (result.used, counted)


def check(data: bytes) -> None:
    """One input: the invariants in the module docstring."""
    _, result = build_both(data, valid=True)
    if result is not None:
        _check_result(result)


if __name__ == "__main__":
    fuzz_main(check, warm_up)
