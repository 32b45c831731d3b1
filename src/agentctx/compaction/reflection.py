"""Reflections: the agent's inner voice, written after each assistant message.

After a turn ends, a background job looks at every assistant message of the turn
(events of type ``agent_response`` or ``final``) together with the exchange that
led to it (back to the user's last message) and writes a short structured
reflection about it: what the agent makes of the exchange (``thought``), how the
user seems to be (``user_state``), what it should do next (``intent_next``) and
how sure it is that the user's need was met (``confidence``, 0..1). Alongside
are offline signals computed for every reflection: the exchange's ``keywords``,
whether the user asked a question the answer left open (``open_question``) and
the answer's length (``answer_tokens``).

A reflection annotates the message's record in the ``reflections`` table, keyed
by (user_id, session_id, seq). It is not an event: it never enters the session's
history (``session.events()``), its hash chain, or a context window.

With a chat model the reflection is the model's answer to :data:`REFLECTION_SCHEMA`
(``method`` ``llm:<model>``); without one, or when the call fails, an offline
reflection is built from the signals (``offline``, or ``offline (llm failed:
<code>)``), and the failure is reported through ``on_llm_failure``.

Writing is idempotent. A reflection is computed first and written in one short
transaction afterwards; the key allows one per event, so when two workers race
(or a job runs twice) the second insert fails on the constraint and the stored
reflection is returned instead. A worker killed before or during the write leaves
nothing behind, and the rerun writes the reflection once. A rerun that finds the
reflection stored does no work at all (no model call).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Connection, RowMapping, and_, insert, select
from sqlalchemy.exc import IntegrityError

from agentctx.compaction.offline.keywords import extract_keywords
from agentctx.context.render import event_text
from agentctx.errors import AgentCtxError, ConfigError, InvalidInput, SessionNotFound
from agentctx.events import Event, EventType, Role, utcnow
from agentctx.jobs import Job
from agentctx.llm.chat import LLM, LLMError, LLMFailureHook
from agentctx.storage.database import Database
from agentctx.storage.schema import events as events_table
from agentctx.storage.schema import reflections as reflections_table
from agentctx.tokens import TokenCounter, truncate_text

log = logging.getLogger(__name__)

REFLECTION_JOB = "reflection"
"""The turn-end job that writes reflections (also the job named to ``on_llm_failure``)."""

ASSISTANT_TYPES = (EventType.AGENT_RESPONSE, EventType.FINAL)
"""The event types that get a reflection."""

REFLECTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "thought": {"type": "string", "minLength": 1},
        "user_state": {"type": "string"},
        "intent_next": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["thought", "user_state", "intent_next", "confidence"],
    "additionalProperties": False,
}
"""What the chat model answers."""

_METHOD_CHARS = 256  # the width of the ``method`` column
_KEYWORDS = 6
_LLM_FIELDS = ("thought", "user_state", "intent_next")

_INSTRUCTIONS = (
    "You are the inner voice of an AI agent. Read the last exchange between the user and "
    "the agent and reflect on the agent's final answer, privately (the user never sees "
    "this). Answer with JSON: "
    '{"thought": "<what you make of the exchange: was the answer right, complete, what '
    'was missed>", "user_state": "<how the user seems: their goal, mood, what they are '
    'waiting for>", "intent_next": "<what the agent should do next>", "confidence": '
    "<0..1, how sure you are that the user's need was met>}. Be brief: a sentence or two "
    "each, in the conversation's language."
)

# A question: a question mark, or an interrogative opening (English) / particle (Chinese).
_QUESTION_MARK = re.compile("[?\uff1f]")
_INTERROGATIVE = re.compile(
    r"^\s*(what|why|how|when|where|which|who|whom|whose|can|could|would|should|"
    r"is|are|does|did|was|were)\b",
    re.IGNORECASE,
)
_CJK_QUESTION = re.compile(r"(什么|怎么|为什么|哪|谁|多少|吗|呢|是否|能否|可否)")
# An answer that declines, does not know, or has to ask back leaves the question open.
_UNRESOLVED = re.compile(
    r"\b(i (do not|don't|cannot|can't|couldn't|could not) (know|find|tell|say|answer|help)|"
    r"i'?m not sure|i am not sure|not certain|unable to|no information|could you clarify|"
    r"can you clarify|could you tell me|can you tell me|which one do you mean)\b|"
    r"(不知道|不确定|无法|没有找到|不清楚|请说明|请问您)",
    re.IGNORECASE,
)

EventLoader = Callable[..., list[Event]]
"""``(user_id, session_id, seqs=…, end_seq=…, last=…, turn_id=…, types=…) -> events``
in seq order (``SessionService.events``)."""


class ReflectionConfig(BaseModel):
    """Whether assistant messages get a reflection, and how much it reads and writes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(
        default=False,
        description="After each turn, write a reflection on each of its assistant messages "
        "(a background job; off by default: with a chat model it costs one call per message).",
    )
    max_tokens: int = Field(
        default=200,
        ge=32,
        le=4000,
        description="The most the model may answer; each field is cut to fit as well.",
    )
    context_tokens: int = Field(
        default=1500,
        ge=64,
        le=100_000,
        description="The most of the exchange (user message to answer) the model reads.",
    )
    context_events: int = Field(
        default=40,
        ge=1,
        le=1000,
        description="How far back (in events) the user's last message is looked for.",
    )


