"""The write transaction: one append (of one or many events) or one state update.

Guarantees, on SQLite and PostgreSQL alike:

* Order: the session head is locked for the whole transaction, so ``seq`` is
  gap-free and strictly increasing however many threads and processes write.
* All or nothing: a batch commits whole or not at all (a crash mid-batch leaves
  no partial batch).
* Idempotency: an event whose ``idempotency_key`` or ``event_id`` is already
  stored in the session is returned as stored; nothing new is written. Reusing
  a key for a different event (content, type, role, author, tool fields, metadata,
  model, a timestamp the caller gave) raises ``IdempotencyConflict``.
* Compare-and-set: ``expected_last_seq`` and ``expected_version`` are checked
  under the lock; a mismatch raises ``StaleSession`` and changes nothing.
* The redaction gate: a row not marked redacted is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from agentctx.errors import (
    AgentCtxError,
    IdempotencyConflict,
    InvalidEvent,
    RedactionRequired,
    SessionNotFound,
    StaleSession,
    StorageError,
    TurnError,
)
from agentctx.events import Event, EventType, utcnow
from agentctx.ids import new_id
from agentctx.jobs import JobQueue
from agentctx.sessions.audit import AuditLog, AuditRecord
from agentctx.sessions.prepare import PreparedEvent, fingerprint_of
from agentctx.sessions.turn_end import TurnCondition, WrittenEvent, holds
from agentctx.storage import repository as repo
from agentctx.storage.blobs import BlobStore
from agentctx.storage.chain import chain_hash
from agentctx.storage.database import Database
from agentctx.storage.repository import SessionHead
from agentctx.storage.schema import blob_refs, blobs
from agentctx.tokens.weight import row_weight

_LINKED_TYPES = (EventType.TOOL_CALL.value, EventType.TOOL_RESULT.value)


@dataclass(frozen=True, slots=True)
class StateChange:
    """A compare-and-set update of session state."""

    changes: dict[str, Any]
    replace: bool
    expected_version: int | None


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The events a write produced (stored ones for idempotent retries) and the new state."""

    events: list[Event]
    state: dict[str, Any] | None
    state_version: int
    last_seq: int
    turn_ended: str | None
    # Whether the session has jobs pending or running, as the transaction saw it when
    # it ended a turn of its own (None when it did not: unknown).
    jobs_waiting: bool | None = None


