"""Session operations keyed by (user_id, session_id): the logic behind ``Session`` and the engine.

Every operation names the user. A session of another user, a missing session
and an expired one all raise the same ``SessionNotFound``; the attempt is
written to the audit log either way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any, NoReturn

from sqlalchemy import or_, select, tuple_, update
from sqlalchemy.exc import IntegrityError

from agentctx import jsonvalue
from agentctx.cache.base import HotCache, NullCache
from agentctx.cache.events import HeadPin, cached_events, read_head
from agentctx.errors import (
    InvalidInput,
    SessionExists,
    SessionNotFound,
    TurnError,
)
from agentctx.events import Event, EventDraft, EventType, JsonPart, utcnow
from agentctx.ids import check_id, check_optional_id, new_id
from agentctx.inputs import (
    MAX_INT32,
    MAX_INT64,
    MAX_LABEL,
    check_count,
    check_label,
    check_optional_count,
    check_optional_text,
    check_text,
    check_ttl,
)
from agentctx.jobs import JobQueue
from agentctx.perception import SessionImages
from agentctx.priority import foreground_call
from agentctx.privacy.redactor import Redactor
from agentctx.sessions.audit import AuditLog, AuditRecord
from agentctx.sessions.blob_reads import BlobReads
from agentctx.sessions.cursors import decode_cursor, encode_cursor
from agentctx.sessions.models import (
    Page,
    SessionInfo,
    TurnInfo,
    VerifyReport,
)
from agentctx.sessions.prepare import Preparer
from agentctx.sessions.verify import check_chain
from agentctx.sessions.writer import EventWriter, StateChange, WriteResult
from agentctx.storage import event_reads
from agentctx.storage import repository as repo
from agentctx.storage.blobs import BlobStore
from agentctx.storage.chain import GENESIS_HASH
from agentctx.storage.database import Database
from agentctx.storage.schema import sessions


class SessionService:
    """Implements every session operation on one database and blob store."""

    def __init__(
        self,
        db: Database,
        *,
        preparer: Preparer,
        writer: EventWriter,
        audit_log: AuditLog,
        blob_store: BlobStore,
        jobs: JobQueue,
        redactor: Redactor,
        session_ttl: timedelta | None,
        cache: HotCache | None = None,
    ) -> None:
        self.db = db
        # Hot cache of events (agentctx.cache); the no-op cache when none is configured.
        self.cache: HotCache = cache if cache is not None else NullCache()
        self.preparer = preparer
        self.writer = writer
        self.audit = audit_log
        self.blobs = blob_store
        # What events reference in the blob store, read for their user only.
        self.blob_reads = BlobReads(db, blob_store, audit_log)
        self.jobs = jobs
        self.redactor = redactor
        self.session_ttl = session_ttl
        # Told (user_id, session_id) after every append commits: the engine hands the
        # session's new events to its background embedding worker. Must not block.
        self.after_write: Callable[[str, str], None] | None = None
        # Told (user_id, session_id, drafts) as an append begins, before anything is
        # prepared: the engine starts embedding the user's new text, the query the next
        # window usually asks. Must not block.
        self.before_write: Callable[[str, str, Sequence[EventDraft]], None] | None = None

    # Sessions ---------------------------------------------------------------------------

    def create(
        self,
        user_id: str,
        agent_id: str,
        *,
        session_id: str | None = None,
        state: dict[str, Any] | None = None,
        ttl: timedelta | None = None,
        config: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        redactor: Redactor | None = None,
    ) -> SessionInfo:
        """Create a session; ``ttl`` overrides the default time to live.

        ``redactor`` (the session's own, with its allow-lists) cleans state, config and meta.
        """
        redactor = redactor or self.redactor
        check_id("user_id", user_id)
        check_id("agent_id", agent_id)
        session_id = session_id or new_id()
        check_id("session_id", session_id)
        values = {}
        for name, value in (("state", state), ("config", config), ("meta", meta)):
            jsonvalue.check_object({} if value is None else value, where=name)
            values[name] = jsonvalue.storable(redactor.redact_json(value or {}).value)
        now = utcnow()
        ttl = check_ttl(ttl)
        lifetime = ttl if ttl is not None else self.session_ttl
        row = {
            "user_id": user_id,
            "session_id": session_id,
            "agent_id": agent_id,
            "state": values["state"],
            "state_version": 0,
            "last_seq": 0,
            "last_hash": GENESIS_HASH,
            "config": values["config"],
            "meta": values["meta"],
            "created_at": now,
            "updated_at": now,
            "last_accessed_at": now,
            "expires_at": now + lifetime if lifetime is not None else None,
            "ttl_ms": ttl // timedelta(milliseconds=1) if ttl is not None else None,
        }
        record = AuditRecord(
            action="session_create", user_id=user_id, session_id=session_id, state_version=0
        )
        try:
            with self.db.write() as conn:
                if repo.session_expired(conn, user_id, session_id, now):
                    # An expired, unswept session frees its id.
                    repo.delete_session_rows(conn, user_id, [session_id])
                conn.execute(sessions.insert(), [row])
                self.audit.write(record, conn)
        except IntegrityError as exc:
            record.status, record.error_code = "error", SessionExists.code
            self.audit.record(record)
            raise SessionExists(f"session {session_id!r} already exists") from exc
        self.audit.emit(record)
        return SessionInfo.model_validate(row)

    def load(self, user_id: str, session_id: str) -> SessionInfo:
        """Load a session (and note the access)."""
        _check_session_ids(user_id, session_id)
        started = time.perf_counter()
        record = AuditRecord(action="session_load", user_id=user_id, session_id=session_id)
        now = utcnow()
        with self.db.write() as conn:
            row = repo.get_session_row(conn, user_id, session_id, now)
            if row is not None:
                conn.execute(
                    update(sessions)
                    .where(sessions.c.user_id == user_id, sessions.c.session_id == session_id)
                    .values(last_accessed_at=now)
                )
                record.state_version = row["state_version"]
                record.duration_ms = (time.perf_counter() - started) * 1000
                self.audit.write(record, conn)
        if row is None:
            self.audit.deny(record, SessionNotFound(session_id))
        self.audit.emit(record)
        return SessionInfo.model_validate({**row, "last_accessed_at": now})

    def info(self, user_id: str, session_id: str) -> SessionInfo:
        """A session's current row, without recording an access."""
        _check_session_ids(user_id, session_id)
        with self.db.read() as conn:
            row = repo.get_session_row(conn, user_id, session_id, utcnow())
        if row is None:
            self.audit.deny(
                AuditRecord(action="session_read", user_id=user_id, session_id=session_id),
                SessionNotFound(session_id),
            )
        return SessionInfo.model_validate(dict(row))

    def list_sessions(
        self,
        user_id: str | None,
        *,
        agent_id: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        search: str | None = None,
    ) -> Page[SessionInfo]:
        """Live sessions, oldest first, ``limit`` per page.

        ``user_id=None`` lists every user's sessions: an operator's view, which the
        engine exposes separately from the user-scoped listing. ``search`` keeps the
        sessions whose id or agent id contains it.
        """
        check_optional_id("user_id", user_id)
        check_optional_id("agent_id", agent_id)
        check_count(limit, "limit", minimum=1, maximum=1000)
        check_optional_text(cursor, "cursor", max_chars=1000)
        check_optional_text(search, "search", max_chars=MAX_LABEL)
        now = utcnow()
        query = select(sessions).where(
            or_(sessions.c.expires_at.is_(None), sessions.c.expires_at > now)
        )
        if user_id is not None:
            query = query.where(sessions.c.user_id == user_id)
        if agent_id is not None:
            query = query.where(sessions.c.agent_id == agent_id)
        if search:
            query = query.where(
                or_(
                    sessions.c.session_id.contains(search, autoescape=True),
                    sessions.c.agent_id.contains(search, autoescape=True),
                )
            )
        order = (sessions.c.created_at, sessions.c.user_id, sessions.c.session_id)
        if cursor is not None:
            query = query.where(tuple_(*order) > tuple_(*decode_cursor(cursor)))
        query = query.order_by(*order).limit(limit + 1)
        with self.db.read() as conn:
            rows = list(conn.execute(query).mappings())
        items = [SessionInfo.model_validate(dict(row)) for row in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = items[-1]
            next_cursor = encode_cursor(last.created_at, last.user_id, last.session_id)
        return Page[SessionInfo](items=items, next_cursor=next_cursor)

    # State ------------------------------------------------------------------------------

    def update_state(
        self,
        user_id: str,
        session_id: str,
        changes: dict[str, Any],
        *,
        expected_version: int | None,
        replace: bool,
        turn_id: str | None,
        author: str | None = None,
        redactor: Redactor | None = None,
    ) -> tuple[dict[str, Any], int, Event]:
        """Compare-and-set the session state; records a ``state_delta`` event in the log."""
        _check_session_ids(user_id, session_id)
        check_optional_id("turn_id", turn_id, max_length=64)
        jsonvalue.check_object(changes, where="state")
        check_optional_count(expected_version, "expected_version", maximum=MAX_INT32)
        author = check_label(author, "author")
        redactor = redactor or self.redactor
        clean = jsonvalue.storable(redactor.redact_json(changes).value)
        draft = EventDraft(
            type=EventType.STATE_DELTA,
            author=author,
            parts=(JsonPart(data=clean),),
            payload={"replace": replace},
        )
        prepared = self.preparer.prepare(user_id, session_id, draft, None, redactor)
        result = self.writer.write(
            user_id,
            session_id,
            [prepared],
            turn_id=turn_id,
            own_turn=turn_id is None,
            request_id=None,
            state_change=StateChange(clean, replace, expected_version),
            action="state_update",
        )
        assert result.state is not None
        return result.state, result.state_version, result.events[0]

    # Events -----------------------------------------------------------------------------

    @foreground_call  # background threads pause at their next safe point
    def append(
        self,
        user_id: str,
        session_id: str,
        drafts: Sequence[EventDraft],
        *,
        turn_id: str | None,
        request_id: str | None,
        expected_last_seq: int | None = None,
        legacy: bool = False,
        redactor: Redactor | None = None,
    ) -> WriteResult:
        """Prepare and append drafts; outside a turn they form a turn of their own. The
        stored events, and what the write transaction saw (whether it ended a turn and
        left the session jobs to run).

        ``redactor`` replaces the engine's (the session's, with its allow-lists).
        ``request_id``: the turn's (redacted as the turn began), stored as it is; None
        outside a turn, where the engine makes one.
        """
        _check_session_ids(user_id, session_id)
        check_optional_id("turn_id", turn_id, max_length=64)
        check_optional_id("request_id", request_id)
        check_optional_count(expected_last_seq, "expected_last_seq", maximum=MAX_INT64)
        if request_id is None and turn_id is None and not legacy:
            request_id = new_id()  # a one-event turn is a request of its own
        if self.before_write is not None:
            self.before_write(user_id, session_id, drafts)
        images = SessionImages(lambda: self.blob_reads.latest_image(user_id, session_id))
        prepared = self.preparer.prepare_batch(
            user_id, session_id, drafts, request_id, redactor, images=images
        )
        result = self.writer.write(
            user_id,
            session_id,
            prepared,
            turn_id=turn_id,
            own_turn=turn_id is None and not legacy,
            request_id=request_id,
            expected_last_seq=expected_last_seq,
        )
        if self.after_write is not None:
            self.after_write(user_id, session_id)
        return result

    def events(
        self,
        user_id: str,
        session_id: str,
        *,
        start_seq: int | None = None,
        end_seq: int | None = None,
        turn_id: str | None = None,
        types: Sequence[EventType | str] | None = None,
        limit: int | None = None,
        last: int | None = None,
        seqs: Sequence[int] | None = None,
        shared: bool = False,
        pin: HeadPin | None = None,
    ) -> list[Event]:
        """Events in seq order, filtered; ``last=N`` gives the newest N (still in seq order).

        ``shared``: the caller never changes the events, so the hot cache may hand out
        objects it handed out before (the window builder reads this way). ``pin``: the
        head the reads of one window build share (see
        :func:`~agentctx.cache.events.pinned_loader`)."""
        _check_session_ids(user_id, session_id)
        check_optional_count(start_seq, "start_seq", maximum=MAX_INT64)
        check_optional_count(end_seq, "end_seq", maximum=MAX_INT64)
        check_optional_count(limit, "limit")
        check_optional_count(last, "last")
        check_optional_id("turn_id", turn_id, max_length=64)
        if last is not None and limit is not None:
            raise InvalidInput("give limit or last, not both")
        type_names = [check_text(str(t), "types", max_chars=32) for t in types] if types else None
        now = utcnow()
        head = None
        if pin is not None:
            head = pin.get(lambda: read_head(self.db, user_id, session_id, now))
            if head is None:
                self._deny_read(user_id, session_id)
            end_seq = head.last_seq if end_seq is None else min(end_seq, head.last_seq)
        if self.cache.enabled and turn_id is None and not type_names:
            # Hot cache: a seq-range read validated by the session head (agentctx.cache);
            # None leaves the read (and a missing session's denial) to the database.
            hot = cached_events(
                self.cache,
                self.db,
                user_id,
                session_id,
                start_seq=start_seq,
                end_seq=end_seq,
                limit=limit,
                last=last,
                seqs=seqs,
                now=now,
                shared=shared,
                head=head,
            )
            if hot is not None:
                return hot
        with self.db.read() as conn:
            rows = event_reads.select_events(
                conn,
                user_id,
                session_id,
                start_seq=start_seq,
                end_seq=end_seq,
                turn_id=turn_id,
                types=type_names,
                limit=last if last is not None else limit,
                newest_first=last is not None,
                live_at=now,
                seqs=seqs,
                # Pinned: only the incarnation the build began with.
                incarnation=head.created_at if head is not None else None,
            )
            # Rows come back only from a live session; an empty answer needs telling apart
            # (a pinned head was read from a live session).
            alive = (
                bool(rows)
                or head is not None
                or repo.session_exists(conn, user_id, session_id, now)
            )
        if not alive:
            self._deny_read(user_id, session_id)
        if last is not None:
            rows.reverse()
        return rows

    def _deny_read(self, user_id: str, session_id: str) -> NoReturn:
        self.audit.deny(
            AuditRecord(action="events_read", user_id=user_id, session_id=session_id),
            SessionNotFound(session_id),
        )

    def turns(self, user_id: str, session_id: str, turn_id: str | None = None) -> list[TurnInfo]:
        """The session's turns (or the one named ``turn_id``), oldest first."""
        _check_session_ids(user_id, session_id)
        check_optional_id("turn_id", turn_id, max_length=64)
        with self.db.read() as conn:
            if not repo.session_exists(conn, user_id, session_id, utcnow()):
                self.audit.deny(
                    AuditRecord(action="turns_read", user_id=user_id, session_id=session_id),
                    SessionNotFound(session_id),
                )
            rows = repo.select_turns(conn, user_id, session_id, turn_id)
        return [TurnInfo.model_validate(dict(row)) for row in rows]

    # Turns ------------------------------------------------------------------------------

    def begin_turn(
        self, user_id: str, session_id: str, *, request_id: str, author: str | None
    ) -> str:
        """Record the start of a turn and return its id."""
        _check_session_ids(user_id, session_id)
        check_id("request_id", request_id)
        author = check_label(author, "author")
        turn_id = new_id()
        now = utcnow()
        record = AuditRecord(
            action="turn_begin", user_id=user_id, session_id=session_id, request_id=request_id
        )
        with self.db.write() as conn:
            if repo.lock_head(conn, user_id, session_id, now) is not None:
                repo.insert_turn(
                    conn,
                    {
                        "user_id": user_id,
                        "session_id": session_id,
                        "turn_id": turn_id,
                        "request_id": request_id,
                        "author": author,
                        "status": "open",
                        "started_at": now,
                        "ended_at": None,
                        "first_seq": None,
                        "last_seq": None,
                        "event_count": 0,
                    },
                )
                record.meta = {"turn_id": turn_id}
                self.audit.write(record, conn)
                found = True
            else:
                found = False
        if not found:
            self.audit.deny(record, SessionNotFound(session_id))
        self.audit.emit(record)
        return turn_id

    def end_turn(self, user_id: str, session_id: str, turn_id: str, status: str) -> TurnInfo:
        """End a turn and queue its turn-end hooks in the same transaction."""
        _check_session_ids(user_id, session_id)
        check_id("turn_id", turn_id, max_length=64)
        if status not in ("ok", "error", "abandoned"):
            raise TurnError(f"unknown turn status {status!r}")
        record = AuditRecord(
            action="turn_end", user_id=user_id, session_id=session_id, meta={"turn_id": turn_id}
        )
        now = utcnow()
        with self.db.write() as conn:
            row = repo.end_turn(conn, user_id, session_id, turn_id, status=status, now=now)
            if row is not None:
                self.writer.enqueue_turn_end(conn, user_id, session_id, turn_id)
                record.request_id = row["request_id"]
                self.audit.write(record, conn)
            else:  # a session erased (or expired) under the turn is the cause to name
                gone = repo.get_session_row(conn, user_id, session_id, now) is None
        if row is None:
            self.audit.deny(
                record,
                SessionNotFound(session_id)
                if gone
                else TurnError(f"turn {turn_id} is not open in session {session_id}"),
            )
        self.audit.emit(record)
        self.jobs.notify()
        return TurnInfo.model_validate(dict(row))

    # Integrity --------------------------------------------------------------------------

    def verify(self, user_id: str, session_id: str) -> VerifyReport:
        """Recompute the hash chain; name the first event that does not match."""
        _check_session_ids(user_id, session_id)
        record = AuditRecord(action="session_verify", user_id=user_id, session_id=session_id)
        with self.db.read() as conn:
            head = repo.get_session_row(conn, user_id, session_id, utcnow())
            if head is None:
                self.audit.deny(record, SessionNotFound(session_id))
            report = check_chain(
                session_id, head, event_reads.iter_event_rows(conn, user_id, session_id)
            )
        record.status = "ok" if report.ok else "error"
        record.error_code = None if report.ok else "tampered"
        record.meta = {"first_bad_seq": report.first_bad_seq} if not report.ok else {}
        self.audit.record(record)
        return report

    def export(self, user_id: str, session_id: str) -> Iterator[dict[str, Any]]:
        """Every event of the session as JSON-ready dicts, in seq order."""
        _check_session_ids(user_id, session_id)
        self.info(user_id, session_id)
        with self.db.read() as conn:
            for row in event_reads.iter_event_rows(conn, user_id, session_id):
                yield Event.from_row(row).model_dump(mode="json")


def _check_session_ids(user_id: str, session_id: str) -> None:
    # Before any query or audit row: a value that cannot be an id cannot name a session,
    # and must not reach the database (PostgreSQL refuses NUL and over-long values).
    check_id("user_id", user_id)
    check_id("session_id", session_id)