@dataclass(frozen=True, slots=True)
class Reflection:
    """One stored reflection on an assistant message (event ``seq`` / ``event_id``).

    ``thought``, ``user_state``, ``intent_next`` and ``confidence`` are the reflection;
    ``keywords``, ``open_question`` and ``answer_tokens`` the offline signals it was
    made with. ``method``: ``llm:<model>``, ``offline``, or ``offline (llm failed:
    <code>)``.
    """

    user_id: str
    session_id: str
    seq: int
    event_id: str
    thought: str
    user_state: str
    intent_next: str
    confidence: float
    keywords: tuple[str, ...]
    open_question: bool
    answer_tokens: int
    method: str
    created_at: datetime

    def data(self) -> dict[str, Any]:
        """The reflection as stored in the ``reflection`` JSON column."""
        return {
            "thought": self.thought,
            "user_state": self.user_state,
            "intent_next": self.intent_next,
            "confidence": self.confidence,
            "keywords": list(self.keywords),
            "open_question": self.open_question,
            "answer_tokens": self.answer_tokens,
        }

    @classmethod
    def from_row(cls, row: RowMapping) -> Reflection:
        """A reflection from a ``reflections`` row."""
        data = row["reflection"] if isinstance(row["reflection"], dict) else {}
        return cls(
            user_id=row["user_id"],
            session_id=row["session_id"],
            seq=int(row["seq"]),
            event_id=row["event_id"],
            thought=str(data.get("thought", "")),
            user_state=str(data.get("user_state", "")),
            intent_next=str(data.get("intent_next", "")),
            confidence=float(data.get("confidence", 0.0)),
            keywords=tuple(str(k) for k in data.get("keywords", ())),
            open_question=bool(data.get("open_question", False)),
            answer_tokens=int(data.get("answer_tokens", 0)),
            method=row["method"],
            created_at=row["created_at"],
        )


@dataclass(frozen=True, slots=True)
class _Exchange:
    """An assistant message and what led to it, with the offline signals."""

    answer: Event
    question: Event | None  # the user's last message before the answer
    between: tuple[Event, ...]  # tool calls, results and earlier answers after it
    keywords: tuple[str, ...]
    open_question: bool
    answer_tokens: int


