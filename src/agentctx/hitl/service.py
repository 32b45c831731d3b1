"""``HitlService``: marks sessions that need a human, lists them, resolves them, and
packs what it takes to reproduce a failure (seed 003, 8.1.5: degrade, retry, then HITL).

Guarantees, on SQLite and PostgreSQL alike:

* Idempotent marking: a finding is recorded as one ``hitl`` event whose idempotency key
  names the trigger and the event that fired it, so evaluating twice, two evaluators
  racing, or a crash between writing the event and the flag and a rerun all leave
  exactly one ``hitl`` event and one flag.
* Incremental: the flag row keeps how far evaluation got (``checked_seq``) and the open
  failure runs, so each evaluation reads only the events written since the last one.
  The flag row is updated compare-and-set on the progress it read; a loser re-reads.
* While a session waits for a human, nothing new marks it; resolving (one ``hitl``
  event with status ``resolved``) clears the flag, and triggers count only what comes
  after the resolution.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import RowMapping, and_, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from agentctx.errors import IdempotencyConflict, InvalidInput, SessionNotFound, TurnNotFound
from agentctx.events import Event, EventDraft, EventType, utcnow
from agentctx.hitl.config import HitlConfig
from agentctx.hitl.repro import (
    RecordedWindow,
    ReproPackage,
    load_window,
    store_window,
    window_row,
    without_image_bytes,
)
from agentctx.hitl.tables import hitl_flags
from agentctx.hitl.triggers import (
    UNKNOWN_TOOL,
    Finding,
    TriggerState,
    calls_to_look_up,
    scan,
)
from agentctx.hitl.turn_condition import turn_may_need_human
from agentctx.hitl.window_recorder import WindowRecord, WindowRecorder
from agentctx.jobs import Job
from agentctx.privacy.redactor import Redactor
from agentctx.sessions.models import SessionInfo
from agentctx.storage import repository as repo
from agentctx.storage.schema import sessions

if TYPE_CHECKING:
    from agentctx.context.window import ContextReport
    from agentctx.engine import ContextEngine

HITL_JOB = "hitl"
"""The name of the turn-end job that evaluates the triggers."""

HITL_AUTHOR = "agentctx"
_PAGE = 500  # events read per step of an evaluation

FlagStatus = Literal["none", "needed", "resolved"]


class HitlFlag(BaseModel):
    """Whether a session needs a human, and why (the API lists these)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    session_id: str
    status: FlagStatus
    trigger: str | None = None
    reason: str | None = None
    event_ids: tuple[str, ...] = ()
    turn_id: str | None = None
    hitl_event_id: str | None = None
    note: str | None = None
    flagged_at: datetime | None = None
    resolved_at: datetime | None = None

    @property
    def needed(self) -> bool:
        """Whether the session waits for a human now."""
        return self.status == "needed"


def _flag(row: RowMapping) -> HitlFlag:
    return HitlFlag(
        user_id=row["user_id"],
        session_id=row["session_id"],
        status=row["status"],
        trigger=row["trigger"],
        reason=row["reason"],
        event_ids=tuple(row["event_ids"]),
        turn_id=row["turn_id"],
        hitl_event_id=row["hitl_event_id"],
        note=row["note"],
        flagged_at=row["flagged_at"],
        resolved_at=row["resolved_at"],
    )


def _key(user_id: str, session_id: str) -> Any:
    return and_(hitl_flags.c.user_id == user_id, hitl_flags.c.session_id == session_id)


