"""Older events as lines of the retrieved block: what a line shows, what it costs, and how a
long one is shortened to the sentences that matter to the query.

A line is ``author: text`` under its day's heading (see :mod:`agentctx.context.layout`);
tool calls, tool results and errors say what they are instead of naming an author. A
candidate's lines are rendered only when the choice reaches it (:func:`measure`).
"""

from __future__ import annotations

import dataclasses
import json
import operator
import re
from collections.abc import Sequence
from typing import Any

from agentctx.context.layout import BlockLayout, BlockLine, render_block
from agentctx.context.ledger import ledger_line, named_values
from agentctx.context.pieces import BlockKey, Candidate, CompactBlock, LinesKey, Piece
from agentctx.context.pricing import Pricer
from agentctx.context.relevance import LINE_OVERHEAD
from agentctx.context.render import canonical_json, compact_json, event_text
from agentctx.context.units import Atom, Unit
from agentctx.events import Event, EventType, JsonPart, TextPart
from agentctx.retrieval.terms import document_terms

BLOCK_HEADING = "Earlier in this conversation (retrieved; oldest first):"

DAY_HEADING_SHARE = 2
"""Tokens each line is charged towards its day's heading ("## 2024-03-01 (Friday)")."""

WHOLE_LINE_TOKENS = 256
"""Lines up to this long are kept whole while they take at most a quarter of the budget."""

SMALLEST_LINE = 4
"""No line costs fewer tokens than this (author, text, newline): below it, stop looking."""

_SENTENCE = re.compile("(?<=[.!?\u3002\uff01\uff1f])\\s+|\n+")
_TOOL_CALL = EventType.TOOL_CALL
_TOOL_RESULT = EventType.TOOL_RESULT
_ERROR = EventType.ERROR
_AGENT_RESPONSE = EventType.AGENT_RESPONSE

MIN_LINE = 48
"""No line is shortened below this many tokens."""
_NOT_LINES = frozenset({EventType.STATE_DELTA, EventType.SUMMARY, EventType.SYSTEM})
# Events a line's least cost leaves out (tool results show shortened output).
_NOT_LINES_AT_LEAST = _NOT_LINES | {EventType.TOOL_RESULT}


def query_terms_of(query: str | None) -> frozenset[str]:
    """The terms of ``query`` that relevance and line shortening look for."""
    return frozenset(document_terms(query)) if query else frozenset()


def text_terms(text: str) -> set[str]:
    """The search index's own analysis of ``text`` (stopwords out, stems, CJK bigrams)."""
    return set(document_terms(text))


def measure(pricer: Pricer, candidate: Candidate, terms: frozenset[str]) -> int:
    """Render ``candidate`` (its lines, and its messages when it may extend the recent
    window) and return its cost in tokens."""
    if candidate.tokens is not None:
        return candidate.tokens
    if candidate.as_messages:
        piece_of(pricer, candidate)
    candidate.lines = lines_of(candidate.atom, terms, pricer)
    if candidate.as_messages and candidate.piece is not None:
        candidate.tokens = candidate.piece.tokens
    else:
        candidate.tokens = (
            sum(line.label_tokens + line.text_tokens + 1 for line in candidate.lines)
            + DAY_HEADING_SHARE
        )
    return candidate.tokens


def least_cost(candidate: Candidate, line_limit: int) -> int:
    """A bound below what ``candidate`` can cost as block lines, from stored estimates.

    A line is the event's text (at most ``line_limit`` tokens once shortened) plus its
    author; the stored estimate may be above the counted tokens, so only half of it is
    taken. Lets the choice pass over candidates that cannot fit without rendering them.
    """
    if candidate.tokens is not None:
        return candidate.tokens
    if candidate.as_messages:
        return 0  # rendered as messages, tool output may shrink: no cheap bound
    return sum(
        min(e.token_estimate, line_limit) // 2
        for e in candidate.atom.events
        # Images and JSON count in the estimate but not (or not all) in a line, and a
        # tool result's line shows its shortened output.
        if e.type not in _NOT_LINES_AT_LEAST and all(isinstance(p, TextPart) for p in e.parts)
    )


def estimated_tokens(candidate: Candidate) -> int:
    """What ``candidate`` will cost, from the events' stored estimates (for the split)."""
    if candidate.tokens is not None:
        return candidate.tokens
    return sum(e.token_estimate + LINE_OVERHEAD for e in candidate.atom.events)


def piece_of(pricer: Pricer, candidate: Candidate) -> Piece | None:
    """``candidate``'s whole turn rendered as messages (None when it has no turn)."""
    if candidate.piece is None and candidate.unit is not None:
        candidate.piece = unit_piece(pricer, candidate.unit, shorten=False)
    return candidate.piece