class EventWriter:
    """Runs append and state-update transactions."""

    def __init__(
        self,
        db: Database,
        audit: AuditLog,
        jobs: JobQueue,
        blob_store: BlobStore,
        *,
        session_ttl: timedelta | None,
        turn_end_kinds: Callable[[], Sequence[str]],
        turn_end_conditions: Mapping[str, TurnCondition] | None = None,
    ) -> None:
        self._db = db
        self._audit = audit
        self._jobs = jobs
        self._blobs = blob_store
        self._ttl = session_ttl
        self._turn_end_kinds = turn_end_kinds
        self._turn_end_conditions = turn_end_conditions if turn_end_conditions is not None else {}

    def write(
        self,
        user_id: str,
        session_id: str,
        prepared: Sequence[PreparedEvent],
        *,
        turn_id: str | None,
        own_turn: bool,
        request_id: str | None,
        expected_last_seq: int | None = None,
        state_change: StateChange | None = None,
        action: str = "append",
    ) -> WriteResult:
        """Append ``prepared`` (and apply ``state_change``) in one transaction.

        ``own_turn``: the events form a turn of their own (they were written outside
        any turn), which is recorded and ended in this same transaction.
        """
        started = time.perf_counter()
        for item in prepared:
            if item.row.get("redacted") is not True:
                raise RedactionRequired(
                    "refusing to store an event that did not pass the redaction gate"
                )
        first = prepared[0].row if prepared else {}
        record = AuditRecord(
            action=action,
            user_id=user_id,
            session_id=session_id,
            request_id=request_id or first.get("request_id"),
            event_id=first.get("event_id"),
            event_type=first.get("type"),
            meta={"events": len(prepared)} if len(prepared) != 1 else {},
        )
        try:
            with self._db.write() as conn:
                result = self._transaction(
                    conn,
                    user_id,
                    session_id,
                    prepared,
                    turn_id,
                    own_turn,
                    request_id,
                    expected_last_seq,
                    state_change,
                    record,
                )
                record.duration_ms = (time.perf_counter() - started) * 1000
                record.state_version = result.state_version
                self._audit.write(record, conn)
        except AgentCtxError as exc:
            record.status = "error"
            record.error_code = exc.code
            record.duration_ms = (time.perf_counter() - started) * 1000
            self._audit.record(record)
            raise
        self._audit.emit(record)
        if result.turn_ended is not None:
            self._jobs.notify()
        return result

    def _transaction(  # noqa: PLR0917 - internal, called from one place
        self,
        conn: Connection,
        user_id: str,
        session_id: str,
        prepared: Sequence[PreparedEvent],
        turn_id: str | None,
        own_turn: bool,
        request_id: str | None,
        expected_last_seq: int | None,
        state_change: StateChange | None,
        record: AuditRecord,
    ) -> WriteResult:
        now = utcnow()
        if self._pipelinable(prepared, own_turn):
            self._db.pipeline(conn)
        first = self._first_reads(conn, user_id, session_id, now, prepared, turn_id, own_turn)
        head = first.head
        if head is None:
            raise SessionNotFound(session_id)

        stored = self._already_stored(conn, user_id, session_id, prepared)
        fresh = [item for item in prepared if item.row["event_id"] not in stored]
        if prepared and not fresh and state_change is None:
            # A retry of a write that already committed: hand back what was stored.
            record.meta["idempotent_replay"] = True
            return WriteResult(
                [stored[item.row["event_id"]] for item in prepared],
                None,
                head.state_version,
                head.last_seq,
                None,
            )
        if expected_last_seq is not None and expected_last_seq != head.last_seq:
            raise StaleSession(
                f"expected last seq {expected_last_seq}, the session is at {head.last_seq}",
                expected=expected_last_seq,
                actual=head.last_seq,
            )
        new_state: dict[str, Any] | None = None
        version = head.state_version
        if state_change is not None:
            if (
                state_change.expected_version is not None
                and state_change.expected_version != head.state_version
            ):
                raise StaleSession(
                    f"state version {state_change.expected_version} is stale, the session is at "
                    f"{head.state_version}",
                    expected=state_change.expected_version,
                    actual=head.state_version,
                )
            new_state = (
                dict(state_change.changes)
                if state_change.replace
                else {**head.state, **state_change.changes}
            )
            version = head.state_version + 1
        _check_tool_links(first.calls, fresh)
        if turn_id is not None and fresh and not first.turn_open:
            # Ended elsewhere (another process, or the sweep closed it as abandoned).
            raise TurnError(f"turn {turn_id} is not open; open a new turn")

        if own_turn and fresh:
            turn_id = new_id()
            repo.insert_turn(
                conn,
                {
                    "user_id": user_id,
                    "session_id": session_id,
                    "turn_id": turn_id,
                    "request_id": request_id or fresh[0].row["request_id"],
                    "author": fresh[0].row["author"],
                    "status": "ok",
                    "started_at": now,
                    "ended_at": now,
                    "first_seq": head.last_seq + 1,
                    "last_seq": head.last_seq + len(fresh),
                    "event_count": len(fresh),
                },
            )

        seq, prev = head.last_seq, head.last_hash
        rows = []
        for item in fresh:
            seq += 1
            row = item.row
            row["seq"] = seq
            row["turn_id"] = turn_id
            if state_change is not None and row["type"] == EventType.STATE_DELTA.value:
                row["payload"] = {**row["payload"], "state_version": version}
            row["hash"] = prev = chain_hash(prev, row)
            rows.append(row)
        repo.insert_events(conn, rows)
        self._insert_blobs(conn, user_id, session_id, fresh, now)
        expires_at, renew = self._renewed_expiry(head.expires_at, now, head.ttl_ms)
        repo.advance_head(
            conn,
            user_id,
            session_id,
            last_seq=seq,
            last_hash=prev,
            now=now,
            expires_at=expires_at,
            set_expiry=renew,
            state=new_state,
            state_version=version if new_state is not None else None,
            added_weight=sum(row_weight(row) for row in rows),
        )
        turn_ended = None
        jobs_waiting = None
        if own_turn and fresh and turn_id is not None:
            # The turn is exactly the events written here: conditions answer from them.
            written = [
                WrittenEvent(
                    item.row["type"],
                    item.row["payload"],
                    item.row["meta"],
                    tuple(blob.image_id for blob in item.blobs if blob.image_id is not None),
                )
                for item in fresh
            ]
            jobs_waiting = self.enqueue_turn_end(
                conn, user_id, session_id, turn_id, written, jobs_before=first.jobs_waiting
            )
            turn_ended = turn_id
        events = {row["event_id"]: Event.from_row(row) for row in rows}
        events.update(stored)
        return WriteResult(
            [events[item.row["event_id"]] for item in prepared],
            new_state,
            version,
            seq,
            turn_ended,
            jobs_waiting,
        )

    def _first_reads(  # noqa: PLR0917 - internal, called from one place
        self,
        conn: Connection,
        user_id: str,
        session_id: str,
        now: datetime,
        prepared: Sequence[PreparedEvent],
        turn_id: str | None,
        own_turn: bool,
    ) -> _FirstReads:
        """Every read the transaction needs before it writes, sent together and then read:
        pipelined on PostgreSQL, they wait for the server once. The head's lock comes
        first, so the others see what the session's last writer committed."""
        head = repo.send_lock_head(conn, user_id, session_id, now)
        # An append outside a turn ends its own turn and answers whether the session has
        # jobs to run.
        jobs = (
            self._jobs.send_session_has_jobs(conn, user_id, session_id)
            if own_turn and self._turn_end_kinds()
            else None
        )
        call_ids = sorted(
            {item.row["call_id"] for item in prepared if item.row["type"] in _LINKED_TYPES}
        )
        calls = (
            repo.send_call_event_types(conn, user_id, session_id, call_ids) if call_ids else None
        )
        turn = (
            repo.send_turn_is_open(conn, user_id, session_id, turn_id)
            if turn_id is not None
            else None
        )
        # Read in the order sent, each once, before anything can raise.
        return _FirstReads(
            head.result(),
            jobs.result() if jobs is not None else None,
            calls.result() if calls is not None else [],
            turn.result() if turn is not None else False,
        )

    def _pipelinable(self, prepared: Sequence[PreparedEvent], own_turn: bool) -> bool:
        """Whether the transaction of ``prepared`` reads results only through compiled
        statements, so it can be pipelined (:meth:`Database.pipeline`): on PostgreSQL an
        append then waits for the server twice (the BEGIN with the reads of
        :meth:`_first_reads`; the writes with the COMMIT), where each statement was a
        round trip (eight for a tool call in a turn). Not so for what reads with
        SQLAlchemy: a stored-event lookup (idempotency keys, chosen ids), blob rows, and a
        turn-end condition that reads the turn from the database."""
        for item in prepared:
            row = item.row
            if item.blobs or item.chosen_id or row["idempotency_key"]:
                return False
        if own_turn:
            for kind in self._turn_end_kinds():
                condition = self._turn_end_conditions.get(kind)
                if condition is not None and getattr(condition, "written", None) is None:
                    return False
        return True

    def _renewed_expiry(
        self, current: datetime | None, now: datetime, own_ttl_ms: int | None
    ) -> tuple[datetime | None, bool]:
        """The sliding expiry after a write, and whether it needs storing.

        The TTL is the session's own (``create_session(ttl=…)``) or else the engine's.
        The expiry is stored only when it moves by more than 1% of the TTL: a session
        that lives 30 days is renewed about every 7 hours of activity, not on every
        append, which would rewrite the expiry index each time.
        """
        ttl = timedelta(milliseconds=own_ttl_ms) if own_ttl_ms is not None else self._ttl
        if ttl is None:
            return current, False
        renewed = now + ttl
        if current is not None and renewed - current <= ttl / 100:
            return current, False
        return renewed, True

    def enqueue_turn_end(
        self,
        conn: Connection,
        user_id: str,
        session_id: str,
        turn_id: str,
        written: Sequence[WrittenEvent] | None = None,
        *,
        jobs_before: bool | None = None,
    ) -> bool:
        """Queue every turn-end hook for this turn (those with a condition only when it
        holds), in the caller's transaction; ``written``: the turn's events, when the
        caller wrote all of them. Whether the session then has jobs to run (this
        transaction's or earlier ones'): one read here instead of a transaction of its
        own after the commit, since an append outside a turn is usually followed by one.
        ``jobs_before``: whether it had any when this transaction locked its head (read
        then by the caller; the lock keeps other writers of the session out since)."""
        kinds = self._turn_end_kinds()
        key = (user_id, session_id, turn_id)
        queued = False
        for kind in kinds:
            condition = self._turn_end_conditions.get(kind)
            if condition is not None and not holds(condition, conn, key, written):
                continue
            self._jobs.enqueue(
                conn,
                kind,
                user_id=user_id,
                session_id=session_id,
                turn_id=turn_id,
                dedupe_key=f"{kind}:{user_id}:{session_id}:{turn_id}",
            )
            queued = True
        if queued or not kinds:
            return queued
        if jobs_before is not None:
            return jobs_before
        return self._jobs.session_has_jobs(conn, user_id, session_id)

    @staticmethod
    def _already_stored(
        conn: Connection, user_id: str, session_id: str, prepared: Sequence[PreparedEvent]
    ) -> dict[str, Event]:
        """Events of ``prepared`` that are already in the session, keyed by the draft's event id."""
        ids = [p.row["event_id"] for p in prepared]
        keys = [p.row["idempotency_key"] for p in prepared if p.row["idempotency_key"]]
        if len(set(ids)) != len(ids) or len(set(keys)) != len(keys):
            raise InvalidEvent("a batch may not repeat an event_id or idempotency key")
        # Only look up ids the caller chose; generated UUIDv7 ids cannot exist yet.
        chosen_ids = [p.row["event_id"] for p in prepared if p.chosen_id]
        if not keys and not chosen_ids:
            return {}
        rows = repo.existing_events(
            conn, user_id, session_id, event_ids=chosen_ids, idempotency_keys=keys
        )
        by_id = {row["event_id"]: row for row in rows}
        by_key = {row["idempotency_key"]: row for row in rows if row["idempotency_key"]}
        found: dict[str, Event] = {}
        for item in prepared:
            row = by_key.get(item.row["idempotency_key"]) if item.row["idempotency_key"] else None
            if row is None:
                row = by_id.get(item.row["event_id"])
            if row is None:
                continue
            if fingerprint_of(row, ts=item.chosen_ts) != item.fingerprint():
                raise IdempotencyConflict(
                    f"event {row['event_id']} (seq {row['seq']}) was stored with different content "
                    "under the same idempotency key or event id"
                )
            found[item.row["event_id"]] = Event.from_row(row)
        return found

    def _insert_blobs(
        self,
        conn: Connection,
        user_id: str,
        session_id: str,
        fresh: Sequence[PreparedEvent],
        now: datetime,
    ) -> None:
        blob_rows: dict[str, dict[str, Any]] = {}
        ref_rows = []
        for item in fresh:
            for blob in item.blobs:
                hashes = blob.hashes
                blob_rows[blob.blob_id] = {
                    "blob_id": blob.blob_id,
                    "size": blob.size,
                    "media_type": blob.media_type,
                    "width": blob.width,
                    "height": blob.height,
                    "phash": hashes.phash if hashes else None,
                    "dhash": hashes.dhash if hashes else None,
                    "ahash": hashes.ahash if hashes else None,
                    "mean_color": hashes.mean_color if hashes else None,
                    "created_at": now,
                }
                ref_rows.append(
                    {
                        "user_id": user_id,
                        "session_id": session_id,
                        "event_id": item.row["event_id"],
                        "part_index": blob.part_index,
                        "blob_id": blob.blob_id,
                        "image_id": blob.image_id,
                        "created_at": now,
                        "seq": item.row["seq"],
                        "turn_id": item.row["turn_id"],
                        "dedup_distance": blob.dedup_distance,
                    }
                )
        if not blob_rows:
            return
        self._db.blob_gate(conn, exclusive=False)
        dialect_insert = pg_insert if self._db.dialect == "postgresql" else sqlite_insert
        conn.execute(
            dialect_insert(blobs).on_conflict_do_nothing(index_elements=["blob_id"]),
            list(blob_rows.values()),
        )
        conn.execute(insert(blob_refs), ref_rows)
        # Blob collection may have removed a file between our put() and this transaction;
        # under the gate no collection runs, so a file present now stays until we commit.
        # Cold-storage retention may have expired a blob we reference: it is live again
        # (its bytes re-stored if they are gone). Under the gate, retention's file
        # removal re-checks the flag, so a blob un-expired here keeps its file.
        expired = set(
            conn.execute(
                select(blobs.c.blob_id).where(
                    blobs.c.blob_id.in_(list(blob_rows)), blobs.c.expired_at.is_not(None)
                )
            ).scalars()
        )
        for item in fresh:
            for blob in item.blobs:
                if self._blobs.exists(blob.blob_id):
                    continue
                if not blob.data:
                    # A near-duplicate reuses a stored image and kept no bytes of its
                    # own; cold-storage retention removed that image meanwhile.
                    raise StorageError(
                        f"image {blob.image_id} expired while a near-duplicate of it was "
                        "being written; write the event again"
                    )
                self._blobs.put(blob.data)
        if expired:
            conn.execute(update(blobs).where(blobs.c.blob_id.in_(expired)).values(expired_at=None))


