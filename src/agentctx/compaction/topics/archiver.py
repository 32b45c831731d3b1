"""``TopicArchiver``: archives a session's older messages into topics (design seed 001).

Messages start unarchived. Once the unarchived ones pass ``context_threshold x
context_limit`` tokens and ``min_archive_messages`` messages, one identification
call (or the offline methods) splits the oldest of them into topics; each topic is
stored with its title, summary and keywords, every event it covers is linked to it
(``topic_events``), and what the user said about themselves becomes profile facts
with provenance. The context is then the topic summaries plus the messages still
unarchived. Raw events are never changed.

Guarantees:

* **Atomic.** A step is computed first and written in one short transaction: its
  topics, every event link and the profile facts commit together or not at all. A
  worker killed before or during the write leaves every message unarchived.
* **Once.** A step writes only if the archived prefix is still what it planned from;
  ``topics`` is unique per (session, first seq) and ``topic_events`` per event, so
  when two archivers race (or a job runs twice), exactly one set of topics is
  stored, no event is in two topics, and the loser returns the winner's topics.
* **Tool calls stay with their results.** Topic boundaries fall only between tool
  call groups (a call, its parallel siblings and their results); a call whose result
  has not been recorded is not archived until it has.
* **Continuity.** The newest ``keep_recent_messages`` are never archived.

The newest topic of a session has status ``active`` (the unarchived messages may
still be continuing it); committing newer topics marks it ``archived``, in the same
transaction. Summary and state-change events are not conversation: they are linked
to the topic whose range they fall in, but neither counted nor summarized.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, case, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from agentctx.compaction.topics.config import ArchiveThresholds, TopicArchiveConfig
from agentctx.compaction.topics.identify import (
    Identified,
    Proposal,
    identify_offline,
    identify_with_llm,
    model_proposals,
    offline_proposals,
)
from agentctx.compaction.topics.models import (
    ACTIVE,
    ARCHIVED,
    ProfileFact,
    Topic,
    TopicDraft,
    TopicPlan,
)
from agentctx.compaction.topics.profile import fact_drafts, introductions
from agentctx.compaction.topics.spans import Span, merge_short, snap
from agentctx.compute import Compute, InlineCompute
from agentctx.context.render import event_text
from agentctx.context.sources import SummaryItem
from agentctx.context.units import atoms_of
from agentctx.errors import ConfigError, SessionNotFound
from agentctx.events import Event, EventType, Role, utcnow
from agentctx.ids import new_id
from agentctx.jobs import Job
from agentctx.llm.chat import LLM, LLMError, LLMFailureHook
from agentctx.storage import fastsql
from agentctx.storage.database import Database
from agentctx.storage.schema import events as events_table
from agentctx.storage.schema import profile_facts, topic_events, topics
from agentctx.tokens import TokenCounter
from agentctx.tool_links import unanswered_calls

log = logging.getLogger(__name__)

TOPICS_JOB = "topics"
"""The job kind named to ``on_llm_failure`` (and the turn-end hook's name)."""

EventLoader = Callable[..., list[Event]]
"""``(user_id, session_id, start_seq=…, limit=…) -> events`` in seq order."""

_SKIPPED = frozenset({EventType.SUMMARY, EventType.STATE_DELTA})
_SKIPPED_NAMES = tuple(str(t) for t in _SKIPPED)
_METHOD_CHARS = 256  # the width of the ``method`` columns
_LOAD_SLACK = 64  # events read past the batch: results, skipped types


class _Stale(Exception):
    """The archived prefix moved since the plan was made: another archiver won."""


class TopicArchiver:
    """Archives sessions' older messages into topics; the builder's topic summary source.

    ``load_events`` reads a session's events (``SessionService.events``); ``counter``
    measures summaries; ``llm`` (optional) identifies topics, with the offline
    methods standing in whenever it fails, after which ``on_llm_failure`` is told.
    """

    def __init__(
        self,
        db: Database,
        load_events: EventLoader,
        counter: TokenCounter,
        llm: LLM | None = None,
        *,
        config: TopicArchiveConfig | None = None,
        on_llm_failure: LLMFailureHook | None = None,
        tool_result_tokens: int | None = None,
        thresholds: Callable[[str, str], ArchiveThresholds] | None = None,
        compute: Compute | None = None,
    ) -> None:
        self.db = db
        self._load = load_events
        self.counter = counter
        self.llm = llm
        self.config = config or TopicArchiveConfig()
        # When archiving a session is due: its agent's thresholds (AgentConfig's
        # context_limit, context_threshold, min_archive_messages), else the config's.
        self._thresholds = thresholds
        self.on_llm_failure = on_llm_failure
        # What a tool result costs a window at most (when windows shorten tool output):
        # the threshold is about the context a model sees, not the raw output's size.
        self.tool_result_tokens = tool_result_tokens
        # Offline identification and proposals: in a worker process with background jobs.
        self._compute: Compute = compute or InlineCompute()

    # Reading ----------------------------------------------------------------------------

    def archived_through(self, user_id: str, session_id: str) -> int | None:
        """The highest archived seq of a session (every event up to it is archived), or None."""
        with self.db.read() as conn:
            value = conn.execute(_through_query(user_id, session_id)).scalar()
        return int(value) if value is not None else None

    def unarchived_tokens(self, user_id: str, session_id: str) -> tuple[int, int]:
        """(messages, tokens) after the archived prefix, by the events' stored estimates.

        Summary and state-change events do not count; a tool result counts at most
        ``tool_result_tokens``. One query; no event is loaded.
        """
        through = func.coalesce(_through_query(user_id, session_id).scalar_subquery(), 0)
        tokens: Any = events_table.c.token_estimate
        if self.tool_result_tokens is not None:
            tokens = case(
                (
                    (events_table.c.type == str(EventType.TOOL_RESULT))
                    & (events_table.c.token_estimate > self.tool_result_tokens),
                    self.tool_result_tokens,
                ),
                else_=events_table.c.token_estimate,
            )
        query = select(func.count(), func.coalesce(func.sum(tokens), 0)).where(
            events_table.c.user_id == user_id,
            events_table.c.session_id == session_id,
            events_table.c.seq > through,
            events_table.c.type.not_in(_SKIPPED_NAMES),
        )
        with self.db.read() as conn:
            row = conn.execute(query).one()
        return int(row[0]), int(row[1])

    def thresholds(self, user_id: str, session_id: str) -> ArchiveThresholds:
        """When archiving the session is due: by its agent's settings, else the config's."""
        if self._thresholds is not None:
            return self._thresholds(user_id, session_id)
        return ArchiveThresholds.for_agent(self.config)

    def needs_archive(
        self, user_id: str, session_id: str, context_limit: int | None = None
    ) -> bool:
        """Whether the unarchived messages reach ``context_threshold x context_limit``
        tokens and ``min_archive_messages`` messages (always False when disabled); the
        thresholds are the session's agent's (``context_limit`` overrides its limit)."""
        if not self.config.enabled:
            return False
        messages, tokens = self.unarchived_tokens(user_id, session_id)
        return self._due(messages, tokens, self._with_limit(user_id, session_id, context_limit))

    def _with_limit(
        self, user_id: str, session_id: str, context_limit: int | None
    ) -> ArchiveThresholds:
        found = self.thresholds(user_id, session_id)
        if context_limit is None:
            return found
        return found.model_copy(update={"context_limit": context_limit})

    @staticmethod
    def _due(messages: int, tokens: int, thresholds: ArchiveThresholds) -> bool:
        return (
            messages >= thresholds.min_archive_messages
            and tokens >= thresholds.context_threshold * thresholds.context_limit
        )

    def topics(self, user_id: str, session_id: str) -> list[Topic]:
        """A session's topics, oldest first."""
        with self.db.read() as conn:  # read by every window: compiled once
            found = fastsql.statement(conn, "session_topics", _topics_statement)
            rows = found.fetch_mappings(conn, {"user_id": user_id, "session_id": session_id})
        return [Topic.from_row(row) for row in rows]

    def topic_of(self, user_id: str, session_id: str, seq: int) -> str | None:
        """The topic an event is archived in, or None while it is unarchived."""
        query = select(topic_events.c.topic_id).where(
            topic_events.c.user_id == user_id,
            topic_events.c.session_id == session_id,
            topic_events.c.seq == seq,
        )
        with self.db.read() as conn:
            value = conn.execute(query).scalar()
        return str(value) if value is not None else None

    def summaries(self, user_id: str, session_id: str) -> Sequence[SummaryItem]:
        """The builder's summary section: every topic, oldest first
        (``Title: summary (keywords: …)``, covering its exact seq range)."""
        return [topic.item() for topic in self.topics(user_id, session_id)]

    def profile(self, user_id: str) -> dict[str, ProfileFact]:
        """The user's current profile: the newest fact per field, with its provenance."""
        query = (
            select(profile_facts)
            .where(profile_facts.c.user_id == user_id)
            .order_by(profile_facts.c.created_at, profile_facts.c.fact_id)
        )
        with self.db.read() as conn:
            facts = [ProfileFact.from_row(row) for row in conn.execute(query).mappings()]
        return {fact.field: fact for fact in facts}

    # Archiving --------------------------------------------------------------------------

    def maybe_archive(
        self, user_id: str, session_id: str, context_limit: int | None = None
    ) -> list[Topic]:
        """Archive until the session is under the threshold: the "compact before a model
        call" path. Returns the topics written (or found written by a racing archiver);
        at most ``max_steps`` steps, each one identification call."""
        archived: list[Topic] = []
        for _ in range(self.config.max_steps):
            if not self.needs_archive(user_id, session_id, context_limit):
                break
            step = self.archive(user_id, session_id, force=True)
            if not step:
                break
            archived.extend(step)
        return archived

    def archive(self, user_id: str, session_id: str, *, force: bool = False) -> list[Topic]:
        """One step: plan, then commit. ``force`` archives what may be archived even
        under the threshold. Returns the topics written ([] when nothing was due)."""
        plan = self.plan(user_id, session_id, force=force)
        if plan is None:
            return []
        return self.commit(plan)

    def on_turn_end(self, job: Job) -> None:
        """The ``topics`` turn-end job: archive when due by the session's agent's
        thresholds. ``job.payload["context_limit"]`` overrides the context size."""
        if job.user_id is None or job.session_id is None or not self.config.enabled:
            return
        limit = job.payload.get("context_limit")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
            limit = None
        # A session deleted since the turn ended has nothing left to archive.
        with contextlib.suppress(SessionNotFound):
            self.maybe_archive(job.user_id, job.session_id, limit)

    def plan(self, user_id: str, session_id: str, *, force: bool = False) -> TopicPlan | None:
        """Compute one archiving step without writing it; None when nothing is due.

        Without ``force`` the step is due only past the threshold (with the config's
        ``context_limit``). Either way the newest ``keep_recent_messages`` stay out,
        and the step takes at most ``max_batch_messages``/``max_batch_tokens``.
        """
        if not self.config.enabled:
            return None
        config = self.config
        base = self.archived_through(user_id, session_id) or 0
        total, tokens = self.unarchived_tokens(user_id, session_id)
        if not force and not self._due(total, tokens, self.thresholds(user_id, session_id)):
            return None
        offer = total - config.keep_recent_messages
        if offer <= 0:
            return None
        limit = min(offer, config.max_batch_messages) + config.keep_recent_messages + _LOAD_SLACK
        loaded = self._load(user_id, session_id, start_seq=base + 1, limit=limit)
        batch = self._batch(loaded, offer, complete=len(loaded) < limit)
        if not batch:
            return None
        texts = [event_text(e) for e in batch]
        identified, method = self._identify(user_id, session_id, batch, texts)
        spans = merge_short(snap(identified.spans, _cuts(batch)), config.min_topic_messages)
        if not spans:
            return None
        counter, summary_tokens = self.counter, config.summary_tokens
        if identified.proposals:
            proposals = model_proposals(
                identified, spans, counter=counter, summary_tokens=summary_tokens
            )
        else:
            proposals = self._compute.run(
                offline_proposals, texts, spans, counter=counter, summary_tokens=summary_tokens
            )
        drafts = self._drafts(loaded, batch, spans, proposals, base)
        facts = fact_drafts(batch, texts, spans, drafts, identified)
        return TopicPlan(
            user_id=user_id,
            session_id=session_id,
            base=base,
            topics=tuple(drafts),
            facts=tuple(facts),
            method=method[:_METHOD_CHARS],
        )

    def commit(self, plan: TopicPlan) -> list[Topic]:
        """Write ``plan`` in one transaction: its topics, every event link, its profile facts.

        When another archiver committed first (the archived prefix moved, or a
        constraint fired), nothing of ``plan`` is written and the topics stored over
        its range are returned instead ([] when the session is gone).
        """
        created = utcnow()
        stored = [
            Topic(
                topic_id=f"top_{new_id()}",
                user_id=plan.user_id,
                session_id=plan.session_id,
                title=draft.title,
                summary=draft.summary,
                keywords=draft.keywords,
                message_count=draft.message_count,
                status=ACTIVE if number == len(plan.topics) - 1 else ARCHIVED,
                first_seq=draft.first_seq,
                last_seq=draft.last_seq,
                token_count=draft.token_count,
                source_tokens=draft.source_tokens,
                method=plan.method,
                created_at=created,
            )
            for number, draft in enumerate(plan.topics)
        ]
        try:
            with self.db.write() as conn:
                current = conn.execute(_through_query(plan.user_id, plan.session_id)).scalar()
                if (current or 0) != plan.base:
                    raise _Stale
                conn.execute(
                    update(topics)
                    .where(
                        topics.c.user_id == plan.user_id,
                        topics.c.session_id == plan.session_id,
                        topics.c.status == ACTIVE,
                    )
                    .values(status=ARCHIVED)
                )
                self._insert_topics(conn, stored)
                self._link_events(conn, plan, stored)
                self._insert_facts(conn, plan, stored, created)
            return stored
        except (IntegrityError, _Stale):
            pass  # another archiver won (or the session was deleted meanwhile)
        query = (
            select(topics)
            .where(
                topics.c.user_id == plan.user_id,
                topics.c.session_id == plan.session_id,
                topics.c.first_seq <= plan.last_seq,
                topics.c.last_seq >= plan.first_seq,
            )
            .order_by(topics.c.first_seq)
        )
        with self.db.read() as conn:
            return [Topic.from_row(row) for row in conn.execute(query).mappings()]

    # The write, in steps a test can interrupt -------------------------------------------

    def _insert_topics(self, conn: Connection, stored: Sequence[Topic]) -> None:
        rows = []
        for topic in stored:
            row: dict[str, Any] = {
                name: getattr(topic, name) for name in Topic.__dataclass_fields__
            }
            row["keywords"] = list(topic.keywords)
            rows.append(row)
        conn.execute(insert(topics), rows)

    def _link_events(self, conn: Connection, plan: TopicPlan, stored: Sequence[Topic]) -> None:
        rows = [
            {
                "user_id": plan.user_id,
                "session_id": plan.session_id,
                "seq": seq,
                "topic_id": topic.topic_id,
            }
            for draft, topic in zip(plan.topics, stored, strict=True)
            for seq in draft.seqs
        ]
        fastsql.insert_plain_rows(conn, topic_events, rows)

    def _insert_facts(
        self, conn: Connection, plan: TopicPlan, stored: Sequence[Topic], created: Any
    ) -> None:
        rows = []
        for fact in plan.facts:
            current = conn.execute(
                select(profile_facts.c.value)
                .where(profile_facts.c.user_id == plan.user_id, profile_facts.c.field == fact.field)
                .order_by(profile_facts.c.created_at.desc(), profile_facts.c.fact_id.desc())
                .limit(1)
            ).scalar()
            if isinstance(current, str) and current.casefold() == fact.value.casefold():
                continue  # already known: no new fact, the first source stays
            rows.append(
                {
                    "fact_id": f"fact_{new_id()}",
                    "user_id": plan.user_id,
                    "field": fact.field,
                    "value": fact.value,
                    "session_id": plan.session_id,
                    "topic_id": stored[fact.topic].topic_id if fact.topic is not None else None,
                    "first_seq": fact.first_seq,
                    "last_seq": fact.last_seq,
                    "method": plan.method,
                    "created_at": created,
                }
            )
        if rows:
            conn.execute(insert(profile_facts), rows)

    # Planning ---------------------------------------------------------------------------

    def _batch(self, loaded: Sequence[Event], offer: int, *, complete: bool) -> list[Event]:
        """The messages this step may archive: whole tool-call groups, oldest first.

        At most ``offer`` messages (the newest ``keep_recent_messages`` stay out; a hard
        bound), and after the first group within the batch caps. Stops at a tool call
        whose result is not recorded yet, unless the session has moved on past it (a
        later user message, and ``complete``: everything up to the newest was read).
        """
        config = self.config
        conversational = [e for e in loaded if e.type not in _SKIPPED]
        unanswered = unanswered_calls(conversational)
        user_after: list[bool] = []
        seen_user = False
        for event in reversed(conversational):
            user_after.append(seen_user)
            seen_user = seen_user or event.type is EventType.USER_INPUT
        user_after.reverse()
        position = {e.seq: i for i, e in enumerate(conversational)}
        batch: list[Event] = []
        tokens = 0
        for atom in atoms_of(conversational):
            members = atom.events
            open_calls = [e for e in members if e.seq in unanswered]
            last = position[members[-1].seq]
            if open_calls and not (complete and user_after[last]):
                break  # its result may still come: archive neither yet
            size = sum(e.token_estimate for e in members)
            if len(batch) + len(members) > offer:
                break
            if batch and (
                len(batch) + len(members) > config.max_batch_messages
                or tokens + size > config.max_batch_tokens
            ):
                break
            batch.extend(members)
            tokens += size
        return batch

    def _identify(
        self, user_id: str, session_id: str, batch: Sequence[Event], texts: Sequence[str]
    ) -> tuple[Identified, str]:
        """Topic spans (and proposals, and user info) of the batch, and the method."""
        if self.llm is not None:
            try:
                identified = identify_with_llm(
                    self.llm,
                    [_label(e) for e in batch],
                    texts,
                    counter=self.counter,
                    config=self.config,
                )
                return identified, f"llm:{self.llm.name}"
            except (LLMError, ConfigError) as exc:
                # The offline method does the job; the record says why.
                log.warning("topics: llm failed (%s), offline instead: %s", exc.code, exc)
                method = f"offline (llm failed: {exc.code})"
                self._report_failure(user_id, session_id, exc)
        else:
            method = "offline"
        spans = self._compute.run(
            identify_offline, texts, min_topic_messages=self.config.min_topic_messages
        )
        users = [i for i, e in enumerate(batch) if e.type is EventType.USER_INPUT]
        found = introductions([texts[i] for i in users])
        said = {field: (value, users[index]) for field, (value, index) in found.items()}
        return Identified(spans, [], said=said), method

    def _report_failure(self, user_id: str, session_id: str, exc: Exception) -> None:
        if self.on_llm_failure is None:
            return
        try:
            self.on_llm_failure(user_id, session_id, TOPICS_JOB, exc)
        except Exception:  # a failing hook must not stop archiving
            log.exception("topics: the llm failure hook raised")

    def _drafts(
        self,
        loaded: Sequence[Event],
        batch: Sequence[Event],
        spans: Sequence[Span],
        proposals: Sequence[Proposal],
        base: int,
    ) -> list[TopicDraft]:
        drafts = []
        previous = base
        for span, proposal in zip(spans, proposals, strict=True):
            members = batch[span.start : span.end]
            last = members[-1].seq
            seqs = tuple(e.seq for e in loaded if previous < e.seq <= last)
            drafts.append(
                TopicDraft(
                    title=proposal.title,
                    summary=proposal.summary,
                    keywords=proposal.keywords,
                    seqs=seqs,
                    message_count=len(members),
                    token_count=self.counter.count(proposal.summary),
                    source_tokens=sum(e.token_estimate for e in members),
                )
            )
            previous = last
        return drafts


def _through_query(user_id: str, session_id: str) -> Any:
    return select(func.max(topic_events.c.seq)).where(
        topic_events.c.user_id == user_id, topic_events.c.session_id == session_id
    )


def _cuts(batch: Sequence[Event]) -> list[int]:
    """Where a topic may start: the first message of each tool-call group, and the end."""
    cuts, index = [], 0
    for atom in atoms_of(batch):
        cuts.append(index)
        index += len(atom.events)
    cuts.append(index)
    return cuts


def _label(event: Event) -> str:
    """The role a message is shown with in the identification prompt."""
    if event.type is EventType.TOOL_CALL:
        return f"assistant (tool call {event.meta.tool_name or 'tool'})"
    if event.type is EventType.TOOL_RESULT:
        return str(Role.TOOL)
    return str(event.role or event.type)


def _topics_statement() -> Any:
    return (
        select(topics)
        .where(
            topics.c.user_id == bindparam("user_id"), topics.c.session_id == bindparam("session_id")
        )
        .order_by(topics.c.first_seq)
    )