class Reflector:
    """Writes and reads reflections on assistant messages; the ``reflection`` turn-end job.

    ``load_events`` reads a session's events (the session service's ``events``);
    ``counter`` measures the answer and bounds what the model reads and writes;
    ``llm`` (optional) writes the reflections, with the offline method standing in
    whenever it fails, and ``on_llm_failure`` told of each failed call.
    """

    def __init__(
        self,
        db: Database,
        load_events: EventLoader,
        counter: TokenCounter,
        llm: LLM | None = None,
        *,
        config: ReflectionConfig | None = None,
        on_llm_failure: LLMFailureHook | None = None,
    ) -> None:
        self.db = db
        self._load = load_events
        self.counter = counter
        self.llm = llm
        self.config = config or ReflectionConfig()
        self.on_llm_failure = on_llm_failure

    # Reading ----------------------------------------------------------------------------

    def reflection(self, user_id: str, session_id: str, seq: int) -> Reflection | None:
        """The reflection on event ``seq``, or None."""
        query = _select(user_id, session_id).where(reflections_table.c.seq == seq)
        with self.db.read() as conn:
            row = conn.execute(query).mappings().first()
        return Reflection.from_row(row) if row is not None else None

    def reflections(self, user_id: str, session_id: str) -> list[Reflection]:
        """Every reflection of a session, in seq order."""
        query = _select(user_id, session_id).order_by(reflections_table.c.seq)
        with self.db.read() as conn:
            return [Reflection.from_row(row) for row in conn.execute(query).mappings()]

    def pending(self, user_id: str, session_id: str, *, limit: int | None = None) -> list[Event]:
        """Assistant messages of the session without a reflection, in seq order."""
        reflected = (
            select(reflections_table.c.seq)
            .where(
                reflections_table.c.user_id == events_table.c.user_id,
                reflections_table.c.session_id == events_table.c.session_id,
                reflections_table.c.seq == events_table.c.seq,
            )
            .exists()
        )
        query = (
            select(events_table.c.seq)
            .where(
                and_(
                    events_table.c.user_id == user_id,
                    events_table.c.session_id == session_id,
                    events_table.c.type.in_([str(t) for t in ASSISTANT_TYPES]),
                    ~reflected,
                )
            )
            .order_by(events_table.c.seq)
        )
        if limit is not None:
            query = query.limit(limit)
        with self.db.read() as conn:
            seqs = [int(seq) for (seq,) in conn.execute(query)]
        # Loaded through the session service, so a deleted or expired session is not found.
        return self._load(user_id, session_id, seqs=seqs) if seqs else []

    # Writing ----------------------------------------------------------------------------

    def reflect(self, user_id: str, session_id: str, seq: int) -> Reflection | None:
        """Reflect on the assistant message ``seq`` (once: a stored reflection is returned).

        None when the session has no event ``seq`` or was deleted before the write.
        Raises :class:`~agentctx.errors.InvalidInput` when ``seq`` is not an assistant
        message, and :class:`~agentctx.errors.SessionNotFound` for a missing session.
        """
        stored = self.reflection(user_id, session_id, seq)
        if stored is not None:
            return stored
        found = self._load(user_id, session_id, seqs=[seq])
        if not found:
            return None
        answer = found[0]
        if answer.type not in ASSISTANT_TYPES:
            raise InvalidInput(
                f"event {seq} is a {answer.type.value} event; only assistant messages "
                f"({', '.join(t.value for t in ASSISTANT_TYPES)}) get a reflection"
            )
        exchange = self._exchange(answer)
        fields, confidence, method, failure = self._compose(exchange)
        if failure is not None:
            self._report(user_id, session_id, failure)
        reflection = Reflection(
            user_id=user_id,
            session_id=session_id,
            seq=answer.seq,
            event_id=answer.event_id,
            thought=fields[0],
            user_state=fields[1],
            intent_next=fields[2],
            confidence=confidence,
            keywords=exchange.keywords,
            open_question=exchange.open_question,
            answer_tokens=exchange.answer_tokens,
            method=method[:_METHOD_CHARS],
            created_at=utcnow(),
        )
        return self.commit(reflection)

    def commit(self, reflection: Reflection) -> Reflection | None:
        """Store ``reflection``, once.

        When the event has one already (another worker, or an earlier run of the same
        job, wrote it first), the stored one is returned and ``reflection`` dropped.
        None when the session is gone.
        """
        try:
            with self.db.write() as conn:
                self._insert(conn, reflection)
            return reflection
        except IntegrityError:
            pass  # reflected already (or the session was deleted meanwhile)
        return self.reflection(reflection.user_id, reflection.session_id, reflection.seq)

    def _insert(self, conn: Connection, reflection: Reflection) -> None:
        """Insert the row inside the caller's write transaction."""
        row = {
            "user_id": reflection.user_id,
            "session_id": reflection.session_id,
            "seq": reflection.seq,
            "event_id": reflection.event_id,
            "reflection": reflection.data(),
            "method": reflection.method,
            "created_at": reflection.created_at,
        }
        conn.execute(insert(reflections_table), [row])

    def on_turn_end(self, job: Job) -> None:
        """The ``reflection`` turn-end job: reflect on the turn's assistant messages.

        A no-op when reflections are disabled. Messages already reflected on are
        skipped, so a rerun of the job does nothing. A job without a turn reflects
        on whatever the session has pending.
        """
        if not self.config.enabled or job.user_id is None or job.session_id is None:
            return
        user_id, session_id = job.user_id, job.session_id
        # A session deleted since the turn ended has nothing left to reflect on.
        with contextlib.suppress(SessionNotFound):
            if job.turn_id is None:
                answers = self.pending(user_id, session_id, limit=self.config.context_events)
            else:
                answers = self._load(
                    user_id, session_id, turn_id=job.turn_id, types=list(ASSISTANT_TYPES)
                )
            for answer in answers:
                self.reflect(user_id, session_id, answer.seq)

    # Reflecting -------------------------------------------------------------------------

    def _exchange(self, answer: Event) -> _Exchange:
        """The answer, the user's last message before it, and the offline signals."""
        before = self._load(
            answer.user_id,
            answer.session_id,
            end_seq=answer.seq - 1,
            last=self.config.context_events,
        )
        question: Event | None = None
        between: list[Event] = []
        for event in reversed(before):
            if event.type == EventType.USER_INPUT or event.role == Role.USER:
                question = event
                break
            between.append(event)
        between.reverse()
        answer_text = event_text(answer)
        question_text = event_text(question) if question is not None else ""
        texts = [t for t in (question_text, answer_text) if t.strip()]
        keywords = tuple(k.text for k in extract_keywords(texts, _KEYWORDS)) if texts else ()
        asked = _is_question(question_text)
        open_question = asked and (not answer_text.strip() or _leaves_open(answer_text))
        return _Exchange(
            answer=answer,
            question=question,
            between=tuple(between),
            keywords=keywords,
            open_question=open_question,
            answer_tokens=self.counter.count(answer_text),
        )

    def _compose(
        self, exchange: _Exchange
    ) -> tuple[tuple[str, str, str], float, str, AgentCtxError | None]:
        """The reflection's three texts, its confidence, the method, and a model failure."""
        if self.llm is not None:
            try:
                fields, confidence = self._llm_reflection(self.llm, exchange)
                return fields, confidence, f"llm:{self.llm.name}", None
            except (LLMError, ConfigError) as exc:
                # The offline reflection does the job; the record says why.
                log.warning("reflection: llm failed (%s), offline instead: %s", exc.code, exc)
                fields, confidence = _offline_reflection(exchange)
                return fields, confidence, f"offline (llm failed: {exc.code})", exc
        fields, confidence = _offline_reflection(exchange)
        return fields, confidence, "offline", None

    def _llm_reflection(self, llm: LLM, exchange: _Exchange) -> tuple[tuple[str, str, str], float]:
        lines = [
            f"[{event.seq}] {event.role or event.type}: {text}"
            for event in (
                *((exchange.question,) if exchange.question else ()),
                *exchange.between,
            )
            if (text := event_text(event)).strip()
        ]
        context = truncate_text(self.counter, "\n".join(lines), self.config.context_tokens)
        answer = truncate_text(
            self.counter, event_text(exchange.answer), self.config.context_tokens // 2
        )
        prompt = (
            f"The exchange:\n{context or '(no earlier message)'}\n\n"
            f"The agent's answer to reflect on:\n[{exchange.answer.seq}] assistant: {answer}"
        )
        completion = llm.complete(
            [{"role": "system", "content": _INSTRUCTIONS}, {"role": "user", "content": prompt}],
            schema=REFLECTION_SCHEMA,
            schema_name="reflection",
            max_tokens=self.config.max_tokens,
        )
        data = completion.data if isinstance(completion.data, dict) else {}
        texts = [data.get(name, "") for name in _LLM_FIELDS]
        texts = [t.strip() if isinstance(t, str) else "" for t in texts]
        if not texts[0]:
            raise LLMError("the model returned an empty reflection")
        confidence = data.get("confidence")
        if not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
            raise LLMError(f"the model returned confidence {confidence!r}, not a number in 0..1")
        # A model may overshoot; each field is bounded by the configured answer size.
        limit = self.config.max_tokens
        bounded = tuple(truncate_text(self.counter, t, limit, keep="head") for t in texts)
        return (bounded[0], bounded[1], bounded[2]), float(confidence)

    def _report(self, user_id: str, session_id: str, exc: AgentCtxError) -> None:
        """Tell ``on_llm_failure`` (outside any transaction: it may append an event)."""
        if self.on_llm_failure is None:
            return
        try:
            self.on_llm_failure(user_id, session_id, REFLECTION_JOB, exc)
        except Exception:  # a failing report must not cost the reflection
            log.exception("reflection: reporting the llm failure failed")


