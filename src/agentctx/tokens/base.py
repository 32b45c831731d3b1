"""The counter protocol and the truncation every counter shares."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from agentctx.errors import InvalidInput

Keep = Literal["middle", "head", "tail"]

# ``{n}`` is replaced by the number of tokens cut out.
DEFAULT_MARKER = "\n… [truncated {n} tokens] …\n"
# Used instead of the default marker when a budget is too small for it.
SHORT_MARKER = "…"
_KEEPS = ("middle", "head", "tail")
# A Latin-script word (at most 24 characters) the cut went through.
_WORD = r"[A-Za-z0-9\u00c0-\u024f_'-]"
_WORD_CHAR = re.compile(_WORD)
_PARTIAL_END = re.compile(rf"(?<!{_WORD}){_WORD}{{1,24}}$")
_PARTIAL_START = re.compile(rf"^{_WORD}{{1,24}}(?!{_WORD})")


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens the way one tokenizer (or an estimate of it) does.

    ``name`` identifies the counter in reports (``"estimate"``,
    ``"tiktoken:o200k_base"``, ``"hf:/path/tokenizer.json"``).
    """

    name: str

    def count(self, text: str) -> int:
        """The tokens of ``text``."""
        ...

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """The tokens of each text, in order (batched where the tokenizer can)."""
        ...

    def truncate(self, text: str, max_tokens: int, marker: str = DEFAULT_MARKER) -> str:
        """``text`` cut so that the result, marker included, counts at most ``max_tokens``."""
        ...


class _Counts(Protocol):
    def count(self, text: str) -> int: ...


def truncate_text(
    counter: _Counts,
    text: str,
    max_tokens: int,
    *,
    marker: str = DEFAULT_MARKER,
    keep: Keep = "middle",
) -> str:
    """Cut ``text`` to at most ``max_tokens`` tokens by ``counter``, marker included.

    ``keep`` says what survives: the head and the tail (``"middle"`` is cut, the
    default for messages, whose start and end carry the most), only the head, or
    only the tail. ``marker`` is put where the text was cut; ``{n}`` in it becomes
    the number of tokens removed. The result is verified by counting it, so the
    bound holds for any counter, exact or estimated. When the marker itself does
    not fit, ``"…"`` is used instead; with no room even for that the result is
    the empty string. Text that already fits is returned unchanged.
    """
    if max_tokens < 0:
        raise InvalidInput(f"max_tokens must be >= 0, got {max_tokens}")
    if keep not in _KEEPS:
        raise InvalidInput(f"keep must be one of {', '.join(_KEEPS)}; got {keep!r}")
    total = counter.count(text)
    if total <= max_tokens:
        return text
    for template in (marker, SHORT_MARKER):
        result = _cut(counter, text, max_tokens, template=template, keep=keep, total=total)
        if result is not None:
            return result
    return ""


def _split(text: str, kept: int, keep: Keep) -> tuple[str, str]:
    if keep == "head":
        return text[:kept], ""
    if keep == "tail":
        return "", text[len(text) - kept :] if kept else ""
    head = (kept + 1) // 2
    tail = kept - head
    return text[:head], text[len(text) - tail :] if tail else ""


def _cut(
    counter: _Counts, text: str, max_tokens: int, *, template: str, keep: Keep, total: int
) -> str | None:
    """The longest cut of ``text`` with ``template`` that fits, or None if none does."""

    def build(kept: int, removed: int) -> str:
        head, tail = _split(text, kept, keep)
        return head + template.replace("{n}", str(removed)) + tail

    # The marker is sized for the largest count it could show, so a fitting cut
    # still fits once the real (smaller) count is filled in, in all but odd cases
    # the final check below handles.
    if counter.count(build(0, total)) > max_tokens:
        return None
    # Largest number of kept characters that fits, by bisection, starting from the
    # proportional guess (most probes then land next to the answer).
    low, high = 0, len(text) - 1
    guess = min(high, max(0, len(text) * max_tokens // max(total, 1)))
    if counter.count(build(guess, total)) <= max_tokens:
        low = guess
    else:
        high = guess - 1
    while low < high:
        mid = (low + high + 1) // 2
        if counter.count(build(mid, total)) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    kept = low
    while True:
        head, tail = _snap(text, *_split(text, kept, keep))
        removed = max(1, total - counter.count(head) - counter.count(tail))
        result = head + template.replace("{n}", str(removed)) + tail
        if counter.count(result) <= max_tokens:
            return result
        if kept == 0:
            return build(0, total)
        kept = max(0, kept - max(1, kept // 50))


def _snap(text: str, head: str, tail: str) -> tuple[str, str]:
    """Drop a word the cut went through (Latin script only): no half words."""
    if head and len(head) < len(text) and _WORD_CHAR.match(text, len(head)):
        partial = _PARTIAL_END.search(head, max(0, len(head) - 25))
        if partial is not None:
            head = head[: partial.start()]
    start = len(text) - len(tail)
    if tail and start > 0 and _WORD_CHAR.match(text, start - 1):
        partial = _PARTIAL_START.match(tail)
        if partial is not None:
            tail = tail[partial.end() :]
    return head, tail
