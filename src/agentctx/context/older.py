"""Older events that may join a window, scored, and the choice of those that fit.

Seed 004's layers order them: relevance to the query (hybrid search over the session,
plus the neighbours of each hit), then decisions and errors, then recency. ``semantic``
also weighs the priors of :mod:`agentctx.context.relevance` and
:mod:`agentctx.context.informative` (the day's match, statements of fact, names, whom the
query is about); the other strategies rank on the search alone.
"""

from __future__ import annotations

import bisect
import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from agentctx.cache.bounded import remember
from agentctx.context.config import ContextConfig
from agentctx.context.informative import favour_informative
from agentctx.context.layout import BlockLayout
from agentctx.context.lines import SMALLEST_LINE, query_terms_of, text_terms
from agentctx.context.pieces import Candidate
from agentctx.context.reader import LogReader
from agentctx.context.relevance import (
    NEIGHBOURED_HITS,
    TOKENS_PER_CANDIDATE,
    favour_matching_days,
    favour_subject,
    worth_reading,
)
from agentctx.context.render import event_text
from agentctx.context.sources import Retrieval, Retriever
from agentctx.context.units import Atom, Unit, atoms_of
from agentctx.events import Event, EventType, TextPart

_ERROR = EventType.ERROR


@dataclass
class OlderSearch:
    """What the search for older events found and cost."""

    candidates: list[Candidate] = field(default_factory=list)
    search_ms: float = 0.0  # time in the retriever's index lookup


@dataclass(frozen=True)
class Seen:
    """Which seqs a search may return: not shown already, not taken back."""

    before: int  # the first seq the window shows as history
    hidden: Callable[[int], bool] | None = None  # folded (and so searchable there too)
    retracted: Callable[[int], bool] | None = None

    def searchable(self, seq: int) -> bool:
        if self.retracted is not None and self.retracted(seq):
            return False
        return 0 < seq < self.before or (self.hidden is not None and self.hidden(seq))


