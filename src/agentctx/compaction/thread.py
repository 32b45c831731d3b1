"""Thread summaries: one running summary per session, brought up to date incrementally.

When the events after the latest summary pass a message-count or token threshold,
they are summarized merged into the previous summary's text (by the configured chat
model, else by :func:`~agentctx.compaction.offline.extractive_summary`) and stored
as the next **version**: a new ``summaries`` row that names exactly what it covers,
``first_seq..last_seq`` of the session's events. Raw events are never rewritten,
and old versions are kept.

Writing is idempotent. A summary is computed first and written in one short
transaction afterwards; the version is unique per session, so when two workers
race (or a job runs twice) the second insert fails on the constraint, and the
worker returns the version the first one wrote instead. A worker killed before or
during the write leaves nothing behind, and the rerun writes the version once.

Summary events (type ``summary``) and state changes are not conversation: they are
inside the covered range but neither counted nor summarized.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Connection, RowMapping, insert, select

from agentctx.compaction.offline.summarize import extractive_summary
from agentctx.compaction.versions import of_session, write_version_once
from agentctx.compute import Compute, InlineCompute
from agentctx.context.render import event_text
from agentctx.context.sources import SummaryItem
from agentctx.errors import ConfigError, SessionNotFound
from agentctx.events import Event, EventType, utcnow
from agentctx.ids import new_id
from agentctx.jobs import Job
from agentctx.llm.chat import LLM, LLMError, LLMFailureHook
from agentctx.storage import fastsql
from agentctx.storage.database import Database
from agentctx.storage.schema import summaries as summaries_table
from agentctx.tokens import TokenCounter, truncate_text

log = logging.getLogger(__name__)

THREAD = "thread"
"""The ``kind`` of a thread summary."""

THREAD_JOB = "thread_summary"
"""The turn-end job that brings thread summaries up to date."""

SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string", "minLength": 1}},
    "required": ["summary"],
    "additionalProperties": False,
}
"""What the chat model answers: the merged summary as one string."""

_SKIPPED_TYPES = frozenset({EventType.SUMMARY, EventType.STATE_DELTA})
_METHOD_CHARS = 256  # the width of the ``method`` column

_INSTRUCTIONS = (
    "You maintain the running summary of a conversation between a user and an AI agent. "
    "Merge the new messages into the previous summary and return the updated summary. "
    "Keep the user's goals, decisions, facts, names, numbers, dates, errors and open "
    "questions; drop greetings and chit-chat. Write plain prose in the conversation's "
    "language, at most about {words} words. Answer with JSON: "
    '{{"summary": "<the updated summary>"}}.'
)

EventLoader = Callable[..., list[Event]]
"""``(user_id, session_id, start_seq=…) -> events`` in seq order (``SessionService.events``)."""


class ThreadSummaryConfig(BaseModel):
    """When a session's thread summary is brought up to date, and how long it may be."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(
        default=False,
        description="Keep a running summary of each session (off by default: in windows "
        "built for a query it takes room retrieved events would use).",
    )
    every_messages: int = Field(
        default=20, ge=1, description="Summarize once this many new messages are unsummarized."
    )
    every_tokens: int = Field(
        default=4000, ge=1, description="…or once the unsummarized messages count this many tokens."
    )
    budget_tokens: int = Field(
        default=300, ge=16, le=100_000, description="The most a summary may count."
    )
    max_events_per_update: int = Field(
        default=500,
        ge=1,
        description="The most events one update reads and folds in; a longer backlog "
        "(a bulk import) is caught up over successive updates, so none is unbounded.",
    )


@dataclass(frozen=True, slots=True)
class Summary:
    """One stored summary version: its text and exactly which events it covers.

    ``first_seq..last_seq`` (inclusive) is the covered range; ``source_event_count``
    the messages summarized in it; ``token_count`` the text's size by the engine's
    counter; ``method`` how it was made: ``offline``, ``llm:<model>``, or
    ``offline (llm failed: <code>)`` when the model failed and the offline method
    stood in.
    """

    summary_id: str
    user_id: str
    session_id: str
    kind: str
    version: int
    text: str
    first_seq: int
    last_seq: int
    source_event_count: int
    token_count: int
    method: str
    created_at: datetime

    @property
    def seq_ranges(self) -> tuple[tuple[int, int], ...]:
        """The covered events as inclusive seq ranges."""
        return ((self.first_seq, self.last_seq),)

    def item(self) -> SummaryItem:
        """This summary as the context builder takes it."""
        return SummaryItem(
            summary_id=self.summary_id, text=self.text, seq_ranges=self.seq_ranges, kind=self.kind
        )

    @classmethod
    def from_row(cls, row: RowMapping | Mapping[str, Any]) -> Summary:
        """A summary from a ``summaries`` row."""
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})


