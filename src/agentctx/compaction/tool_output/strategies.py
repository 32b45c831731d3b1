"""How a long tool output is shortened to a token target (seed 002's ToolResultCompressor).

Every strategy is a pure, deterministic function ``(content, target, counter) -> str``:
``content`` is the tool's output as text or as a JSON value, ``target`` the most tokens
the result may count by ``counter``. Output that already fits comes back unchanged; a
result that would not fit any other way ends with :func:`~agentctx.tokens.truncate_text`,
so the bound holds for every counter, exact or estimated (``known_tokens``, when the
caller has counted the content with the same counter, saves counting it again). What
was left out is always said in the text itself:

* :func:`truncate_list` keeps the first N items of every list (``… and 1,234 more items``);
* :func:`shorten_json` keeps the structure and the keys, shortening long strings and
  arrays first, then summarising the deepest levels, then dropping trailing keys;
* :func:`head_tail` keeps whole lines from the start and the end of a text around a
  ``[… N lines / M tokens omitted …]`` line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from agentctx.errors import InvalidInput
from agentctx.jsonvalue import JsonValue
from agentctx.tokens import Keep, truncate_text

ToolContent = str | JsonValue
"""A tool's output: its text, or a JSON value (dict, list, str, number, bool, None)."""

# The marker of a cut through the middle of a line (``{n}``: tokens removed), in the
# bracketed form of the line marker so a reader sees the same sign for both.
CHAR_MARKER = "\n[… {n} tokens omitted …]\n"
MAX_JSON_DEPTH = 64
"""Text that parses as JSON nested deeper than this is handled as text."""
_CHUNK = 64  # lines counted per count_many call when a cut walks in from either end
_MIN_CHARS = 12  # the shortest a shortened JSON string gets before depth is given up
# Strings are shortened only when that saves more than the marker it adds.
_STRING_SLACK = 16


class Counter(Protocol):
    """What a strategy needs of a :class:`~agentctx.tokens.TokenCounter`."""

    def count(self, text: str) -> int:
        """The tokens of ``text``."""
        ...

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """The tokens of each text."""
        ...


Strategy = Callable[[ToolContent, int, Counter], str]
"""``(content, target, counter) -> text`` counting at most ``target`` tokens."""


# Shared ---------------------------------------------------------------------------------


def parse_content(content: ToolContent) -> tuple[bool, Any]:
    """``(True, value)`` for JSON content (a JSON value, or text that parses as an object
    or array), else ``(False, text)``."""
    if not isinstance(content, str):
        return True, content
    if content.lstrip()[:1] in ("{", "["):
        try:
            value = orjson.loads(content)
        except orjson.JSONDecodeError:
            return False, content
        # Deeper than agentctx stores JSON (and than orjson writes it back): text.
        if _depth(value) <= MAX_JSON_DEPTH:
            return True, value
    return False, content


def dumps(value: JsonValue) -> str:
    """Compact JSON text with the keys in their given order (``InvalidInput`` if not JSON)."""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise InvalidInput(f"tool output is not a JSON value: {exc}") from exc


def content_text(content: ToolContent) -> str:
    """The text a tool output stands for uncompressed (JSON values as compact JSON)."""
    return content if isinstance(content, str) else dumps(content)


def _check_target(target: int) -> None:
    if isinstance(target, bool) or not isinstance(target, int) or target < 0:
        raise InvalidInput(f"the token target must be an integer >= 0, got {target!r}")


def _tokens(text: str, counter: Counter, known: int | None) -> int:
    """``known`` (the caller counted ``text`` with ``counter`` already) or a count."""
    return known if known is not None else counter.count(text)


def _cut(text: str, target: int, counter: Counter, keep: Keep) -> str:
    """The last resort: a plain cut with truncate_text's marker."""
    return truncate_text(counter, text, target, keep=keep)


def _n(count: int, noun: str) -> str:
    """``1,234 items``, ``1 item``."""
    return f"{count:,} {noun if count != 1 else noun[:-1]}"


