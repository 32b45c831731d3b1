"""Which older events get the room the recent core leaves (seed 004's strategies).

* ``full``: everything, newest first, as messages, up to ``max_messages``; what does
  not fit is counted in a truncation marker.
* ``compressed``: the turns before the core as messages, each shortened to
  ``compression_ratio`` of its tokens, for ``medium_recent`` messages; older events are
  left to the summaries.
* ``adaptive``: importance layers. With a query, relevance (hybrid search over the
  whole session, plus the neighbours of each hit) comes first, then decisions and
  errors, then recency; without one, recency first, decisions and errors next.
* ``semantic``: older events ranked by relevance to the query alone.

Older events that directly precede the recent window extend it as messages; the
others go into one block of dated lines, oldest first, so questions about *when*
can be answered.
"""

from __future__ import annotations

import bisect
import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentctx.cache.bounded import remember
from agentctx.context.config import ContextConfig
from agentctx.context.informative import favour_informative
from agentctx.context.layout import BlockLayout, BlockLine, render_block
from agentctx.context.relevance import (
    LINE_OVERHEAD,
    NEIGHBOURED_HITS,
    TOKENS_PER_CANDIDATE,
    favour_matching_days,
    favour_subject,
    worth_reading,
)
from agentctx.context.render import canonical_json, event_text
from agentctx.context.sources import Retriever
from agentctx.context.units import Atom, Unit, atoms_of
from agentctx.events import Event, EventType, JsonPart, TextPart
from agentctx.retrieval.terms import document_terms

if TYPE_CHECKING:
    from agentctx.context.run import Piece, Run

_SENTENCE = re.compile("(?<=[.!?\u3002\uff01\uff1f])\\s+|\n+")

# Enum members bound once: ``EventType.X`` goes through the enum machinery on every
# lookup, and these tests run for every candidate event of a build.
_TOOL_CALL = EventType.TOOL_CALL
_TOOL_RESULT = EventType.TOOL_RESULT
_ERROR = EventType.ERROR
_NOT_LINES = frozenset({EventType.STATE_DELTA, EventType.SUMMARY})
# Events a line's least cost leaves out (tool results show shortened output).
_NOT_LINES_AT_LEAST = frozenset({EventType.STATE_DELTA, EventType.SUMMARY, EventType.TOOL_RESULT})


@dataclass(eq=False)  # compared by identity: events are large, and equal ones are the same
class Candidate:
    """An older atom (or a whole turn) that may go into the window.

    What it costs is measured only when the choice reaches it (:func:`measure`): most
    candidates of a long session are never looked at.
    """

    atom: Atom
    score: float
    tokens: int | None = None  # None: not measured yet
    piece: Piece | None = None  # rendered as messages, when it may extend the recent window
    contiguous_before: int | None = None  # first seq of what it directly precedes
    drop_reason: str = "budget"
    lines: tuple[BlockLine, ...] = ()  # one per event shown as a block line
    unit: Unit | None = None  # its whole turn, when it may extend the recent window
    as_messages: bool = False  # priced as messages (no query) rather than as block lines


def measure(run: Run, candidate: Candidate, terms: frozenset[str]) -> int:
    """Render ``candidate`` (its lines, and its messages when it may extend the recent
    window) and return its cost in tokens."""
    if candidate.tokens is not None:
        return candidate.tokens
    if candidate.as_messages:
        piece_of(run, candidate)
    candidate.lines = _lines(candidate.atom, terms, run)
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


def piece_of(run: Run, candidate: Candidate) -> Piece | None:
    """``candidate``'s whole turn rendered as messages (None when it has no turn)."""
    if candidate.piece is None and candidate.unit is not None:
        candidate.piece = _unit_piece(run, candidate.unit, shorten=False)
    return candidate.piece


def estimated_tokens(candidate: Candidate) -> int:
    """What ``candidate`` will cost, from the events' stored estimates (for the split)."""
    if candidate.tokens is not None:
        return candidate.tokens
    return sum(e.token_estimate + LINE_OVERHEAD for e in candidate.atom.events)


