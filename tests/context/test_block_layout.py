"""The retrieved block's layout: names left out after the same author, exact pricing."""

from __future__ import annotations

import random

from agentctx.context.layout import BlockLayout, BlockLine, render_block
from agentctx.tokens import counter_from_spec

COUNTER = counter_from_spec("estimate")


def line(key: float, day: str, who: str | None, text: str) -> BlockLine:
    label = f"{who}: " if who is not None else ""
    return BlockLine(
        key=key,
        day=day,
        who=who,
        text=text,
        label_tokens=COUNTER.count(label) if label else 0,
        text_tokens=COUNTER.count(text),
    )


def heading_cost(day: str) -> int:
    return COUNTER.count(f"## {day}")


def rendered_cost(lines: list[BlockLine]) -> int:
    """What the rendered block costs, from its text: each heading, and each line's text
    with its name where the rendering shows one (every line with its newline)."""
    ordered = sorted(lines, key=lambda item: item.key)
    shown = [text for text in render_block(lines) if not text.startswith("## ")]
    headings = [text for text in render_block(lines) if text.startswith("## ")]
    assert len(shown) == len(ordered)
    total = sum(heading_cost(text[3:]) + 1 for text in headings)
    for item, text in zip(ordered, shown, strict=True):
        named = text != item.text
        assert text == (f"{item.who}: {item.text}" if named else item.text)
        total += item.text_tokens + 1 + (item.label_tokens if named else 0)
    return total


LINES = [
    line(1, "2024-03-01 (Friday)", "Ana", "I started yoga last week."),
    line(2, "2024-03-01 (Friday)", "Ana", "It helps with my back."),
    line(3, "2024-03-01 (Friday)", "Ben", "Where do you go?"),
    line(4, "2024-03-01 (Friday)", None, "tool result: Studio Lotus, Main St"),
    line(5, "2024-03-01 (Friday)", "Ana", "The studio on Main Street."),
    line(6, "2024-03-02 (Saturday)", "Ana", "Went again today."),
    line(7, "2024-03-02 (Saturday)", "Ana", "Loved it."),
]


def test_a_line_after_one_by_the_same_author_on_the_same_day_goes_unnamed() -> None:
    assert render_block(reversed(LINES)) == [
        "## 2024-03-01 (Friday)",
        "Ana: I started yoga last week.",
        "It helps with my back.",
        "Ben: Where do you go?",
        "tool result: Studio Lotus, Main St",
        "Ana: The studio on Main Street.",  # after a tool line: named again
        "## 2024-03-02 (Saturday)",
        "Ana: Went again today.",  # a new day: named again
        "Loved it.",
    ]


def test_what_a_layout_charges_is_what_the_rendered_block_costs() -> None:
    rng = random.Random(7)
    for _ in range(50):
        order = LINES[:]
        rng.shuffle(order)
        layout = BlockLayout(heading_cost)
        added: list[BlockLine] = []
        for item in order:
            quoted = layout.price([item])
            assert layout.add([item]) == quoted
            added.append(item)
            assert layout.tokens == rendered_cost(added)


def test_pricing_several_lines_leaves_the_layout_as_it_was() -> None:
    layout = BlockLayout(heading_cost)
    layout.add([LINES[0], LINES[6]])
    before = layout.tokens
    pair = [LINES[1], LINES[2]]
    quoted = layout.price(pair)
    assert layout.tokens == before
    assert layout.price(pair) == quoted  # nothing of the first quote stayed behind
    assert layout.add(pair) == quoted
    assert layout.tokens == rendered_cost([LINES[0], LINES[6], *pair])


def test_a_line_between_two_by_one_author_makes_the_second_name_its_author() -> None:
    layout = BlockLayout(heading_cost)
    layout.add([LINES[0], LINES[1]])  # Ana, then Ana unnamed
    between = line(1.5, "2024-03-01 (Friday)", "Ben", "Nice!")
    # Ben's line with its name, and Ana's name again on the line after it.
    expected = between.label_tokens + between.text_tokens + 1 + LINES[1].label_tokens
    assert layout.price([between]) == expected
