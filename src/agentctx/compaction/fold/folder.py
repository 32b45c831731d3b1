""":class:`EventFolder`: writes folds when a session passes its thresholds, and gives its view."""

from __future__ import annotations

import bisect
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, select

from agentctx.cache.bounded import Lru
from agentctx.compaction.fold.config import FoldConfig
from agentctx.compaction.fold.plan import (
    FOLD,
    EventHead,
    FoldSummary,
    Ranges,
    atoms_of,
    choose_batch,
    merge_group,
    merge_ranges,
    range_size,
    to_ranges,
    top_level,
)
from agentctx.compaction.offline.summarize import extractive_summary
from agentctx.compaction.thread import SUMMARY_SCHEMA, EventLoader
from agentctx.compaction.versions import of_session, write_version_once
from agentctx.compute import Compute, InlineCompute
from agentctx.context.render import NOT_RENDERED, event_text
from agentctx.context.sources import SummaryItem
from agentctx.errors import ConfigError, SessionNotFound
from agentctx.events import Event, EventType, utcnow
from agentctx.ids import new_id
from agentctx.jobs import Job
from agentctx.llm.chat import LLM, LLMError, LLMFailureHook
from agentctx.storage import fastsql
from agentctx.storage.database import Database
from agentctx.storage.schema import events as events_table
from agentctx.storage.schema import sessions as sessions_table
from agentctx.storage.schema import summaries as summaries_table
from agentctx.tokens import TokenCounter, truncate_text

log = logging.getLogger(__name__)

FOLD_JOB = "fold"
"""The turn-end job that folds a session, and the ``job_kind`` ``on_llm_failure`` is told."""

ViewItem = Event | FoldSummary
"""One item of a session's folded view: an event kept verbatim, or a top-level fold."""

_METHOD_CHARS = 256  # the width of the ``method`` column
_LINE_TOKENS = 600  # the most one event shows in the model's prompt
_SETTLED_SESSIONS = 10_000  # sessions remembered as having nothing due
_MAX_STEPS = 10_000  # a guard: every step covers new events or lowers the top-level count

_EVENTS_INSTRUCTIONS = (
    "You compress an older stretch of a conversation between a user and an AI agent into "
    "a summary that replaces it in the agent's context. Keep what the agent did and "
    "learned: tool calls and what they returned, decisions, facts, names, numbers, dates "
    "and errors; drop chit-chat. Write plain prose in the conversation's language, at "
    'most about {words} words. Answer with JSON: {{"summary": "<the summary>"}}.'
)
_SUMMARIES_INSTRUCTIONS = (
    "You merge consecutive summaries of older parts of a conversation between a user and "
    "an AI agent into one summary, oldest first. Keep decisions, facts, names, numbers, "
    "dates, errors and what the tools returned; drop repetition. Write plain prose in the "
    'conversation\'s language, at most about {words} words. Answer with JSON: {{"summary": '
    '"<the summary>"}}.'
)


@dataclass(frozen=True, slots=True)
class FoldDraft:
    """A computed fold not yet stored: what :meth:`EventFolder.commit` writes."""

    user_id: str
    session_id: str
    version: int
    level: int
    text: str
    seq_ranges: Ranges
    token_count: int
    method: str


@dataclass(frozen=True, slots=True)
class _State:
    """One consistent reading of a session: its events, folds and live view."""

    user_id: str
    session_id: str
    events: list[EventHead]
    folds: list[FoldSummary]
    tops: list[FoldSummary]
    unfolded: list[EventHead]
    tokens: list[int]  # the live cost of each unfolded event

    @property
    def live_tokens(self) -> int:
        return sum(self.tokens) + sum(fold.token_count for fold in self.tops)

    @property
    def next_version(self) -> int:
        return max((fold.version for fold in self.folds), default=0) + 1


