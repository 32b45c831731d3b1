"""One build's rendering and counting: atoms as messages, what each message costs, and the
record of what was shortened or left out.

:class:`Pricer` renders atoms (``render.render_events``, images through
:class:`~agentctx.context.window_images.WindowImages`, tool output through the engine's
tool output compaction), cuts an over-long message in the middle with a visible marker,
counts messages with the configured tokenizer (framing and images included), and keeps
the build's truncations and drops for its report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any

from agentctx.cache.bounded import Lru
from agentctx.context.config import ContextConfig
from agentctx.context.counting import LongCounts, RememberingCounter
from agentctx.context.pieces import BlockKey, CompactBlock, KeptLines, LinesKey, Piece
from agentctx.context.render import event_text, render_events
from agentctx.context.sources import ToolOutput
from agentctx.context.units import Atom
from agentctx.context.window import DroppedEvent, DropReason, TruncatedEvent
from agentctx.context.window_images import ImageAccess, WindowImages
from agentctx.events import Event
from agentctx.tokens import TokenCounter, message_tokens

SHORTEST_CUT = 16
"""A message is not cut shorter than this many tokens."""


class Pricer:
    """Renders and counts for one build; records truncations and drops."""

    def __init__(
        self,
        counter: TokenCounter,
        *,
        config: ContextConfig,
        user_id: str,
        session_id: str,
        budget: int,
        images: ImageAccess,
        tool_output: ToolOutput | None,
        known_counts: dict[str, int] | None = None,
        known_long_counts: LongCounts | None = None,
        blocks: Lru[BlockKey, CompactBlock] | None = None,
        lines: Lru[LinesKey, KeptLines] | None = None,
    ) -> None:
        self.counter: TokenCounter = RememberingCounter(counter, known_counts, known_long_counts)
        self._raw_counter = counter  # handed to tool output compaction as configured
        self.config = config
        self.user_id = user_id
        self.session_id = session_id
        self.budget = budget
        self.max_message_tokens = config.max_message_tokens or max(32, budget // 2)
        self.truncations: list[TruncatedEvent] = []
        self.dropped: dict[int, DroppedEvent] = {}
        self.images = WindowImages(images, config, user_id, session_id)
        self._tool_output_source = tool_output
        self._tool_output: Callable[[Event, TokenCounter], str] | None = None
        self._tool_texts: dict[str, str] = {}  # event id -> window text, once per build
        self._days: dict[date, str] = {}
        # Compact blocks kept between builds (see lines.compact_block); atoms rendered in
        # this build, by their events' ids (a history is placed twice once it slid).
        self.blocks = blocks
        # Block lines of atoms kept between builds (see lines.lines_of): an agent loop's
        # calls within a turn measure the same older events for the same query.
        self.lines = lines
        self._pieces: dict[tuple[str, ...], Piece] = {}

    # Counting -----------------------------------------------------------------------------

    def cost(self, message: dict[str, Any]) -> int:
        """A message's tokens, framing included; images by the provider's formula."""
        content = message.get("content")
        if isinstance(content, list) and any(p.get("type") == "image_url" for p in content):
            text_only = dict(message)
            text_only["content"] = [p for p in content if p.get("type") != "image_url"]
            images = sum(
                self.images.cost(p["image_url"]["url"])
                for p in content
                if p.get("type") == "image_url"
            )
            return message_tokens(self.counter, text_only) + images
        return message_tokens(self.counter, message)

    def cost_all(self, messages: Sequence[dict[str, Any]]) -> int:
        """The tokens of several messages."""
        return sum(self.cost(m) for m in messages)

    # Rendering ----------------------------------------------------------------------------

    def day_of(self, ts: datetime) -> str:
        """The day heading a block line goes under ("2024-03-01 (Friday)")."""
        day = ts.date()
        text = self._days.get(day)
        if text is None:
            text = self._days[day] = ts.strftime("%Y-%m-%d (%A)")
        return text

    def piece(self, atom: Atom) -> Piece:
        """An atom rendered as messages, over-long messages cut in the middle; rendered
        once per build (a copy each time: a stage may cut what it was given)."""
        key = tuple(e.event_id for e in atom.events)
        done = self._pieces.get(key) if key else None
        if done is None:
            done = self._rendered_piece(atom)
            if key:
                self._pieces[key] = done
        return Piece(atom, [_copied(m) for m in done.messages], done.tokens)

    def _rendered_piece(self, atom: Atom) -> Piece:
        tool_text = self._shortened_tool_output if self._tool_output_source is not None else None
        messages = render_events(atom.events, self.images.show, tool_text)
        for message in messages:
            self._limit_message(message, atom)
        return Piece(atom, messages, sum(self.cost(m) for m in messages))

    def pieces(self, atoms: Sequence[Atom]) -> list[Piece]:
        """Each atom rendered (see :meth:`piece`)."""
        return [self.piece(atom) for atom in atoms]

    def tool_result_text(self, event: Event) -> str:
        """What a window shows of a tool result: compressed or previewed by its tool's
        strategy when tool output compaction is on, else its whole text."""
        if self._tool_output_source is not None:
            return self._shortened_tool_output(event)
        return event_text(event)

    def _shortened_tool_output(self, event: Event) -> str:
        text = self._tool_texts.get(event.event_id)
        if text is None:
            if self._tool_output is None:
                assert self._tool_output_source is not None
                self._tool_output = self._tool_output_source(self.user_id, self.session_id)
            text = self._tool_texts[event.event_id] = self._tool_output(event, self._raw_counter)
        return text

    def _limit_message(self, message: dict[str, Any], atom: Atom) -> None:
        content = message.get("content")
        if not isinstance(content, str) or not content:
            return
        before = self.counter.count(content)
        if before <= self.max_message_tokens:
            return
        message["content"] = self.counter.truncate(content, self.max_message_tokens)
        event = atom.events[0] if len(atom.events) == 1 else _owner(atom, content)
        self.truncated(event, before, self.counter.count(message["content"]))

    # Shortening and dropping --------------------------------------------------------------

    def cut(self, piece: Piece, over: int) -> bool:
        """Shorten the longest text message of ``piece`` by about ``over`` tokens, or as
        far as it goes (to :data:`SHORTEST_CUT` tokens): called again, the next longest
        goes on. Its costliest image gives way to its visual placeholder once no text can
        be shortened, or first when shortening every text could not give ``over`` (a
        screenshot the window has no room for is named, and its turn kept whole, rather
        than the turn dropped). False when nothing can be shortened."""
        if over > self._text_slack(piece) and self._image_to_placeholder(piece):
            return True  # the texts could not give that much: the image goes first
        return self._cut_text(piece, over) or self._image_to_placeholder(piece)

    def _text_slack(self, piece: Piece) -> int:
        """How many tokens cutting every text message of ``piece`` could give."""
        return sum(
            max(0, self.counter.count(m["content"]) - SHORTEST_CUT)
            for m in piece.messages
            if isinstance(m.get("content"), str) and m["content"]
        )

    def _cut_text(self, piece: Piece, over: int) -> bool:
        texts = [m for m in piece.messages if isinstance(m.get("content"), str) and m["content"]]
        if not texts:
            return False
        message = max(texts, key=lambda m: len(m["content"]))
        current = self.counter.count(message["content"])
        target = max(SHORTEST_CUT, current - over - 1)
        if target >= current:
            return False
        shortened = self.counter.truncate(message["content"], target)
        if self.counter.count(shortened) >= current:
            return False  # no shorter than it was (the marker costs what it saves)
        message["content"] = shortened
        piece.tokens = sum(self.cost(m) for m in piece.messages)
        if piece.atom.events:
            owner = _owner(piece.atom, message["content"])
            self.truncated(owner, current, self.counter.count(message["content"]))
        return True

    def _image_to_placeholder(self, piece: Piece) -> bool:
        costliest: tuple[int, dict[str, Any], int] | None = None
        for message in piece.messages:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for index, part in enumerate(content):
                if part.get("type") == "image_url":
                    cost = self.images.cost(part["image_url"]["url"])
                    if costliest is None or cost > costliest[0]:
                        costliest = (cost, message, index)
        if costliest is None:
            return False
        _, message, index = costliest
        before = self.cost(message)
        content = list(message["content"])
        content[index] = self.images.placeholder(content[index]["image_url"]["url"])
        message["content"] = content
        piece.tokens = sum(self.cost(m) for m in piece.messages)
        if piece.atom.events:
            owner = next((e for e in piece.atom.events if e.images), piece.atom.events[0])
            self.truncated(owner, before, self.cost(message))
        return True

    def truncated(self, event: Event, before: int, after: int) -> None:
        """Record that ``event`` shows shortened, from ``before`` to ``after`` tokens."""
        self.truncations.append(
            TruncatedEvent(
                event_id=event.event_id, seq=event.seq, tokens_before=before, tokens_after=after
            )
        )

    def drop(self, atom: Atom, reason: DropReason) -> None:
        """Record that the events of ``atom`` were considered and left out."""
        self.drop_many(atom.events, reason)

    def drop_many(self, events: Sequence[Event], reason: DropReason) -> None:
        """Record that ``events`` were considered and left out."""
        for event in events:
            self.dropped[event.seq] = DroppedEvent(
                event_id=event.event_id, seq=event.seq, reason=reason
            )


def _copied(message: dict[str, Any]) -> dict[str, Any]:
    """A message a stage may change (its text cut) without changing the original."""
    copy = dict(message)
    if isinstance(copy.get("content"), list):
        copy["content"] = [dict(part) for part in copy["content"]]
    return copy


def _owner(atom: Atom, content: str) -> Event:
    """The event of ``atom`` a (possibly shortened) message shows."""
    for event in atom.events:
        if event.text and event.text[:50] in content:
            return event
    return atom.events[0]