def _is_question(text: str) -> bool:
    """Whether a message asks something: a question mark, or a question's opening words."""
    if not text.strip():
        return False
    if _QUESTION_MARK.search(text):
        return True
    return bool(_INTERROGATIVE.match(text) or _CJK_QUESTION.search(text))


def _leaves_open(answer: str) -> bool:
    """Whether an answer declines, does not know, or asks back instead of answering."""
    if _UNRESOLVED.search(answer):
        return True
    last = answer.strip().splitlines()[-1] if answer.strip() else ""
    return last.rstrip().endswith(("?", "\uff1f"))


def _offline_reflection(exchange: _Exchange) -> tuple[tuple[str, str, str], float]:
    """A reflection from the signals alone: what was talked about, and what is still open.

    Confidence is a heuristic prior, not a judgement: 0.3 when the question was left
    open, 0.5 when there was no user message, else 0.6.
    """
    topic = ", ".join(exchange.keywords[:4]) or "the conversation"
    size = f"{exchange.answer_tokens} tokens"
    if exchange.question is None:
        return (
            (
                f"The agent spoke ({size}) without a user message before it, about {topic}.",
                "unknown: no user message in this exchange",
                "wait for the user's next message",
            ),
            0.5,
        )
    asked = _is_question(event_text(exchange.question))
    if exchange.open_question:
        question = " ".join(event_text(exchange.question).split())[:160]
        return (
            (
                f"The user asked about {topic}; the answer ({size}) left the question open.",
                "waiting for an answer to their question",
                f"answer the open question: {question}",
            ),
            0.3,
        )
    if asked:
        return (
            (
                f"The user asked about {topic}; the answer ({size}) addressed it.",
                "asked a question and got an answer",
                "check whether the answer was what the user needed",
            ),
            0.6,
        )
    return (
        (
            f"The user wrote about {topic}; the agent answered ({size}).",
            "gave information or an instruction",
            "continue with the user's request",
        ),
        0.6,
    )


def _select(user_id: str, session_id: str) -> Any:
    return select(reflections_table).where(
        reflections_table.c.user_id == user_id,
        reflections_table.c.session_id == session_id,
    )