class HitlService:
    """Human-in-the-loop: triggers, flags, resolution and reproduction packages.

    Built by :func:`install_hitl`, which also registers the turn-end evaluation.
    """

    def __init__(self, engine: ContextEngine, config: HitlConfig | None = None) -> None:
        self._engine = engine
        self.config = config or HitlConfig()
        self.db = engine.db
        # Windows are written off the call path when background work is on.
        self._windows = WindowRecorder(
            self._store_window, background=engine.settings.jobs == "background"
        )

    def close(self, timeout: float = 10.0) -> None:
        """Write the windows still pending and stop their thread (``engine.close``)."""
        self._windows.close(timeout)

    # Evaluation -------------------------------------------------------------------------

    def on_turn_end(self, job: Job) -> None:
        """The ``hitl`` turn-end job: evaluate the session (a no-op when disabled)."""
        if not self.config.enabled or job.user_id is None or job.session_id is None:
            return
        with contextlib.suppress(SessionNotFound):  # deleted since the turn ended
            self.evaluate(job.user_id, job.session_id)

    def evaluate(self, user_id: str, session_id: str) -> HitlFlag:
        """Run the triggers over the events written since the last evaluation.

        The first finding marks the session: a ``hitl`` event (payload: status
        ``needed``, trigger, reason, the causing event ids, the failing turn) and the
        flag. A session that already needs a human is left as it is. Runs whether or
        not ``config.enabled`` (that switch is for the automatic turn-end job).
        """
        info = self._engine._service.info(user_id, session_id)
        while True:
            row = self._row(user_id, session_id)
            if row is not None and row["status"] == "needed":
                return _flag(row)
            checked = row["checked_seq"] if row is not None else 0
            state = TriggerState.from_json(row["streaks"] if row is not None else None)
            baseline = row["baseline_seq"] if row is not None else 0
            finding, through = self._scan(user_id, session_id, max(checked, baseline), state)
            if finding is None:
                if through == checked or self._advance(row, user_id, session_id, through, state):
                    break
                continue  # another evaluator moved on meanwhile: read again
            hitl = self._record_needed(info, finding)
            if self._mark(
                row=row,
                user_id=user_id,
                session_id=session_id,
                finding=finding,
                hitl=hitl,
                state=state,
            ):
                break
        current = self.flag(user_id, session_id)
        return current or HitlFlag(user_id=user_id, session_id=session_id, status="none")

    def _scan(
        self, user_id: str, session_id: str, after: int, state: TriggerState
    ) -> tuple[Finding | None, int]:
        """The first finding after seq ``after`` (state updated up to it), and the last
        seq looked at."""
        through = after
        while True:
            page = self._engine._service.events(
                user_id, session_id, start_seq=through + 1, limit=_PAGE
            )
            if not page:
                return None, through
            findings = scan(
                page, state, self.config, known_calls=self._calls(page), first_only=True
            )
            if findings:
                return findings[0], findings[0].seq
            through = page[-1].seq
            if len(page) < _PAGE:
                return None, through

    def _calls(self, page: Sequence[Event]) -> dict[str, str]:
        """Tool names of the calls that ``page``'s results answer but ``page`` lacks."""
        wanted = calls_to_look_up(page)
        if not wanted:
            return {}
        first = page[0]
        with self.db.read() as conn:
            found = repo.call_event_types(conn, first.user_id, first.session_id, sorted(wanted))
        names: dict[str, str] = {}
        for call_id, kind, meta in found:
            if kind == EventType.TOOL_CALL.value:
                name = meta.get("tool_name") if isinstance(meta, dict) else None
                names[call_id] = name if isinstance(name, str) and name else UNKNOWN_TOOL
        return names

    def _record_needed(self, info: SessionInfo, finding: Finding) -> Event:
        payload = {
            "status": "needed",
            "trigger": finding.trigger,
            "reason": finding.reason,
            "event_ids": list(finding.event_ids),
            "turn_id": finding.turn_id,
        }
        key = f"hitl:needed:{finding.trigger}:{finding.fired_by}"
        return self._append(info, payload, key)

    def _append(self, info: SessionInfo, payload: dict[str, Any], key: str) -> Event:
        """Append one ``hitl`` event as a turn of its own; a retry returns the stored one."""
        draft = EventDraft(
            type=EventType.HITL, payload=payload, author=HITL_AUTHOR, idempotency_key=key
        )
        try:
            return self._engine._service.append(
                info.user_id,
                info.session_id,
                [draft],
                turn_id=None,
                request_id=None,
                redactor=self._redactor(info),
            ).events[0]
        except IdempotencyConflict:
            # Stored first with other content (a different config or note): that one counts.
            with self.db.read() as conn:
                rows = repo.existing_events(
                    conn, info.user_id, info.session_id, event_ids=(), idempotency_keys=[key]
                )
            return Event.from_row(rows[0])

    def _advance(
        self,
        row: RowMapping | None,
        user_id: str,
        session_id: str,
        through: int,
        state: TriggerState,
    ) -> bool:
        # The checker's progress only: lost to a power cut, the same events are checked
        # again from the progress before, with the same result (a finding's event is
        # written under an idempotency key). Not synced on its own, it holds SQLite's
        # writer for no disk sync after every turn, which the agent's next append waited for.
        return self._write(
            row,
            user_id,
            session_id,
            {"checked_seq": through, "streaks": state.to_json()},
            durable=False,
        )

    def _mark(
        self,
        *,
        row: RowMapping | None,
        user_id: str,
        session_id: str,
        finding: Finding,
        hitl: Event,
        state: TriggerState,
    ) -> bool:
        payload = hitl.payload
        return self._write(
            row,
            user_id,
            session_id,
            {
                "status": "needed",
                "trigger": payload.get("trigger", finding.trigger),
                "reason": payload.get("reason", finding.reason),
                "event_ids": list(payload.get("event_ids", finding.event_ids)),
                "turn_id": payload.get("turn_id", finding.turn_id),
                "hitl_event_id": hitl.event_id,
                "checked_seq": finding.seq,
                "streaks": state.to_json(),
                "note": None,
                "flagged_at": hitl.ts,
                "resolved_at": None,
            },
        )

    def _write(
        self,
        row: RowMapping | None,
        user_id: str,
        session_id: str,
        values: dict[str, Any],
        *,
        durable: bool = True,
    ) -> bool:
        """Insert or compare-and-set the flag row; False if another writer got there first.
        ``durable=False``: committed without a disk sync of its own (``Database.write``)."""
        now = utcnow()
        try:
            with self.db.write(durable=durable) as conn:
                if row is None:
                    defaults: dict[str, Any] = {
                        "user_id": user_id,
                        "session_id": session_id,
                        "status": "none",
                        "event_ids": [],
                        "checked_seq": 0,
                        "baseline_seq": 0,
                        "streaks": {},
                    }
                    try:
                        with conn.begin_nested():
                            conn.execute(
                                insert(hitl_flags).values({**defaults, **values, "updated_at": now})
                            )
                    except IntegrityError:
                        return False  # created meanwhile (or the session is gone)
                    return True
                result = conn.execute(
                    update(hitl_flags)
                    .where(
                        _key(user_id, session_id),
                        hitl_flags.c.status == row["status"],
                        hitl_flags.c.checked_seq == row["checked_seq"],
                        hitl_flags.c.baseline_seq == row["baseline_seq"],
                    )
                    .values(**values, updated_at=now)
                )
                return bool(result.rowcount)
        except IntegrityError:
            return True  # the session was deleted: nothing left to mark

    # Flags ------------------------------------------------------------------------------

    def _row(self, user_id: str, session_id: str) -> RowMapping | None:
        with self.db.read() as conn:
            return (
                conn.execute(select(hitl_flags).where(_key(user_id, session_id))).mappings().first()
            )

    def flag(self, user_id: str, session_id: str) -> HitlFlag | None:
        """The session's flag, or None if it was never evaluated."""
        row = self._row(user_id, session_id)
        return _flag(row) if row is not None else None

    def needs_human(self, user_id: str, *, limit: int = 100) -> list[HitlFlag]:
        """The user's live sessions that wait for a human, oldest flag first."""
        now = utcnow()
        query = (
            select(hitl_flags)
            .join(
                sessions,
                and_(
                    sessions.c.user_id == hitl_flags.c.user_id,
                    sessions.c.session_id == hitl_flags.c.session_id,
                ),
            )
            .where(
                hitl_flags.c.user_id == user_id,
                hitl_flags.c.status == "needed",
                or_(sessions.c.expires_at.is_(None), sessions.c.expires_at > now),
            )
            .order_by(hitl_flags.c.flagged_at, hitl_flags.c.session_id)
            .limit(limit)
        )
        with self.db.read() as conn:
            return [_flag(row) for row in conn.execute(query).mappings()]

    def resolve(self, user_id: str, session_id: str, note: str | None = None) -> HitlFlag:
        """A human dealt with the session: record a ``hitl`` event with status
        ``resolved`` (and the note, redacted) and clear the flag.

        Resolving a resolved session returns it unchanged (a retried call writes
        nothing); a session that was never marked raises ``InvalidInput``.
        """
        info = self._engine._service.info(user_id, session_id)
        row = self._row(user_id, session_id)
        if row is not None and row["status"] == "resolved":
            return _flag(row)
        if row is None or row["status"] != "needed":
            raise InvalidInput(f"session {session_id!r} does not need a human")
        payload = {
            "status": "resolved",
            "trigger": row["trigger"],
            "turn_id": row["turn_id"],
            "event_ids": [row["hitl_event_id"]],
            "note": note,
        }
        event = self._append(info, payload, f"hitl:resolved:{row['hitl_event_id']}")
        with self.db.write() as conn:
            conn.execute(
                update(hitl_flags)
                .where(
                    _key(user_id, session_id),
                    hitl_flags.c.status == "needed",
                    hitl_flags.c.hitl_event_id == row["hitl_event_id"],
                )
                .values(
                    status="resolved",
                    note=event.payload.get("note"),
                    resolved_at=event.ts,
                    # Triggers start over after the resolution.
                    baseline_seq=event.seq,
                    checked_seq=event.seq,
                    streaks={},
                    updated_at=utcnow(),
                )
            )
        flag = self.flag(user_id, session_id)
        assert flag is not None  # the row existed and rows are only removed with the session
        return flag

    # Windows ----------------------------------------------------------------------------

    def record_window(
        self,
        user_id: str,
        session_id: str,
        turn_id: str | None,
        *,
        query: str | None,
        budget: int,
        strategy: str,
        messages: list[dict[str, Any]],
        tokens: int,
        report: ContextReport | dict[str, Any],
        redactor: Redactor | None = None,
    ) -> None:
        """Keep the window just built for ``turn_id`` (None: outside any turn), replacing
        the one built before for the same turn: one upsert, written by a background
        thread when background work is on (see :mod:`agentctx.hitl.window_recorder`).

        ``redactor``: the session's (``engine.session_redactor(agent_id, config)``);
        looked up when not given. The query passes it before it is stored. A no-op when
        ``config.record_windows`` is off or the session no longer exists.
        """
        if not self.config.record_windows:
            return
        self._windows.submit(
            WindowRecord(
                user_id=user_id,
                session_id=session_id,
                turn_id=turn_id,
                query=query,
                budget=budget,
                strategy=strategy,
                # Copied now (the agent goes on editing its window), image bytes left out.
                messages=without_image_bytes(messages),
                tokens=tokens,
                report=report,
                redactor=redactor,
            )
        )

    def _store_window(self, record: WindowRecord) -> None:
        redactor = record.redactor
        if redactor is None:
            try:
                info = self._engine._service.info(record.user_id, record.session_id)
            except SessionNotFound:
                return
            redactor = self._redactor(info)
        report = record.report
        row = window_row(
            query=record.query,
            budget=record.budget,
            strategy=record.strategy,
            messages=record.messages,
            tokens=record.tokens,
            report=report if isinstance(report, dict) else report.model_dump(mode="json"),
            redactor=redactor,
            now=utcnow(),
        )
        # A diagnostic copy of what the model was sent: not synced to disk on its own.
        with contextlib.suppress(IntegrityError), self.db.write(durable=False) as conn:
            store_window(
                conn,
                user_id=record.user_id,
                session_id=record.session_id,
                turn_id=record.turn_id,
                row=row,
            )

    def window(self, user_id: str, session_id: str, turn_id: str | None) -> RecordedWindow | None:
        """The window recorded for a turn of the session (None: outside any turn)."""
        self._engine._service.info(user_id, session_id)  # SessionNotFound for another user
        self._windows.flush()
        with self.db.read() as conn:
            return load_window(conn, user_id, session_id, turn_id)

    # Reproduction -----------------------------------------------------------------------

    def repro(self, user_id: str, session_id: str, turn_id: str | None = None) -> ReproPackage:
        """The minimal reproducible package of a failing turn (default: the turn of the
        latest ``error`` or ``hitl`` event): its redacted events, the window recorded for
        it, and the configuration without secrets. ``InvalidInput`` when no turn is given
        and nothing failed."""
        info = self._engine._service.info(user_id, session_id)
        reason: str | None = None
        trigger: str | None = None
        causes: tuple[str, ...] = ()
        if turn_id is None:
            turn_id, reason, trigger, causes = self._failing_turn(user_id, session_id)
        turn_events = self._engine._service.events(user_id, session_id, turn_id=turn_id)
        self._windows.flush()
        with self.db.read() as conn:
            window = load_window(conn, user_id, session_id, turn_id)
        return ReproPackage(
            user_id=user_id,
            session_id=session_id,
            agent_id=info.agent_id,
            turn_id=turn_id,
            reason=reason,
            trigger=trigger,
            cause_event_ids=causes,
            events=tuple(turn_events),
            window=window,
            config=self.effective_config(info),
            created_at=utcnow(),
        )

    def _failing_turn(
        self, user_id: str, session_id: str
    ) -> tuple[str, str | None, str | None, tuple[str, ...]]:
        latest = self._engine._service.events(
            user_id, session_id, types=[EventType.ERROR, EventType.HITL], last=20
        )
        for event in reversed(latest):
            if event.type is EventType.HITL:
                # A hitl event is a turn of its own; the failing turn is in its payload.
                target = event.payload.get("turn_id")
                if isinstance(target, str) and target:
                    causes = tuple(str(i) for i in event.payload.get("event_ids", ()))
                    if event.payload.get("status") == "resolved":
                        causes = ()
                    return (
                        target,
                        event.payload.get("reason"),
                        event.payload.get("trigger"),
                        causes,
                    )
            elif event.turn_id is not None:
                message = event.payload.get("message")
                return (
                    event.turn_id,
                    message if isinstance(message, str) else None,
                    None,
                    (event.event_id,),
                )
        raise TurnNotFound(f"session {session_id!r} has no failed turn; name one with turn_id")

    def effective_config(self, info: SessionInfo) -> dict[str, Any]:
        """The configuration in effect for the session, secrets removed: the engine's
        settings (no paths or database URL), the agent's, the session's, the effective
        context settings and these triggers."""
        from agentctx.hitl.repro import scrub_secrets  # noqa: PLC0415

        engine = self._engine
        agent = engine.agents.get(info.agent_id)
        settings = engine.settings.model_dump(
            mode="json", exclude={"home", "url", "blob_dir", "audit_log"}
        )
        return dict(
            scrub_secrets(
                {
                    "database": engine.db.dialect,
                    "engine": settings,
                    "agent": agent.model_dump(mode="json") if agent is not None else None,
                    "session": dict(info.config),
                    "context": engine.context_config(agent).model_dump(mode="json"),
                    "hitl": self.config.model_dump(mode="json"),
                }
            )
        )

    def _redactor(self, info: SessionInfo) -> Redactor:
        return self._engine.session_redactor(info.agent_id, info.config)


def install_hitl(engine: ContextEngine, config: HitlConfig | None = None) -> HitlService:
    """A :class:`HitlService` for ``engine``, its triggers evaluated by a turn-end job
    (only after turns that could fire one) when ``config.enabled``."""
    service = HitlService(engine, config)
    if service.config.enabled:
        engine.on_turn_end(HITL_JOB, service.on_turn_end, when=turn_may_need_human)
    return service