@dataclass(frozen=True, slots=True)
class SummaryDraft:
    """A computed summary not yet stored: what :meth:`ThreadSummarizer.commit` writes."""

    user_id: str
    session_id: str
    version: int
    text: str
    first_seq: int
    last_seq: int
    source_event_count: int
    token_count: int
    method: str


class ThreadSummarizer:
    """Keeps each session's thread summary up to date; the builder's summary source.

    ``load_events`` reads a session's events (the session service's ``events``);
    ``counter`` measures thresholds and budgets; ``llm`` (optional) writes the
    summaries, with the offline method standing in whenever it fails. With
    ``catch_up`` (no background worker), reading a session's summaries first brings
    them up to date, as searches do for the retrieval index.
    """

    def __init__(
        self,
        db: Database,
        load_events: EventLoader,
        counter: TokenCounter,
        llm: LLM | None = None,
        *,
        config: ThreadSummaryConfig | None = None,
        catch_up: bool = False,
        on_llm_failure: LLMFailureHook | None = None,
        tool_result_tokens: int | None = None,
        compute: Compute | None = None,
    ) -> None:
        self.db = db
        self._load = load_events
        self.counter = counter
        self.llm = llm
        self.config = config or ThreadSummaryConfig()
        # Offline summaries: in a worker process with background jobs (agentctx.compute).
        self._compute: Compute = compute or InlineCompute()
        self.catch_up = catch_up
        self.on_llm_failure = on_llm_failure
        # A tool result is read as far as a window would show it (its head): what the
        # summary and the token threshold see, rather than every byte of a large output.
        self.tool_result_tokens = tool_result_tokens

    # Reading ----------------------------------------------------------------------------

    def latest(self, user_id: str, session_id: str) -> Summary | None:
        """The newest thread summary of a session, or None."""
        with self.db.read() as conn:
            return _latest(conn, user_id, session_id)

    def list_summaries(self, user_id: str, session_id: str) -> list[Summary]:
        """Every stored summary version of a session, newest first."""
        query = (
            select(summaries_table)
            .where(
                summaries_table.c.user_id == user_id,
                summaries_table.c.session_id == session_id,
                summaries_table.c.kind == THREAD,
            )
            .order_by(summaries_table.c.created_at.desc(), summaries_table.c.version.desc())
        )
        with self.db.read() as conn:
            return [Summary.from_row(row) for row in conn.execute(query).mappings()]

    def summaries(self, user_id: str, session_id: str) -> Sequence[SummaryItem]:
        """The builder's summary section: the latest thread summary, if any."""
        if self.catch_up:
            self.maybe_update(user_id, session_id)
        latest = self.latest(user_id, session_id)
        if latest is None or not latest.text:
            return []
        return [latest.item()]

    # Updating ---------------------------------------------------------------------------

    def maybe_update(self, user_id: str, session_id: str, *, force: bool = False) -> Summary | None:
        """Summarize the new part of the thread if it passed a threshold (or ``force``).

        Returns the summary version written (or found written by a racing worker),
        None when nothing was due.
        """
        draft = self.plan(user_id, session_id, force=force)
        if draft is None:
            return None
        return self.commit(draft)

    def plan(self, user_id: str, session_id: str, *, force: bool = False) -> SummaryDraft | None:
        """Compute the next version without storing it; None when nothing is due."""
        if not self.config.enabled:
            return None
        previous = self.latest(user_id, session_id)
        start = previous.last_seq + 1 if previous is not None else 1
        events = self._load(
            user_id, session_id, start_seq=start, limit=self.config.max_events_per_update
        )
        if not events:
            return None
        messages = [e for e in events if e.type not in _SKIPPED_TYPES]
        texts = [self._text(e) for e in messages]
        tokens = sum(self.counter.count_many(texts)) if texts else 0
        due = len(messages) >= self.config.every_messages or tokens >= self.config.every_tokens
        if not messages or not (due or force):
            return None
        text, method = self._summarize(user_id, session_id, messages, texts, previous)
        return SummaryDraft(
            user_id=user_id,
            session_id=session_id,
            version=previous.version + 1 if previous is not None else 1,
            text=text,
            first_seq=previous.first_seq if previous is not None else events[0].seq,
            last_seq=events[-1].seq,
            source_event_count=len(messages)
            + (previous.source_event_count if previous is not None else 0),
            token_count=self.counter.count(text),
            method=method[:_METHOD_CHARS],
        )

    def commit(self, draft: SummaryDraft) -> Summary | None:
        """Store ``draft`` as its version, once.

        When that version exists already (another worker, or an earlier run of the
        same job, wrote it first), the stored one is returned and ``draft`` dropped.
        None when the session is gone.
        """
        summary = Summary(
            summary_id=f"sum_{new_id()}", kind=THREAD, created_at=utcnow(), **asdict(draft)
        )
        written, stored = write_version_once(
            self.db,
            lambda conn: self._insert(conn, summary),
            user_id=draft.user_id,
            session_id=draft.session_id,
            kind=THREAD,
            version=draft.version,
        )
        if written:
            return summary
        return Summary.from_row(stored) if stored is not None else None

    def _insert(self, conn: Connection, summary: Summary) -> None:
        """Insert the row inside the caller's write transaction."""
        row = {name: getattr(summary, name) for name in Summary.__dataclass_fields__}
        conn.execute(insert(summaries_table), [row])

    def on_turn_end(self, job: Job) -> None:
        """The ``thread_summary`` turn-end job: bring the session's summary up to date."""
        if job.user_id is None or job.session_id is None:
            return
        # A session deleted since the turn ended has nothing left to summarize. A backlog
        # longer than one update is folded in step by step, each step its own version.
        with contextlib.suppress(SessionNotFound):
            while self.maybe_update(job.user_id, job.session_id) is not None:
                pass

    # Summarizing ------------------------------------------------------------------------

    def _text(self, event: Event) -> str:
        text = event_text(event)
        cap = self.tool_result_tokens
        if cap is not None and event.type is EventType.TOOL_RESULT and len(text) > cap * 4:
            # Cut by characters first (counting a huge output is the cost saved).
            text = truncate_text(self.counter, text[: cap * 8], cap, keep="head")
        return text

    def _summarize(
        self,
        user_id: str,
        session_id: str,
        messages: Sequence[Event],
        texts: Sequence[str],
        previous: Summary | None,
    ) -> tuple[str, str]:
        """The merged summary text and the method that made it."""
        previous_text = previous.text if previous is not None else None
        budget = self.config.budget_tokens
        if self.llm is not None:
            try:
                return self._llm_summary(self.llm, messages, texts, previous_text), (
                    f"llm:{self.llm.name}"
                )
            except (LLMError, ConfigError) as exc:
                # The offline method does the job; the record says why.
                log.warning("thread summary: llm failed (%s), offline instead: %s", exc.code, exc)
                method = f"offline (llm failed: {exc.code})"
                if self.on_llm_failure is not None:
                    self.on_llm_failure(user_id, session_id, THREAD_JOB, exc)
        else:
            method = "offline"
        summary = self._compute.run(
            extractive_summary,
            [t for t in texts if t.strip()],
            budget_tokens=budget,
            counter=self.counter,
            previous=previous_text,
        )
        return summary.text, method

    def _llm_summary(
        self,
        llm: LLM,
        messages: Sequence[Event],
        texts: Sequence[str],
        previous: str | None,
    ) -> str:
        budget = self.config.budget_tokens
        lines = [
            f"[{event.seq}] {event.role or event.type}: {text}"
            for event, text in zip(messages, texts, strict=True)
            if text.strip()
        ]
        new_part = "\n".join(lines)
        prompt = f"Previous summary:\n{previous or '(none yet)'}\n\nNew messages:\n{new_part}"
        answer = llm.complete(
            [
                {"role": "system", "content": _INSTRUCTIONS.format(words=max(10, budget * 3 // 4))},
                {"role": "user", "content": prompt},
            ],
            schema=SUMMARY_SCHEMA,
            schema_name="thread_summary",
            max_tokens=budget * 2 + 64,  # room for the JSON around the text
        )
        data = answer.data
        text = data.get("summary", "") if isinstance(data, dict) else ""
        text = text.strip() if isinstance(text, str) else ""
        if not text:
            raise LLMError("the model returned an empty summary")
        # A model may overshoot the length it was asked for; the budget is a hard bound.
        return truncate_text(self.counter, text, budget, keep="head")


def _latest_statement() -> Any:
    return of_session(THREAD).order_by(summaries_table.c.version.desc()).limit(1)


def _latest(conn: Connection, user_id: str, session_id: str) -> Summary | None:
    # Read by every window of a session with thread summaries on: compiled once.
    found = fastsql.statement(conn, "latest_thread_summary", _latest_statement)
    rows = found.fetch_mappings(conn, {"user_id": user_id, "session_id": session_id})
    return Summary.from_row(rows[0]) if rows else None