def older_candidates(
    run: Run,
    rest: list[Unit],
    *,
    core_start: int,
    query: str | None,
    retriever: Retriever | None,
    hidden: Callable[[int], bool] | None = None,
    retracted: Callable[[int], bool] | None = None,
) -> list[Candidate]:
    """Every older atom the strategy may use, scored (higher first).

    ``hidden``: seqs folded into a summary and so left out of the recent window; they
    may lie inside the recent core's span, and are searched there too. ``retracted``:
    seqs taken back, never shown.
    """
    config = run.config
    strategy = config.strategy
    terms = query_terms_of(query)
    candidates: list[Candidate] = []
    ordered = list(reversed(rest))  # newest first
    n = max(1, len(ordered))

    if strategy in ("full", "compressed"):
        budget_messages = (
            config.full.max_messages if strategy == "full" else config.compressed.medium_recent
        )
        messages = 0
        for order, unit in enumerate(ordered):
            count = len(unit.events)
            if messages + count > budget_messages:
                for atom in unit.atoms:
                    candidates.append(
                        _left_out(atom, "compacted" if strategy == "compressed" else "budget")
                    )
                continue
            messages += count
            piece = _unit_piece(run, unit, shorten=strategy == "compressed")
            candidates.append(
                Candidate(
                    atom=Atom(unit.events),
                    score=1.0 - order / n,
                    tokens=piece.tokens,
                    piece=piece,
                    contiguous_before=_next_seq(unit),
                    as_messages=True,
                )
            )
        return candidates

    adaptive = config.adaptive
    important = _keyword_pattern(adaptive.important_keywords)
    relevance: dict[int, float] = {}  # hits and their neighbours
    hit_relevance: dict[int, float] = {}  # the hits alone
    subject: str | None = None  # the session author the query names
    if query and retriever is not None:

        def searchable(seq: int) -> bool:  # not already shown in the recent core
            if retracted is not None and retracted(seq):
                return False
            return 0 < seq < core_start or (hidden is not None and hidden(seq))

        search_started = time.perf_counter()
        retrieval = retriever.retrieve(
            run.user_id,
            run.session_id,
            query,
            # Enough candidates to fill the room a large budget leaves.
            limit=max(adaptive.retrieval_candidates, run.budget // TOKENS_PER_CANDIDATE),
            before_seq=core_start if hidden is None else None,
        )
        run.search_ms = (time.perf_counter() - search_started) * 1e3
        subject = retrieval.subject
        hits = worth_reading(
            [hit for hit in retrieval.hits if searchable(hit.seq)],
            run.budget,
            minimum=adaptive.retrieval_candidates,
        )
        top = max((h.score for h in hits), default=0.0) or 1.0
        for rank, hit in enumerate(hits):
            hit_relevance[hit.seq] = hit.score / top
            relevance[hit.seq] = max(relevance.get(hit.seq, 0.0), hit.score / top)
            neighbours = adaptive.neighbours if rank < NEIGHBOURED_HITS else 0
            for offset in range(1, neighbours + 1):
                for seq in (hit.seq - offset, hit.seq + offset):
                    if searchable(seq):
                        near = adaptive.neighbour_weight * hit.score / top / offset
                        relevance[seq] = max(relevance.get(seq, 0.0), near)
    elif query:
        # No index: rank what was loaded by word overlap with the query.
        for unit in rest:
            for event in unit.events:
                overlap = len(terms & _query_terms(event_text(event)))
                if overlap:
                    relevance[event.seq] = overlap / max(1, len(terms))

    loaded = {e.seq for unit in rest for e in unit.events}
    # Seed 004's layers: after the core, decisions and errors before the other background
    # (without a query, newest first within each layer); with a query, relevance leads.
    recency_weight = 0.0 if strategy == "semantic" else (0.1 if relevance else 0.5)
    importance_weight = 0.15 if relevance else 1.0

    for order, unit in enumerate(ordered):
        recency = 1.0 - order / n
        if not relevance:
            unit_important = any(_is_important(e, important) for e in unit.events)
            candidates.append(
                Candidate(
                    atom=Atom(unit.events),
                    score=recency_weight * recency + importance_weight * unit_important,
                    contiguous_before=_next_seq(unit),
                    unit=unit,
                    as_messages=True,
                )
            )
            continue
        for atom in unit.atoms:
            candidate = _scored_atom(
                atom, relevance, recency * recency_weight, importance_weight, important
            )
            if len(unit.atoms) == 1:
                # A one-atom turn may also extend the recent window as messages.
                candidate.unit = unit
                candidate.contiguous_before = _next_seq(unit)
            candidates.append(candidate)
    # Retrieved events older than what was loaded.
    older = sorted(seq for seq in relevance if seq not in loaded)
    if older:
        # Events read for the search are older than what was loaded, except folded ones
        # (left out of the recent read): those take the recency of the turn they sit in.
        starts = sorted((unit.first_seq, 1.0 - order / n) for order, unit in enumerate(ordered))
        first_seqs = [start for start, _ in starts]
        fetched = run.fetch(older)
        for atom in atoms_of(fetched):
            at = bisect.bisect_right(first_seqs, atom.first_seq) - 1
            recency = starts[at][1] * recency_weight if at >= 0 else 0.0
            candidates.append(_scored_atom(atom, relevance, recency, importance_weight, important))
    if relevance and adaptive.day_weight > 0:
        favour_matching_days(candidates, hit_relevance, relevance, adaptive.day_weight)
    if relevance and (adaptive.fact_weight > 0 or adaptive.name_weight > 0):
        favour_informative(
            candidates, relevance, adaptive.fact_weight, adaptive.name_weight, subject=subject
        )
    if relevance and subject is not None and adaptive.subject_weight > 0:
        favour_subject(candidates, relevance, subject, adaptive.subject_weight)
    if strategy == "semantic" and relevance:
        for candidate in candidates:
            if candidate.score <= 0:
                candidate.drop_reason = "not_relevant"
    return candidates


BLOCK_HEADING = "Earlier in this conversation (retrieved; oldest first):"


def choose_older(
    candidates: list[Candidate],
    room: int,
    config: ContextConfig,
    block_header: int,
    *,
    cost_of: Callable[[Candidate], int],
    least_cost_of: Callable[[Candidate], int] = lambda _: 0,
    heading_cost: Callable[[str], int] | None = None,
) -> tuple[list[Candidate], list[Candidate]]:
    """The best candidates that fit in ``room`` tokens, and the rest.

    ``block_header`` is what the retrieved block costs beyond its lines (heading and
    message framing), paid once by the first candidate that goes there. ``cost_of``
    measures a candidate (see :func:`measure`); it is called in rank order, and not at
    all once the room left is too small for any line, nor for a candidate whose
    ``least_cost_of`` (a bound below its cost, see :func:`least_cost`) exceeds the room.
    With ``heading_cost`` (what a day's heading costs), a candidate going into the block
    is charged what its lines add to the lines chosen before it
    (:class:`~agentctx.context.layout.BlockLayout`: a day's heading once, no name after
    a line by the same author) rather than its cost alone.
    """
    chosen: list[Candidate] = []
    rest: list[Candidate] = []
    ranked = sorted(
        candidates, key=lambda c: (-c.score, -(c.atom.events[0].seq if c.atom.events else 0))
    )
    header_paid = False
    layout = BlockLayout(heading_cost) if heading_cost is not None else None
    newest_first_only = config.strategy in ("full", "compressed")
    full = False
    for candidate in ranked:
        if full or room < SMALLEST_LINE:
            rest.append(candidate)
            continue
        if candidate.drop_reason != "budget" or (
            config.strategy == "semantic" and candidate.score <= 0
        ):
            rest.append(candidate)
            continue
        if least_cost_of(candidate) > room:
            _passed_over(candidate, config)
            rest.append(candidate)
            full = newest_first_only
            continue
        cost = cost_of(candidate)
        in_block = not candidate.as_messages
        laid_out = in_block and layout is not None and bool(candidate.lines)
        if laid_out:
            assert layout is not None
            cost = layout.price(candidate.lines)
        if in_block and not header_paid:
            cost += block_header
        if cost <= room:
            chosen.append(candidate)
            room -= cost
            header_paid = header_paid or in_block
            if laid_out:
                assert layout is not None
                layout.add(candidate.lines)
        else:
            _passed_over(candidate, config)
            rest.append(candidate)
            # full and compressed keep an unbroken run of the newest turns.
            full = newest_first_only
    return chosen, rest


def _passed_over(candidate: Candidate, config: ContextConfig) -> None:
    """Why a candidate that did not fit is left out: barely relevant, or the budget."""
    if config.strategy in ("adaptive", "semantic") and candidate.score < 0.05:
        candidate.drop_reason = "not_relevant"


SMALLEST_LINE = 4
"""No line costs fewer tokens than this (author, text, newline): below it, stop looking."""


def compact_lines(candidates: list[Candidate], config: ContextConfig) -> list[str]:
    """The retrieved block's lines: every chosen event, oldest first, under a heading
    for each day (the day is what questions about *when* need; a time of day on
    every line would cost about an eighth of the block), the author's name left out
    after a line by the same author (see :mod:`agentctx.context.layout`)."""
    return render_block(line for candidate in candidates for line in candidate.lines)


def _scored_atom(
    atom: Atom,
    relevance: dict[int, float],
    recency: float,
    importance_weight: float,
    important: _Keywords | None,
) -> Candidate:
    events = atom.events
    if len(events) == 1:  # most atoms: one event, scored without generators
        rel = relevance.get(events[0].seq, 0.0)
        flagged = _is_important(events[0], important)
    else:
        rel = max((relevance.get(e.seq, 0.0) for e in events), default=0.0)
        flagged = any(_is_important(e, important) for e in events)
    return Candidate(
        atom=atom, score=rel + recency + importance_weight * flagged * (1.0 if rel else 0.3)
    )


DAY_HEADING_SHARE = 2
"""Tokens each line is charged towards its day's heading ("## 2024-03-01 (Friday)")."""


WHOLE_LINE_TOKENS = 256
"""Lines up to this long are kept whole while they take at most a quarter of the budget."""


def line_limit(run: Run) -> int:
    """The most tokens one retrieved line may take before it is shortened.

    A quarter of the most a message may take (by default an eighth of the budget), but
    a line of up to :data:`WHOLE_LINE_TOKENS` may take a quarter of the budget: a chat
    message is seldom longer, and a message shown shortened is one the model can no
    longer quote whole. On the development chats, keeping such lines whole at a 1k
    budget (an eighth shortens any line over 125 tokens) raised evidence recall there
    from 0.735 to 0.752 and left it unchanged at 2k-8k.
    """
    whole = min(run.budget // 4, WHOLE_LINE_TOKENS, run.max_message_tokens)
    return max(48, run.max_message_tokens // 4, whole)


def _lines(atom: Atom, terms: frozenset[str], run: Run) -> tuple[BlockLine, ...]:
    """A block line for each event of ``atom`` that shows as one."""
    limit = line_limit(run)
    out = []
    count = run.counter.count
    for index, event in enumerate(atom.events):
        shown = _line(event, run)
        if shown is None:
            continue
        who, text = shown
        label = f"{who}: " if who is not None else ""
        label_tokens = count(label) if label else 0
        text_tokens = count(text)
        if label_tokens + text_tokens > limit:
            line = _shorten(label + text, terms, limit, run)
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
                day=run.day_of(event.ts),
                who=who,
                text=text,
                label_tokens=label_tokens,
                text_tokens=text_tokens,
            )
        )
    return tuple(out)


def _line(event: Event, run: Run) -> tuple[str | None, str] | None:
    """(author, text) of an event's line; no author for lines that say what they are."""
    if event.type in _NOT_LINES:
        return None
    who = event.author or (event.role.value if event.role is not None else event.type.value)
    # A tool result shows as its messages would: shortened by its tool's strategy.
    shown = run.tool_result_text(event) if event.type is _TOOL_RESULT else None
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


def _shorten(line: str, terms: frozenset[str], limit: int, run: Run) -> str:
    """The sentences of ``line`` that matter to the query, within ``limit`` tokens."""
    head, sep, body = line.partition(": ")
    sentences = [s for s in _SENTENCE.split(body) if s.strip()]
    if terms and len(sentences) > 1:
        keep = [s for s in sentences if _query_terms(s) & terms] or sentences[:1]
        candidate = f"{head}{sep}" + " … ".join(keep) + " [shortened]"
        if run.counter.count(candidate) <= limit:
            return candidate
    return run.counter.truncate(line, limit)


def _unit_piece(run: Run, unit: Unit, *, shorten: bool) -> Piece:
    from agentctx.context.run import Piece  # noqa: PLC0415 - circular by design

    pieces = [run.piece(atom) for atom in unit.atoms]
    messages: list[dict[str, Any]] = [m for p in pieces for m in p.messages]
    tokens = sum(p.tokens for p in pieces)
    if shorten:
        ratio = run.config.compressed.compression_ratio
        for message in messages:
            content = message.get("content")
            if isinstance(content, str) and content:
                count = run.counter.count(content)
                if count > 24:
                    message["content"] = run.counter.truncate(content, max(16, int(count * ratio)))
        tokens = run.cost_all(messages)
    return Piece(Atom(unit.events), messages, tokens)


def _left_out(atom: Atom, reason: str) -> Candidate:
    return Candidate(atom=atom, score=0.0, tokens=0, drop_reason=reason)


def _next_seq(unit: Unit) -> int:
    return unit.last_seq + 1


@dataclass(frozen=True)
class _Keywords:
    """Keywords found by a substring test first (cheap), confirmed by a word-edge regex."""

    words: tuple[str, ...]
    pattern: re.Pattern[str]
    # event hash -> whether its text has a keyword. Events never change, and one set of
    # keywords (one instance, see _keyword_pattern) tests the same events build after
    # build: a long session's windows consider a thousand each. By hash, not id: a
    # caller may choose ids, and one process may hold several databases.
    found: dict[str, bool] = field(default_factory=dict, compare=False, hash=False)


def _is_important(event: Event, keywords: _Keywords | None) -> bool:
    if event.type is _ERROR or event.meta.status == "error":
        return True
    if keywords is None:
        return False
    found = keywords.found.get(event.hash)
    if found is None:
        found = _has_keyword(event, keywords)
        remember(keywords.found, event.hash, found, REMEMBERED_EVENTS)
    return found


REMEMBERED_EVENTS = 100_000
"""Events whose keyword test one set of keywords remembers."""


def _has_keyword(event: Event, keywords: _Keywords) -> bool:
    parts = event.parts
    if len(parts) == 1:  # the usual single part: no join
        text = parts[0].text if isinstance(parts[0], TextPart) else ""
    else:
        text = event.text
    folded = text.casefold()
    if not any(map(folded.__contains__, keywords.words)):
        return False
    return keywords.pattern.search(text) is not None


@functools.lru_cache(maxsize=32)
def _keyword_pattern(words: tuple[str, ...]) -> _Keywords | None:
    if not words:
        return None
    alternatives = [
        rf"\b{re.escape(w)}\b" if w.isascii() else re.escape(w)
        for w in sorted(words, key=len, reverse=True)
    ]
    return _Keywords(
        tuple(w.casefold() for w in words), re.compile("|".join(alternatives), re.IGNORECASE)
    )


def query_terms_of(query: str | None) -> frozenset[str]:
    """The terms of ``query`` that relevance and line shortening look for."""
    return frozenset(document_terms(query)) if query else frozenset()


def _query_terms(text: str) -> set[str]:
    """The search index's own analysis (stopwords out, stems, CJK bigrams), as a set."""
    return set(document_terms(text))