def _more(count: int, noun: str) -> str:
    return f"… and {_n(count, 'more ' + noun)}"


def _largest_fitting(
    render: Callable[[int], str], high: int, target: int, counter: Counter
) -> int | None:
    """The largest n in ``0..high`` whose rendering fits (None if not even 0 does).

    Doubling then bisection, so the renderings probed stay near the target's size even
    when ``high`` is huge; results are verified, so a slightly non-monotone rendering
    (the count of what is left shrinks as n grows) never yields an oversized text.
    """

    def fits(n: int) -> bool:
        return counter.count(render(n)) <= target

    if high < 0 or not fits(0):
        return None
    good, bad = 0, None
    while good < high:
        probe = min(high, max(1, good * 2))
        if fits(probe):
            good = probe
        else:
            bad = probe
            break
    if bad is None:
        return good
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good


# truncate_list ---------------------------------------------------------------------------


def _longest_list(value: Any) -> int:
    longest = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            longest = max(longest, len(item))
            stack.extend(item)
    return longest


def _limit_lists(value: Any, n: int) -> Any:
    if isinstance(value, dict):
        return {key: _limit_lists(item, n) for key, item in value.items()}
    if isinstance(value, list | tuple):
        kept = [_limit_lists(item, n) for item in value[:n]]
        if len(value) > n:
            kept.append(_more(len(value) - n, "items"))
        return kept
    return value


def list_cut(
    content: ToolContent, target: int, counter: Counter, *, max_items: int | None = None
) -> tuple[str, int | None]:
    """:func:`truncate_list`'s text and the items it kept per list (None: cut as text)."""
    is_json, value = parse_content(content)
    if is_json:
        longest = _longest_list(value)

        def render(n: int) -> str:
            return dumps(_limit_lists(value, n))

    else:
        lines = str(value).splitlines(keepends=True)
        longest = len(lines)

        def render(n: int) -> str:
            rest = len(lines) - n
            return "".join(lines[:n]) + (_more(rest, "lines") if rest > 0 else "")

    # n == longest cuts nothing: the compact rendering may fit where the original did not.
    high = longest if max_items is None else min(max_items, longest)
    kept = _largest_fitting(render, high, target, counter)
    if kept == 0 and not is_json:
        kept = None  # "… and 3 more lines" alone says less than the head of the text
    if kept is None:
        # Not even one item per list fits (or there is no list): a plain cut of the head.
        fallback = render(0) if longest else content_text(content)
        return _cut(fallback, target, counter, "head"), None
    return render(kept), kept


def truncate_list(
    content: ToolContent,
    target: int,
    counter: Counter,
    *,
    max_items: int | None = None,
    known_tokens: int | None = None,
) -> str:
    """Keep the first N items of every list, top-level or nested, with the count of the rest.

    N is the largest that fits ``target`` (at most ``max_items``); each cut list ends
    with an item ``"… and 1,234 more items"``. Text that is not JSON is a list of lines
    (``… and 1,234 more lines``). Content that fits is returned unchanged.
    """
    _check_target(target)
    text = content_text(content)
    if _tokens(text, counter, known_tokens) <= target:
        return text
    try:
        return list_cut(content, target, counter, max_items=max_items)[0]
    except RecursionError:  # JSON nested deeper than Python recurses: shorten it as text
        return _cut(text, target, counter, "head")


# shorten_json ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Limits:
    chars: int | None  # longest string kept whole
    items: int | None  # array items kept
    depth: int | None  # containers at this depth and below are summarised
    keys: int | None  # keys kept per object


# Strings and arrays shrink together, from mild to severe, by about a third per step.
_RUNGS = (
    (2000, 100),
    (1400, 70),
    (1000, 50),
    (700, 35),
    (500, 25),
    (350, 18),
    (250, 12),
    (180, 9),
    (120, 6),
    (90, 5),
    (60, 4),
    (45, 3),
    (30, 2),
)