@dataclass(frozen=True, slots=True)
class _FirstReads:
    """What a write transaction read before writing (:meth:`EventWriter._first_reads`)."""

    head: SessionHead | None
    jobs_waiting: bool | None  # an append outside a turn: the session had jobs waiting
    calls: list[tuple[str, str, dict[str, Any]]]  # stored calls and results of its call ids
    turn_open: bool  # the turn it writes into is open (False when it names none)


def _check_tool_links(
    calls: Sequence[tuple[str, str, dict[str, Any]]], fresh: Sequence[PreparedEvent]
) -> None:
    """A tool_result must answer an unanswered tool_call of this session (the latest
    with its call id); a call id may be used again once its call has its result, as
    real logs do (:mod:`agentctx.tool_links`). ``calls``: (call id, type, meta) of the
    session's stored calls and results with the call ids of ``fresh``, in seq order."""
    linked = [p for p in fresh if p.row["type"] in _LINKED_TYPES]
    if not linked:
        return
    # Per call id: the tool name of its unanswered call (None: every call answered).
    waiting: dict[str, str | None] = {}
    open_ids: set[str] = set()
    for call_id, event_type, meta in calls:  # in seq order
        if event_type == EventType.TOOL_CALL.value:
            open_ids.add(call_id)
            waiting[call_id] = meta.get("tool_name")
        else:
            open_ids.discard(call_id)
    for item in linked:
        row = item.row
        call_id = row["call_id"]
        if row["type"] == EventType.TOOL_CALL.value:
            if call_id in open_ids:
                raise InvalidEvent(
                    f"call_id {call_id!r} is already used by a call that has no tool_result yet"
                )
            open_ids.add(call_id)
            waiting[call_id] = row["meta"].get("tool_name")
            continue
        if call_id not in open_ids:
            if call_id in waiting:
                raise InvalidEvent(f"call_id {call_id!r} already has a tool_result")
            raise InvalidEvent(
                f"tool_result for unknown call_id {call_id!r}: record the tool_call first"
            )
        open_ids.discard(call_id)
        if row["meta"].get("tool_name") is None:
            row["meta"]["tool_name"] = waiting.get(call_id)