def older_candidates(  # noqa: PLR0917 - the search's inputs
    config: ContextConfig,
    reader: LogReader,
    rest: list[Unit],
    seen: Seen,
    query: str | None,
    retriever: Retriever | None,
    budget: int,
    *,
    priors: bool,
    retrieval: Retrieval | None = None,
) -> OlderSearch:
    """Every older atom the strategy may use, scored (higher first).

    ``rest``: the loaded turns older than the history. With a query and a retriever, the
    search covers the whole session before the history (and folded events inside it), or
    ``retrieval`` is what a search found already;
    ``priors``: weigh the day's match, statements of fact, names and the query's subject
    (``semantic``) rather than the search alone.
    """
    terms = query_terms_of(query)
    found = OlderSearch()
    ordered = list(reversed(rest))  # newest first
    n = max(1, len(ordered))
    adaptive = config.adaptive
    important = keyword_pattern(adaptive.important_keywords)
    relevance: dict[int, float] = {}  # hits and their neighbours
    hit_relevance: dict[int, float] = {}  # the hits alone
    subject: str | None = None  # the session author the query names
    if query and (retriever is not None or retrieval is not None):
        if retrieval is None:
            assert retriever is not None
            search_started = time.perf_counter()
            retrieval = search(
                config,
                reader,
                retriever,
                query,
                budget,
                seen.before if seen.hidden is None else None,
            )
            found.search_ms = (time.perf_counter() - search_started) * 1e3
        subject = retrieval.subject
        hits = worth_reading(
            [hit for hit in retrieval.hits if seen.searchable(hit.seq)],
            budget,
            minimum=adaptive.retrieval_candidates,
        )
        top = max((h.score for h in hits), default=0.0) or 1.0
        for rank, hit in enumerate(hits):
            hit_relevance[hit.seq] = hit.score / top
            relevance[hit.seq] = max(relevance.get(hit.seq, 0.0), hit.score / top)
            neighbours = adaptive.neighbours if rank < NEIGHBOURED_HITS else 0
            for offset in range(1, neighbours + 1):
                for seq in (hit.seq - offset, hit.seq + offset):
                    if seen.searchable(seq):
                        near = adaptive.neighbour_weight * hit.score / top / offset
                        relevance[seq] = max(relevance.get(seq, 0.0), near)
    elif query:
        # No index: rank what was loaded by word overlap with the query.
        for unit in rest:
            for event in unit.events:
                overlap = len(terms & text_terms(event_text(event)))
                if overlap:
                    relevance[event.seq] = overlap / max(1, len(terms))

    loaded = {e.seq for unit in rest for e in unit.events}
    # Seed 004's layers: decisions and errors before the other background (without a
    # query, newest first within each layer); with a query, relevance leads.
    recency_weight = 0.1 if relevance else 0.5
    importance_weight = 0.15 if relevance else 1.0
    candidates = found.candidates

    for order, unit in enumerate(ordered):
        recency = 1.0 - order / n
        if not relevance:
            unit_important = any(is_important(e, important) for e in unit.events)
            candidates.append(
                Candidate(
                    atom=Atom(unit.events),
                    score=recency_weight * recency + importance_weight * unit_important,
                    contiguous_before=unit.last_seq + 1,
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
                candidate.contiguous_before = unit.last_seq + 1
            candidates.append(candidate)
    # Retrieved events older than what was loaded.
    older = sorted(seq for seq in relevance if seq not in loaded)
    if older:
        # Events read for the search are older than what was loaded, except folded ones
        # (left out of the recent read): those take the recency of the turn they sit in.
        starts = sorted((unit.first_seq, 1.0 - order / n) for order, unit in enumerate(ordered))
        first_seqs = [start for start, _ in starts]
        fetched = [e for e in reader.fetch(older) if e.type is not EventType.SYSTEM]
        for atom in atoms_of(fetched):
            at = bisect.bisect_right(first_seqs, atom.first_seq) - 1
            recency = starts[at][1] * recency_weight if at >= 0 else 0.0
            candidates.append(_scored_atom(atom, relevance, recency, importance_weight, important))
    if relevance and priors:
        weights = config.semantic
        if weights.day_weight > 0:
            favour_matching_days(candidates, hit_relevance, relevance, weights.day_weight)
        if weights.fact_weight > 0 or weights.name_weight > 0:
            favour_informative(
                candidates, relevance, weights.fact_weight, weights.name_weight, subject=subject
            )
        if subject is not None and weights.subject_weight > 0:
            favour_subject(candidates, relevance, subject, weights.subject_weight)
    return found


def search(  # noqa: PLR0917 - a search's inputs
    config: ContextConfig,
    reader: LogReader,
    retriever: Retriever,
    query: str,
    budget: int,
    before_seq: int | None,
) -> Retrieval:
    """The search's hits for ``query`` (events before ``before_seq``; all when None): enough
    candidates to fill the room a large budget leaves."""
    return retriever.retrieve(
        reader.user_id,
        reader.session_id,
        query,
        limit=max(config.adaptive.retrieval_candidates, budget // TOKENS_PER_CANDIDATE),
        before_seq=before_seq,
    )


def choose_older(
    candidates: list[Candidate],
    room: int,
    config: ContextConfig,
    block_header: int,
    *,
    cost_of: Callable[[Candidate], int],
    least_cost_of: Callable[[Candidate], int] = lambda _: 0,
    heading_cost: Callable[[str], int] | None = None,
    minimum_score: float = 0.0,
) -> tuple[list[Candidate], list[Candidate]]:
    """The best candidates that fit in ``room`` tokens, and the rest.

    ``block_header`` is what the retrieved block costs beyond its lines (heading and
    message framing), paid once by the first candidate that goes there. ``cost_of``
    measures a candidate (``lines.measure``); it is called in rank order, and not at all
    once the room left is too small for any line, nor for a candidate whose
    ``least_cost_of`` (a bound below its cost, ``lines.least_cost``) exceeds the room.
    With ``heading_cost`` (what a day's heading costs), a candidate going into the block
    is charged what its lines add to the lines chosen before it
    (:class:`~agentctx.context.layout.BlockLayout`: a day's heading once, no name after
    a line by the same author) rather than its cost alone. Candidates scoring below
    ``minimum_score`` are left out as not relevant.
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
        if candidate.score < minimum_score:
            candidate.drop_reason = "not_relevant"
            rest.append(candidate)
            continue
        if full or room < SMALLEST_LINE:
            rest.append(candidate)
            continue
        if candidate.drop_reason != "budget":
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


def _scored_atom(
    atom: Atom,
    relevance: dict[int, float],
    recency: float,
    importance_weight: float,
    important: Keywords | None,
) -> Candidate:
    events = atom.events
    if len(events) == 1:  # most atoms: one event, scored without generators
        rel = relevance.get(events[0].seq, 0.0)
        flagged = is_important(events[0], important)
    else:
        rel = max((relevance.get(e.seq, 0.0) for e in events), default=0.0)
        flagged = any(is_important(e, important) for e in events)
    return Candidate(
        atom=atom, score=rel + recency + importance_weight * flagged * (1.0 if rel else 0.3)
    )


@dataclass(frozen=True)
class Keywords:
    """Keywords found by a substring test first (cheap), confirmed by a word-edge regex."""

    words: tuple[str, ...]
    pattern: re.Pattern[str]
    # event hash -> whether its text has a keyword. Events never change, and one set of
    # keywords (one instance, see keyword_pattern) tests the same events build after
    # build: a long session's windows consider a thousand each. By hash, not id: a
    # caller may choose ids, and one process may hold several databases.
    found: dict[str, bool] = field(default_factory=dict, compare=False, hash=False)


REMEMBERED_EVENTS = 100_000
"""Events whose keyword test one set of keywords remembers."""


def is_important(event: Event, keywords: Keywords | None) -> bool:
    """Seed 004's importance: an error, or a decision-like keyword in the text."""
    if event.type is _ERROR or event.meta.status == "error":
        return True
    if keywords is None:
        return False
    found = keywords.found.get(event.hash)
    if found is None:
        found = _has_keyword(event, keywords)
        remember(keywords.found, event.hash, found, REMEMBERED_EVENTS)
    return found


def _has_keyword(event: Event, keywords: Keywords) -> bool:
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
def keyword_pattern(words: tuple[str, ...]) -> Keywords | None:
    """The compiled test for ``words`` (one instance per set of words)."""
    if not words:
        return None
    alternatives = [
        rf"\b{re.escape(w)}\b" if w.isascii() else re.escape(w)
        for w in sorted(words, key=len, reverse=True)
    ]
    return Keywords(
        tuple(w.casefold() for w in words), re.compile("|".join(alternatives), re.IGNORECASE)
    )