def unit_piece(pricer: Pricer, unit: Unit, *, shorten: bool, ratio: float = 1.0) -> Piece:
    """A whole turn as one piece; ``shorten``: each message cut to ``ratio`` of its tokens
    (``compressed``'s older turns)."""
    pieces = pricer.pieces(unit.atoms)
    messages: list[dict[str, Any]] = [m for p in pieces for m in p.messages]
    tokens = sum(p.tokens for p in pieces)
    if shorten:
        counter = pricer.counter
        for piece in pieces:
            for message in piece.messages:
                content = message.get("content")
                if isinstance(content, str) and content:
                    count = counter.count(content)
                    if count > 24:
                        cut = counter.truncate(content, max(16, int(count * ratio)))
                        message["content"] = cut
                        pricer.truncated(_shown_event(piece, content), count, counter.count(cut))
        tokens = pricer.cost_all(messages)
    return Piece(Atom(unit.events), messages, tokens)


def _shown_event(piece: Piece, content: str) -> Event:
    """The event of ``piece`` whose text a message shows."""
    return next(
        (e for e in piece.atom.events if e.text and e.text[:50] in content), piece.atom.events[0]
    )


def line_limit(pricer: Pricer) -> int:
    """The most tokens one retrieved line may take before it is shortened.

    A quarter of the most a message may take (by default an eighth of the budget), but
    a line of up to :data:`WHOLE_LINE_TOKENS` may take a quarter of the budget: a chat
    message is seldom longer, and a message shown shortened is one the model can no
    longer quote whole. On the development chats, keeping such lines whole at a 1k
    budget (an eighth shortens any line over 125 tokens) raised evidence recall there
    from 0.735 to 0.752 and left it unchanged at 2k-8k.
    """
    whole = min(pricer.budget // 4, WHOLE_LINE_TOKENS, pricer.max_message_tokens)
    return max(48, pricer.max_message_tokens // 4, whole)


def lines_of(
    atom: Atom,
    terms: frozenset[str],
    pricer: Pricer,
    limit: int | None = None,
    *,
    compact: bool = False,
) -> tuple[BlockLine, ...]:
    """A block line for each event of ``atom`` that shows as one, each at most ``limit``
    tokens (default :func:`line_limit`). ``compact``: JSON tool output as its leaves
    (:func:`~agentctx.context.render.compact_json`). The same atom, terms, limit and
    form give the same lines: the builder keeps them (:attr:`Pricer.lines`), and the
    calls of one turn, which ask the same query, do not make them again."""
    limit = line_limit(pricer) if limit is None else limit
    key: LinesKey = (tuple(e.event_id for e in atom.events), tuple(sorted(terms)), limit, compact)
    kept = pricer.lines.get(key) if pricer.lines is not None else None
    if kept is not None:
        return tuple(BlockLine(*fields) for fields in kept)  # new lines: told apart by identity
    made = _lines_of(atom, terms, pricer, limit, compact=compact)
    if pricer.lines is not None:
        pricer.lines.put(key, tuple(_LINE_FIELDS(line) for line in made))
    return made


_LINE_FIELDS = operator.attrgetter(*(f.name for f in dataclasses.fields(BlockLine)))
"""A block line's fields, in order (what :func:`lines_of` keeps between builds)."""


def _lines_of(
    atom: Atom, terms: frozenset[str], pricer: Pricer, limit: int, *, compact: bool
) -> tuple[BlockLine, ...]:
    out = []
    count = pricer.counter.count
    for index, event in enumerate(atom.events):
        shown = _line(event, pricer, compact=compact)
        if shown is None:
            continue
        who, text = shown
        label = f"{who}: " if who is not None else ""
        label_tokens = count(label) if label else 0
        text_tokens = count(text)
        before = None
        most = limit
        if compact and event.type is _AGENT_RESPONSE:
            # The model's own prose says again what it read; what tools returned and the
            # user said it cannot say again: compacted, its prose gets the least room.
            most = max(MIN_LINE, limit // 4)
        if label_tokens + text_tokens > most:
            before = label_tokens + text_tokens
            line = _shorten(label + text, terms, most, pricer)
            # The name stays at the start of a shortened line (sentences are picked or
            # the middle is cut); if it did not, the line shows as it is, unnamed.
            if label and line.startswith(label):
                text = line[len(label) :]
            else:
                who, label, label_tokens, text = None, "", 0, line
            text_tokens = count(text)
        out.append(
            BlockLine(
                key=event.seq + index / 1000,
                day=pricer.day_of(event.ts),
                who=who,
                text=text,
                label_tokens=label_tokens,
                text_tokens=text_tokens,
                event_id=event.event_id,
                tokens_before=before,
            )
        )
    return tuple(out)


def block_text(heading: str, lines: list[BlockLine]) -> str:
    """A block of lines under ``heading``: a ``## day`` heading before each day's lines,
    oldest first, an author's name left out after a line by the same author."""
    return heading + "\n" + "\n".join(render_block(lines))


def _line(event: Event, pricer: Pricer, *, compact: bool = False) -> tuple[str | None, str] | None:
    """(author, text) of an event's line; no author for lines that say what they are."""
    if event.type in _NOT_LINES:
        return None
    who = event.author or (event.role.value if event.role is not None else event.type.value)
    # A tool result shows as its messages would: shortened by its tool's strategy (or,
    # compact, as the leaves of its JSON).
    shown = None
    if event.type is _TOOL_RESULT:
        shown = _compact_output(event) if compact else None
        if shown is None:
            shown = pricer.tool_result_text(event)
    text = " ".join((shown if shown is not None else event_text(event)).split())
    if event.type is _TOOL_CALL:
        args = next((canonical_json(p.data) for p in event.parts if isinstance(p, JsonPart)), "{}")
        return None, f"{who} called {event.meta.tool_name or 'tool'}({args})"
    if event.type is _TOOL_RESULT:
        status = " (error)" if event.meta.status == "error" else ""
        return None, f"tool result{status}: {text}"
    if event.type is _ERROR:
        return None, f"error: {text}"
    return who, text


def _compact_output(event: Event) -> str | None:
    """A tool result's JSON as its leaves (None when it is not JSON)."""
    for part in event.parts:
        if isinstance(part, JsonPart):
            return compact_json(part.data)
        if isinstance(part, TextPart) and part.text.lstrip()[:1] in ("{", "["):
            try:
                return compact_json(json.loads(part.text))
            except ValueError:
                return None
    return None


def _shorten(line: str, terms: frozenset[str], limit: int, pricer: Pricer) -> str:
    """The sentences of ``line`` that matter to the query, within ``limit`` tokens."""
    head, sep, body = line.partition(": ")
    sentences = [s for s in _SENTENCE.split(body) if s.strip()]
    if terms and len(sentences) > 1:
        keep = [s for s in sentences if text_terms(s) & terms] or sentences[:1]
        candidate = f"{head}{sep}" + " … ".join(keep) + " [shortened]"
        if pricer.counter.count(candidate) <= limit:
            return candidate
    return pricer.counter.truncate(line, limit)


def compact_block(
    pricer: Pricer,
    heading: str,
    atoms: Sequence[Atom],
    room: int,
    *,
    ledger_share: float = 0.0,
) -> CompactBlock:
    """``atoms`` as compact lines within ``room`` tokens: the newest, back to the first
    that does not fit (the newest shown shorter if it alone is too long), oldest first
    under ``heading``:
    tool calls with their arguments, messages shortened in their middle, JSON tool output
    as its leaves. With ``ledger_share``, up to that share of the room is kept for the
    values the lines leave out (cut from a line, or in an atom that did not fit), listed
    once each after the lines (:mod:`agentctx.context.ledger`); what the lines leave
    unused goes to it too. Query-independent, so the same atoms and room give the same
    block: the builder keeps it (:attr:`Pricer.blocks`), and the calls between two slides
    do not make it again."""
    key: BlockKey = (
        heading,
        tuple(e.event_id for a in atoms for e in a.events),
        room,
        ledger_share,
    )
    kept = pricer.blocks.get(key) if pricer.blocks is not None else None
    if kept is not None:
        return kept.copy()
    block = _compact_block(pricer, heading, atoms, room, ledger_share)
    if pricer.blocks is not None:
        pricer.blocks.put(key, block.copy())
    return block


def _compact_block(
    pricer: Pricer, heading: str, atoms: Sequence[Atom], room: int, ledger_share: float
) -> CompactBlock:
    whole_room = room
    room -= pricer.cost({"role": "system", "content": heading + "\n"})
    if room <= 0:
        return CompactBlock()
    # The ledger's room is kept only as far as it could use it: a block of chat with few
    # ids gives nearly all its room to lines.
    values = named_values([e for atom in atoms for e in atom.events]) if ledger_share > 0 else []
    _, ledger_room = ledger_line(pricer.counter, values, "", int(ledger_share * room))
    lines_room = room - ledger_room
    layout = BlockLayout(lambda day: pricer.counter.count(f"## {day}"))
    limit = max(MIN_LINE, lines_room // 2)
    chosen: list[BlockLine] = []
    shown: list[Event] = []
    for atom in reversed(atoms):
        lines = lines_of(atom, frozenset(), pricer, limit, compact=True)
        if not lines:
            continue
        cost = layout.price(lines)
        last = cost > lines_room
        if last and chosen:
            break  # what it named is in the ledger
        if last:
            # The newest atom alone is too long: shown shorter rather than not at all
            # (its calls and the start of their results).
            lines = lines_of(
                atom, frozenset(), pricer, max(MIN_LINE, lines_room // len(lines)), compact=True
            )
            cost = layout.price(lines)
            if cost > lines_room:
                break
        layout.add(lines)
        lines_room -= cost
        chosen.extend(lines)
        shown.extend(atom.events)
        if last:
            break
    ordered = sorted(chosen, key=lambda line: line.key)
    content = block_text(heading, ordered) if chosen else heading
    if values:
        ledger, _ = ledger_line(pricer.counter, values, content, ledger_room + lines_room - 1)
        if ledger is not None and pricer.cost(_system(f"{content}\n{ledger}")) <= whole_room:
            content += "\n" + ledger
    if content == heading:
        return CompactBlock()
    message = _system(content)
    ordered_shown = tuple(sorted((e.seq, e.event_id) for e in shown))
    return CompactBlock(message, ordered_shown, pricer.cost(message))


def _system(content: str) -> dict[str, Any]:
    return {"role": "system", "content": content}