class EventFolder:
    """Folds old events into summaries (recursively) and gives the view that enters a window.

    ``load_events`` reads a session's events (``SessionService.events``); ``counter``
    measures the live tokens; ``llm`` (optional) writes the summaries, with the
    offline extractive method standing in when it fails, in which case
    ``on_llm_failure`` is told. With ``catch_up`` (no background worker), :meth:`view`
    first folds whatever is due.
    """

    def __init__(
        self,
        db: Database,
        load_events: EventLoader,
        counter: TokenCounter,
        llm: LLM | None = None,
        *,
        config: FoldConfig | None = None,
        on_llm_failure: LLMFailureHook | None = None,
        catch_up: bool = False,
        tool_result_tokens: int | None = None,
        compute: Compute | None = None,
    ) -> None:
        self.db = db
        self._load = load_events
        self.counter = counter
        self.llm = llm
        self.config = config or FoldConfig()
        # Offline summaries: in a worker process with background jobs (agentctx.compute).
        self._compute: Compute = compute or InlineCompute()
        self.on_llm_failure = on_llm_failure
        self.catch_up = catch_up
        # What a tool result costs a window at most, when windows shorten tool output:
        # live tokens count what a window would carry, not the raw output's size.
        self.tool_result_tokens = tool_result_tokens
        # Catching up reads a whole session; a session whose last seq has not moved
        # since a pass found nothing due has nothing due now (folds only lower the live
        # tokens), so windows of a settled session skip that read.
        self._settled: Lru[tuple[str, str], int] = Lru(_SETTLED_SESSIONS)

    # Reading ----------------------------------------------------------------------------

    def folds(self, user_id: str, session_id: str) -> list[FoldSummary]:
        """Every stored fold of a session (superseded ones too), oldest version first."""
        with self.db.read() as conn:
            return _folds(conn, user_id, session_id)

    def top_folds(self, user_id: str, session_id: str) -> list[FoldSummary]:
        """The folds that stand in the view (none superseded), by first covered seq."""
        return top_level(self.folds(user_id, session_id))

    def view(self, user_id: str, session_id: str) -> list[ViewItem]:
        """What enters the window, in seq order: events no fold covers, verbatim, and each
        top-level fold at its first covered seq. Every event is in exactly one item."""
        self._catch_up(user_id, session_id)
        state = self._state(user_id, session_id)
        unfolded = self._load(user_id, session_id, seqs=[e.seq for e in state.unfolded])
        items: list[ViewItem] = [*unfolded, *state.tops]
        return sorted(items, key=lambda item: item.seq)

    def summaries(self, user_id: str, session_id: str) -> Sequence[SummaryItem]:
        """The top-level folds as a builder summary source (``kind="fold"``), oldest first.

        Their ``seq_ranges`` name the events they stand for; a window that shows them
        leaves those events out (see :meth:`view`).
        """
        self._catch_up(user_id, session_id)
        return [fold.item() for fold in self.top_folds(user_id, session_id)]

    def live_tokens(self, user_id: str, session_id: str) -> int:
        """What the view counts: unfolded rendered events plus top-level fold texts."""
        return self._state(user_id, session_id).live_tokens

    # Folding ----------------------------------------------------------------------------

    def maybe_fold(self, user_id: str, session_id: str) -> list[FoldSummary]:
        """Fold what is due; the folds this call wrote, oldest first.

        Once the live tokens pass ``high_tokens``, the oldest foldable events are folded
        (in folds of at most ``max_events_per_fold`` events) until they are at most
        ``low_tokens`` or nothing foldable is left; then top-level folds are folded a
        level higher while :func:`~agentctx.compaction.fold.plan.merge_group` finds a
        group due. A fold another worker wrote first is not repeated: the next one is
        planned from what is stored.
        """
        written: list[FoldSummary] = []
        continuing = False
        # The events are read once per pass (folds are re-read every step): a pass
        # folds what was written when it began; later events wait for the next pass.
        events: list[EventHead] | None = None
        for _ in range(_MAX_STEPS):
            state = self._state(user_id, session_id, events)
            events = state.events
            draft = self._plan(state, continuing=continuing)
            if draft is None:
                break
            stored, ours = self._commit(draft)
            if stored is None:
                break  # the session is gone
            if not ours:
                continuing = True  # another worker's fold; plan again from the store
                continue
            written.append(stored)
            continuing = draft.level == 0
        return written

    def plan(self, user_id: str, session_id: str, *, continuing: bool = False) -> FoldDraft | None:
        """The next fold to write, computed but not stored; None when none is due.

        ``continuing``: an earlier fold of this pass left the live tokens above
        ``low_tokens``; fold on to ``low_tokens`` though they are not above
        ``high_tokens``.
        """
        if not self.config.enabled:
            return None  # without reading the session
        return self._plan(self._state(user_id, session_id), continuing=continuing)

    def _plan(self, state: _State, *, continuing: bool) -> FoldDraft | None:
        if not self.config.enabled:
            return None
        threshold = self.config.low_tokens if continuing else self.config.high_tokens
        live = state.live_tokens
        if live > threshold:
            atoms = atoms_of(state.unfolded, state.tokens, self.config)
            batch = choose_batch(atoms, live, self.config.low_tokens, self.config)
            if sum(atom.tokens for atom in batch) > 0:  # not only state changes
                events = [event for atom in batch for event in atom.events]
                return self._fold_events(state, events)
        group = merge_group(state.tops, self.config)
        if group:
            return self._fold_summaries(state, group)
        return None

    def commit(self, draft: FoldDraft) -> FoldSummary | None:
        """Store ``draft`` as its version, once.

        When that version exists already (another worker wrote it first, or an earlier
        run of the same job), the stored fold is returned and ``draft`` dropped. None
        when the session is gone.
        """
        return self._commit(draft)[0]

    def _commit(self, draft: FoldDraft) -> tuple[FoldSummary | None, bool]:
        """The stored fold of ``draft``'s version, and whether this call wrote it."""
        fold = FoldSummary(
            summary_id=f"sum_{new_id()}",
            user_id=draft.user_id,
            session_id=draft.session_id,
            version=draft.version,
            level=draft.level,
            text=draft.text,
            first_seq=draft.seq_ranges[0][0],
            last_seq=draft.seq_ranges[-1][1],
            seq_ranges=draft.seq_ranges,
            source_event_count=range_size(draft.seq_ranges),
            token_count=draft.token_count,
            method=draft.method,
            created_at=utcnow(),
        )
        written, stored = write_version_once(
            self.db,
            lambda conn: self._insert(conn, fold),
            user_id=draft.user_id,
            session_id=draft.session_id,
            kind=FOLD,
            version=draft.version,
        )
        if written:
            return fold, True
        return (FoldSummary.from_row(stored) if stored is not None else None), False

    def _insert(self, conn: Connection, fold: FoldSummary) -> None:
        """Insert the row inside the caller's write transaction."""
        conn.execute(insert(summaries_table), [fold.row()])

    def on_turn_end(self, job: Job) -> None:
        """The ``fold`` turn-end job: fold what the session has due."""
        if job.user_id is None or job.session_id is None:
            return
        with contextlib.suppress(SessionNotFound):  # deleted since the turn ended
            self.maybe_fold(job.user_id, job.session_id)

    # Internals --------------------------------------------------------------------------

    def _catch_up(self, user_id: str, session_id: str) -> None:
        """With ``catch_up``, fold what is due before a read, unless the session is settled."""
        if not (self.catch_up and self.config.enabled):
            return
        key = (user_id, session_id)
        with self.db.read() as conn:
            last_seq = conn.execute(
                select(sessions_table.c.last_seq).where(
                    sessions_table.c.user_id == user_id, sessions_table.c.session_id == session_id
                )
            ).scalar()
        if last_seq is None:
            return
        if self._settled.get(key) == last_seq:
            return
        self.maybe_fold(user_id, session_id)
        self._settled.put(key, last_seq)

    def _state(
        self, user_id: str, session_id: str, events: list[EventHead] | None = None
    ) -> _State:
        # Folds are read before events: a fold never covers an event not yet written.
        # (Events read earlier in a pass are older than any fold read now.) Only the
        # events' heads are read: planning needs no content, and a session is long.
        folds = self.folds(user_id, session_id)
        if events is None:
            events = self._heads(user_id, session_id)
        covered = merge_ranges(*(fold.seq_ranges for fold in folds))
        starts = [start for start, _ in covered]
        unfolded = [e for e in events if not _covered(e.seq, covered, starts)]
        return _State(
            user_id=user_id,
            session_id=session_id,
            events=events,
            folds=folds,
            tops=top_level(folds),
            unfolded=unfolded,
            tokens=self._costs(unfolded),
        )

    def _heads(self, user_id: str, session_id: str) -> list[EventHead]:
        query = (
            select(
                events_table.c.seq,
                events_table.c.type,
                events_table.c.call_id,
                events_table.c.turn_id,
                events_table.c.token_estimate,
            )
            .where(events_table.c.user_id == user_id, events_table.c.session_id == session_id)
            .order_by(events_table.c.seq)
        )
        with self.db.read() as conn:
            rows = conn.execute(query).all()
        return [
            EventHead(int(seq), EventType(kind), call_id, turn_id, int(tokens))
            for seq, kind, call_id, turn_id, tokens in rows
        ]

    def _costs(self, events: Sequence[EventHead | Event]) -> list[int]:
        # The estimate stored with each event at write time: counting every event's text
        # again on every pass would make each turn's fold cost grow with the history.
        cap = self.tool_result_tokens
        return [
            0
            if e.type in NOT_RENDERED
            else min(e.token_estimate, cap)
            if cap is not None and e.type is EventType.TOOL_RESULT
            else e.token_estimate
            for e in events
        ]

    def _fold_events(self, state: _State, heads: Sequence[EventHead]) -> FoldDraft:
        events = self._load(state.user_id, state.session_id, seqs=[e.seq for e in heads])
        shown = [e for e in events if e.type not in NOT_RENDERED]
        lines = [line for line in (_line(e) for e in shown) if line]
        # Never longer than what it replaces.
        budget = max(16, min(self.config.summary_tokens, sum(self._costs(shown))))
        summary = self._summarize(
            state, lines, budget=budget, instructions=_EVENTS_INSTRUCTIONS, name="fold_events"
        )
        return self._draft(state, 0, summary, to_ranges(e.seq for e in events))

    def _fold_summaries(self, state: _State, group: Sequence[FoldSummary]) -> FoldDraft:
        lines = [f"[seq {g.first_seq}-{g.last_seq}] {g.text}" for g in group if g.text]
        summary = self._summarize(
            state,
            lines,
            budget=self.config.summary_tokens,
            instructions=_SUMMARIES_INSTRUCTIONS,
            name="fold_summaries",
        )
        level = max(g.level for g in group) + 1
        return self._draft(state, level, summary, merge_ranges(*(g.seq_ranges for g in group)))

    def _draft(
        self, state: _State, level: int, summary: tuple[str, str], ranges: Ranges
    ) -> FoldDraft:
        text, method = summary
        return FoldDraft(
            user_id=state.user_id,
            session_id=state.session_id,
            version=state.next_version,
            level=level,
            text=text,
            seq_ranges=ranges,
            token_count=self.counter.count(text) if text else 0,
            method=method[:_METHOD_CHARS],
        )

    def _summarize(
        self, state: _State, lines: Sequence[str], *, budget: int, instructions: str, name: str
    ) -> tuple[str, str]:
        """The summary of ``lines`` within ``budget`` tokens, and the method that made it."""
        if not lines:
            return "", "offline"
        if self.llm is not None:
            try:
                text = self._llm_summary(self.llm, lines, budget, instructions, name)
                return text, f"llm:{self.llm.name}"
            except (LLMError, ConfigError) as exc:
                # The offline method does the job; the record says why, and so may the log.
                log.warning("fold: llm failed (%s), offline instead: %s", exc.code, exc)
                method = f"offline (llm failed: {exc.code})"
                if self.on_llm_failure is not None:
                    self.on_llm_failure(state.user_id, state.session_id, FOLD_JOB, exc)
        else:
            method = "offline"
        summary = self._compute.run(
            extractive_summary, list(lines), budget_tokens=budget, counter=self.counter
        )
        return summary.text, method

    def _llm_summary(
        self, llm: LLM, lines: Sequence[str], budget: int, instructions: str, schema_name: str
    ) -> str:
        prompt = "\n".join(truncate_text(self.counter, line, _LINE_TOKENS) for line in lines)
        answer = llm.complete(
            [
                {"role": "system", "content": instructions.format(words=max(10, budget * 3 // 4))},
                {"role": "user", "content": prompt},
            ],
            schema=SUMMARY_SCHEMA,
            schema_name=schema_name,
            max_tokens=budget * 2 + 64,  # room for the JSON around the text
        )
        data = answer.data
        text = data.get("summary", "") if isinstance(data, dict) else ""
        text = text.strip() if isinstance(text, str) else ""
        if not text:
            raise LLMError("the model returned an empty summary")
        # A model may overshoot the length it was asked for; the budget is a hard bound.
        return truncate_text(self.counter, text, budget, keep="head")


def _line(event: Event) -> str:
    """An event as one line of the text a fold summarizes: seq, who, what."""
    text = event_text(event).strip()
    if event.type == EventType.TOOL_CALL:
        name = event.payload.get("name") or event.meta.tool_name or "tool"
        return f"[{event.seq}] tool call {name}: {text}"
    if event.type == EventType.TOOL_RESULT:
        return f"[{event.seq}] tool result: {text}" if text else ""
    who = event.role.value if event.role is not None else event.type.value
    return f"[{event.seq}] {who}: {text}" if text else ""


def _covered(seq: int, ranges: Ranges, starts: Sequence[int]) -> bool:
    """Whether ``seq`` is in merged ``ranges`` (``starts``: their starts, ascending): a
    long session's folds are many, and every event is looked up on each pass."""
    at = bisect.bisect_right(starts, seq) - 1
    return at >= 0 and seq <= ranges[at][1]


def _folds_statement() -> Any:
    return of_session(FOLD).order_by(summaries_table.c.version)


def _folds(conn: Connection, user_id: str, session_id: str) -> list[FoldSummary]:
    # Read by every window of a session with folding on: compiled once.
    found = fastsql.statement(conn, "session_folds", _folds_statement)
    rows = found.fetch_mappings(conn, {"user_id": user_id, "session_id": session_id})
    return [FoldSummary.from_row(row) for row in rows]