def _depth(value: Any) -> int:
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict) and item:
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in item.values())
        elif isinstance(item, list | tuple) and item:
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in item)
    return deepest


def _ladder(value: Any, max_depth: int | None) -> list[_Limits]:
    """Settings from the mildest to the most severe."""
    depth = _depth(value)
    cap = max_depth
    rungs = [_Limits(None, None, cap, None)]
    rungs += [_Limits(chars, items, cap, None) for chars, items in _RUNGS]
    rungs.append(_Limits(_MIN_CHARS, 1, cap, None))
    top = depth if cap is None else min(depth, cap)
    rungs += [_Limits(_MIN_CHARS, 1, level, None) for level in range(top - 1, 0, -1)]
    rungs += [_Limits(_MIN_CHARS, 1, 1, keys) for keys in (32, 16, 8, 4, 2, 1)]
    rungs.append(_Limits(_MIN_CHARS, 1, 0, None))
    return rungs


def _short_string(text: str, chars: int | None) -> str:
    if chars is None or len(text) <= chars + _STRING_SLACK:
        return text
    return f"{text[:chars]}… [+{len(text) - chars:,} chars]"


def _shorten(value: Any, limits: _Limits, level: int) -> Any:
    if isinstance(value, str):
        return _short_string(value, limits.chars)
    if isinstance(value, dict):
        if not value:
            return value
        if limits.depth is not None and level >= limits.depth:
            return f"{{… {_n(len(value), 'keys')}}}"
        pairs = list(value.items())
        kept = pairs if limits.keys is None else pairs[: limits.keys]
        out = {key: _shorten(item, limits, level + 1) for key, item in kept}
        if len(pairs) > len(kept):
            extra = "…"
            while extra in out:
                extra += "…"
            out[extra] = _n(len(pairs) - len(kept), "more keys")
        return out
    if isinstance(value, list | tuple):
        if not value:
            return []
        if limits.depth is not None and level >= limits.depth:
            return f"[… {_n(len(value), 'items')}]"
        kept_items = value if limits.items is None else value[: limits.items]
        out_list = [_shorten(item, limits, level + 1) for item in kept_items]
        if len(value) > len(kept_items):
            out_list.append(_more(len(value) - len(kept_items), "items"))
        return out_list
    return value


def shorten_json(
    content: ToolContent,
    target: int,
    counter: Counter,
    *,
    max_depth: int | None = None,
    known_tokens: int | None = None,
) -> str:
    """Keep the JSON's structure and keys; shorten long strings and arrays to fit ``target``.

    Degrades step by step, taking the mildest step that fits: long strings end in
    ``… [+N chars]`` and long arrays in ``"… and N more items"`` (both shrinking together);
    then objects and arrays below a depth become ``"{… N keys}"`` / ``"[… N items]"``,
    deepest first; then the top level keeps its first keys (``"…": "N more keys"``).
    ``max_depth`` summarises everything below that depth from the start. Text that is
    not JSON is cut with truncate_text's marker. Content that fits is returned unchanged.
    """
    _check_target(target)
    if max_depth is not None and max_depth < 0:
        raise InvalidInput(f"max_depth must be >= 0, got {max_depth}")
    text = content_text(content)
    if max_depth is None and _tokens(text, counter, known_tokens) <= target:
        return text
    is_json, value = parse_content(content)
    if not is_json:
        return _cut(text, target, counter, "middle")
    try:
        ladder = _ladder(value, max_depth)
        renders: dict[int, str] = {}

        def render(index: int) -> str:
            if index not in renders:
                renders[index] = dumps(_shorten(value, ladder[index], 0))
            return renders[index]

        def fits(index: int) -> bool:
            return counter.count(render(index)) <= target

        # The first rung that fits, by bisection (fitting grows with the index), then
        # checked and, should a rung not fit after all, the next ones in order.
        low, high = 0, len(ladder) - 1
        while low < high:
            mid = (low + high) // 2
            if fits(mid):
                high = mid
            else:
                low = mid + 1
        for index in range(low, len(ladder)):
            if fits(index):
                return render(index)
        return _cut(render(len(ladder) - 1), target, counter, "head")
    except RecursionError:
        return _cut(text, target, counter, "head")


# head_tail -------------------------------------------------------------------------------


def _take(lines: Sequence[str], order: range, budget: int, counter: Counter) -> tuple[int, int]:
    """How many lines, walking ``order``, fit ``budget`` (summed line counts), and their cost.

    Lines are counted in chunks, so a long text costs only the lines the budget reaches.
    """
    taken = used = 0
    for start in range(0, len(order), _CHUNK):
        chunk = order[start : start + _CHUNK]
        for cost in counter.count_many([lines[i] for i in chunk]):
            if used + cost > budget:
                return taken, used
            taken += 1
            used += cost
    return taken, used


def _line_marker(lines: int, tokens: int) -> str:
    return f"[… {_n(lines, 'lines')} / {_n(tokens, 'tokens')} omitted …]\n"


def _line_cut(
    lines: list[str], total: int, target: int, counter: Counter, head_share: float
) -> str | None:
    """Whole lines from both ends around a line marker, or None if no line fits."""
    room = target - counter.count(_line_marker(len(lines), total))
    if room <= 0:
        return None
    n = len(lines)
    head, head_used = _take(lines, range(n), int(room * head_share), counter)
    tail, tail_used = _take(lines, range(n - 1, head - 1, -1), room - head_used, counter)
    more, more_used = _take(lines, range(head, n - tail), room - head_used - tail_used, counter)
    head, head_used = head + more, head_used + more_used

    def drop_one() -> None:
        # From the longer side, so both ends stay in view.
        nonlocal head, tail, head_used, tail_used
        if head >= tail:
            head -= 1
            head_used -= counter.count(lines[head])
        else:
            tail -= 1
            tail_used -= counter.count(lines[n - tail - 1])

    while head + tail >= n:  # summed line counts can undercount the text: omit one at least
        drop_one()
    while head + tail > 0:
        omitted = max(1, total - head_used - tail_used)
        body = "".join(lines[:head]) + _line_marker(n - head - tail, omitted)
        result = body + "".join(lines[n - tail :])
        excess = counter.count(result) - target
        if excess <= 0:
            return result
        # Lines joined can count more than apart: give up lines worth the excess.
        goal = head_used + tail_used - excess
        while head + tail > 0 and head_used + tail_used > goal:
            drop_one()
    return None


def head_tail(
    content: ToolContent,
    target: int,
    counter: Counter,
    *,
    head_share: float = 0.5,
    known_tokens: int | None = None,
) -> str:
    """Keep the head and the tail of a long text around ``[… N lines / M tokens omitted …]``.

    Whole lines are kept from the start (``head_share`` of the room) and from the end
    (the rest); what is left over goes back to the head. A text without enough lines,
    or whose end lines alone are too long, is cut through its middle with the marker
    ``[… M tokens omitted …]``. JSON values are cut as their compact text. Content that
    fits is returned unchanged.
    """
    _check_target(target)
    if not 0.0 <= head_share <= 1.0:
        raise InvalidInput(f"head_share must be between 0 and 1, got {head_share}")
    text = content_text(content)
    total = _tokens(text, counter, known_tokens)
    if total <= target:
        return text
    lines = text.splitlines(keepends=True)
    if len(lines) >= 3:
        result = _line_cut(lines, total, target, counter, head_share)
        if result is not None:
            return result
    return truncate_text(counter, text, target, marker=CHAR_MARKER, keep="middle")


BUILTIN: dict[str, Strategy] = {
    "truncate_list": truncate_list,
    "shorten_json": shorten_json,
    "head_tail": head_tail,
}
"""The built-in strategies by name (``"auto"``, the default chain, is the compressor's)."""
