"""``AgentCtxSessionService``: an ADK session service whose sessions live in agentctx.

``Runner(app_name=…, agent=…, session_service=AgentCtxSessionService(engine))`` keeps
every session in agentctx: redacted, hash-chained, searchable, compacted, inspectable.

* ADK's app name, user id and session id are agentctx's agent, user and session
  (names that are not agentctx ids are escaped, see ``names``). A session id names
  one session of a user across apps: a session of another app does not exist for
  this one, and creating one with the same id raises ``AlreadyExistsError``.
* ``append_event`` records an ADK event as agentctx events (``events``) in one
  append. An invocation is a turn: its events are written in a turn begun for it,
  which ends when the next invocation of the session begins, on
  :meth:`~AgentCtxSessionService.end_invocation` (the ``AgentCtxPlugin`` calls it
  when a run ends) or on :meth:`~AgentCtxSessionService.close`; the end of a turn
  triggers agentctx's turn-end work (compaction, memory extraction).
* State: ``app:``, ``user:`` and session keys as ADK's own services keep them
  (``state``); ``temp:`` keys reach the in-memory session only.
* Stale writes: a session object remembers the log position it was read (or last
  written) at; appending through an object the log has moved past since raises ADK's
  ``StaleSessionError``, as ``DatabaseSessionService`` does, and writes nothing.
* ``get_session`` honours ``GetSessionConfig`` (``num_recent_events``, then
  ``after_timestamp``, as ``InMemorySessionService`` applies them), reading only the
  newest events it needs.

What ADK reads back equals what it wrote (ids, author, invocation id, content parts,
actions and the state delta, exact timestamps), except where the redaction gate took
personal data out: text, arguments, responses and state values come back redacted.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event as AdkEvent
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session as AdkSession
from pydantic_core import to_jsonable_python
from typing_extensions import override

from agentctx.engine import ContextEngine
from agentctx.errors import (
    BlobNotFound,
    InvalidEvent,
    SessionExists,
    SessionNotFound,
    StaleSession,
)
from agentctx.events import BlobPart, Event, ImagePart
from agentctx.integrations.adk.events import (
    EVENT_KEY,
    GROUP_KEY,
    event_to_drafts,
    group_of,
    may_record_event,
    restore_event,
    unlinked,
)
from agentctx.integrations.adk.names import APP_STATE_USER, USER_STATE_SESSION, from_id, to_id
from agentctx.integrations.adk.state import ScopedStates, merge_into, merged_state, split_state
from agentctx.sessions.models import SessionInfo
from agentctx.sessions.session import Session
from agentctx.sessions.turns import Turn

TURN_AUTHOR = "adk"
"""The author of the turns this service begins (one per invocation)."""

STALE_MESSAGE = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)
"""ADK's own message for a stale write (``DatabaseSessionService``)."""

Key = tuple[str, str]  # (agentctx user id, agentctx session id)


class AgentCtxSessionService(BaseSessionService):
    """An ADK ``BaseSessionService`` kept in an agentctx engine (see the module text)."""

    def __init__(self, engine: ContextEngine) -> None:
        self.engine = engine
        self.states = ScopedStates(engine)
        self._guard = threading.Lock()
        self._locks: dict[Key, threading.Lock] = {}
        self._turns: dict[Key, tuple[str, Turn]] = {}

    # ADK's interface: coroutines, the engine's blocking calls run in a thread ---------

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> AdkSession:
        return await asyncio.to_thread(
            self.create_session_sync, app_name, user_id, state, session_id
        )

    @override
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> AdkSession | None:
        return await asyncio.to_thread(self.get_session_sync, app_name, user_id, session_id, config)

    @override
    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        return await asyncio.to_thread(self.list_sessions_sync, app_name, user_id)

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await asyncio.to_thread(self.delete_session_sync, app_name, user_id, session_id)

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        app_id, user = to_id(app_name, "app_name"), to_id(user_id, "user_id")
        return await asyncio.to_thread(self.states.user_state, app_id, user)

    @override
    async def append_event(self, session: AdkSession, event: AdkEvent) -> AdkEvent:
        if event.partial:
            return event
        # As ADK's services do: temp state reaches the in-memory session (later agents
        # of the invocation read it) and is trimmed from what is stored.
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        await asyncio.to_thread(self.record_event, session, event)
        session.last_update_time = event.timestamp
        return self._commit_event_to_session(session, event)

    async def end_invocation(self, session: AdkSession) -> None:
        """End the turn of the session's current invocation (if one is open)."""
        await asyncio.to_thread(self.end_turn_of, session.user_id, session.id, session.app_name)

    async def close(self) -> None:
        """End every turn this service has open."""
        with self._guard:
            open_turns = list(self._turns.values())
            self._turns.clear()
        for _, turn in open_turns:
            await asyncio.to_thread(turn.end, "ok")

    # The same operations, synchronous ------------------------------------------------

    def create_session_sync(
        self,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> AdkSession:
        """Create a session (``AlreadyExistsError`` when its id is taken)."""
        session_id = session_id.strip() if session_id else str(uuid.uuid4())
        app_id, user, sid = self._ids(app_name, user_id, session_id)
        scoped = split_state(to_jsonable_python(state or {}, fallback=str))
        try:
            handle = self.engine.create_session(
                user, app_id, session_id=sid, state=scoped["session"] or None
            )
        except SessionExists as exc:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from exc
        self.states.write(app_id, user, scoped)
        return self._session(app_name, user_id, session_id, handle.info, [])

    def get_session_sync(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> AdkSession | None:
        """The session with its events (as ``config`` selects), None if there is none."""
        handle = self._handle(app_name, user_id, session_id.strip(), record_access=True)
        if handle is None:
            return None
        info = handle.info  # the events read next are those up to this log position
        events = self._read_events(handle, info.last_seq, config or GetSessionConfig())
        return self._session(app_name, user_id, session_id.strip(), info, events)

    def list_sessions_sync(self, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        """The app's sessions (of one user, or of all), without events, oldest update first."""
        app_id = to_id(app_name, "app_name")
        infos: list[SessionInfo] = []
        cursor: str | None = None
        while True:
            if user_id is None:
                page = self.engine.list_all_sessions(agent_id=app_id, limit=200, cursor=cursor)
            else:
                page = self.engine.list_sessions(
                    to_id(user_id, "user_id"), agent_id=app_id, limit=200, cursor=cursor
                )
            infos.extend(info for info in page.items if _is_adk_session(info))
            cursor = page.next_cursor
            if cursor is None:
                break
        sessions = [
            self._session(app_name, from_id(info.user_id), from_id(info.session_id), info, [])
            for info in infos
        ]
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    def delete_session_sync(self, app_name: str, user_id: str, session_id: str) -> None:
        """Delete a session and its data (nothing happens for a missing one)."""
        handle = self._handle(app_name, user_id, session_id.strip(), record_access=False)
        if handle is None:
            return
        with self._guard:
            self._turns.pop((handle.user_id, handle.id), None)
        with suppress(SessionNotFound):
            self.engine.delete_session(handle.id, handle.user_id)

    def record_event(self, session: AdkSession, event: AdkEvent) -> list[Event]:
        """Write ``event`` (temp state already trimmed) to the session's log and its
        state deltas to the state stores; ``StaleSessionError`` for a stale ``session``."""
        handle = self._handle(session.app_name, session.user_id, session.id, record_access=False)
        if handle is None:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        key = (handle.user_id, handle.id)
        with self._session_lock(key):
            expected = self._expected_last_seq(handle, session)
            turn = self._turn_for(handle, event.invocation_id)
            drafts = event_to_drafts(event)
            try:
                try:
                    written = turn.append(*drafts, expected_last_seq=expected)
                except InvalidEvent:
                    if drafts == unlinked(drafts):
                        raise
                    written = turn.append(*unlinked(drafts), expected_last_seq=expected)
            except StaleSession as exc:
                raise StaleSessionError(STALE_MESSAGE) from exc
            last_seq = written[-1].seq
            delta = event.actions.state_delta if event.actions else {}
            scoped = split_state(to_jsonable_python(delta, fallback=str))
            self.states.write(to_id(session.app_name, "app_name"), handle.user_id, scoped)
            if scoped["session"]:
                merge_into(handle, scoped["session"], turn_id=turn.turn_id)
                last_seq = handle.info.last_seq
        session._storage_update_marker = str(last_seq)
        return written

    def open_turn_id(self, user_id: str, session_id: str) -> str | None:
        """The id of the open invocation turn this service writes an ADK session's
        events to (ADK's user and session id), None when there is none."""
        key = (to_id(user_id, "user_id"), to_id(session_id, "session_id"))
        with self._guard:
            cached = self._turns.get(key)
        return cached[1].turn_id if cached is not None and not cached[1].ended else None

    def end_turn_of(self, user_id: str, session_id: str, app_name: str | None = None) -> None:
        """End the open invocation turn of an ADK session (ADK's user and session id),
        also one another service instance left open when ``app_name`` is given."""
        key = (to_id(user_id, "user_id"), to_id(session_id, "session_id"))
        with self._guard:
            found = self._turns.pop(key, None)
        if found is not None:
            found[1].end("ok")
            return
        if app_name is not None:
            handle = self._handle(app_name, user_id, session_id, record_access=False)
            if handle is not None:
                self._left_open(handle, "")  # no invocation goes on: it ends any

    # Helpers --------------------------------------------------------------------------

    @staticmethod
    def _ids(app_name: str, user_id: str, session_id: str) -> tuple[str, str, str]:
        return (
            to_id(app_name, "app_name"),
            to_id(user_id, "user_id"),
            to_id(session_id, "session_id"),
        )

    def _handle(
        self, app_name: str, user_id: str, session_id: str, *, record_access: bool
    ) -> Session | None:
        """The agentctx session of an ADK session of ``app_name`` (None if there is none)."""
        app_id, user, sid = self._ids(app_name, user_id, session_id)
        try:
            handle = self.engine.get_session(sid, user, record_access=record_access)
        except SessionNotFound:
            return None
        if handle.agent_id != app_id or not _is_adk_session(handle.info):
            return None
        return handle

    @contextmanager
    def _session_lock(self, key: Key) -> Iterator[None]:
        """Appends to one session in this process, one at a time (as ADK's own)."""
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            yield

    def _session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        info: SessionInfo,
        events: list[AdkEvent],
    ) -> AdkSession:
        app_id = to_id(app_name, "app_name")
        state = merged_state(
            self.states.app_state(app_id),
            self.states.user_state(app_id, info.user_id),
            info.state,
        )
        session = AdkSession(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=state,
            events=events,
            last_update_time=info.updated_at.timestamp(),
        )
        session._storage_update_marker = str(info.last_seq)
        return session

    def _expected_last_seq(self, handle: Session, session: AdkSession) -> int | None:
        """The log position ``session`` was read at. A session object this service did
        not make has none: it is stale unless its newest event is the log's newest."""
        marker = session._storage_update_marker
        if marker is not None and marker.isdigit():
            return int(marker)
        newest = self._newest_groups(handle, handle.info.last_seq, want=1)
        stored = newest[-1].id if newest else None
        held = session.events[-1].id if session.events else None
        if stored != held:
            raise StaleSessionError(STALE_MESSAGE)
        return handle.info.last_seq

    def _turn_for(self, handle: Session, invocation_id: str) -> Turn:
        """The open turn of the invocation; a new invocation ends the previous one's."""
        key = (handle.user_id, handle.id)
        with self._guard:
            cached = self._turns.get(key)
        if cached is not None and cached[0] == invocation_id and not cached[1].ended:
            return cached[1]
        if cached is not None:
            cached[1].end("ok")
        else:
            reopened = self._left_open(handle, invocation_id)
            if reopened is not None:
                with self._guard:
                    self._turns[key] = (invocation_id, reopened)
                return reopened
        request_id = to_id(invocation_id, "invocation_id") if invocation_id else None
        turn = handle.begin_turn(request_id=request_id, author=TURN_AUTHOR)
        with self._guard:
            self._turns[key] = (invocation_id, turn)
        return turn

    def _left_open(self, handle: Session, invocation_id: str) -> Turn | None:
        """The invocation turn another service instance (or process) left open: the one
        to go on with for the same invocation; any other is ended."""
        newest = handle.events(last=1)
        if not newest or newest[0].turn_id is None:
            return None
        info = handle.turn_info(newest[0].turn_id)
        if info.status != "open" or info.author != TURN_AUTHOR:
            return None
        turn = handle.open_turn(info.turn_id)
        if invocation_id and info.request_id == to_id(invocation_id, "invocation_id"):
            return turn
        turn.end("ok")
        return None

    # Reading events back ----------------------------------------------------------------

    def _read_events(
        self, handle: Session, last_seq: int, config: GetSessionConfig
    ) -> list[AdkEvent]:
        """The session's ADK events up to ``last_seq``, selected as ADK's in-memory
        service selects them: the newest ``num_recent_events``, then those from the
        last one before ``after_timestamp`` on."""
        recent, after = config.num_recent_events, config.after_timestamp
        if recent == 0:
            return []
        if recent is None and after is None:
            events = self._groups(handle.events(end_seq=last_seq), handle.user_id)
        else:
            events = self._newest_groups(handle, last_seq, want=recent, after=after)
        if recent is not None:
            events = events[-recent:]
        if after is not None:
            index = len(events) - 1
            while index >= 0 and events[index].timestamp >= after:
                index -= 1
            events = events[index + 1 :]
        return events

    def _newest_groups(
        self, handle: Session, last_seq: int, *, want: int | None, after: float | None = None
    ) -> list[AdkEvent]:
        """The newest ADK events: at least ``want`` of them, and back to one older than
        ``after`` (or all). Reads the log's tail, more of it until that is enough."""
        fetch = (want or 4) * 3 + 8
        while True:
            tail = handle.events(last=fetch, end_seq=last_seq)
            events = self._groups(tail, handle.user_id)
            enough = (want is None or len(events) >= want) and (
                after is None or any(e.timestamp < after for e in events)
            )
            if len(tail) < fetch or enough:  # the whole log, or what was asked for
                return events
            fetch *= 4

    def _groups(self, events: Sequence[Event], user_id: str) -> list[AdkEvent]:
        """The ADK events that whole groups among ``events`` record, in log order (a
        group cut off at the start of ``events`` is left out)."""
        out: list[AdkEvent] = []
        members: list[Event] = []
        skeleton: dict[str, Any] | None = None
        group_id: str | None = None

        def read_blob(part: BlobPart) -> bytes:
            return self.engine.get_blob(part.blob_id, user_id)

        def read_image(part: ImagePart) -> bytes | None:
            try:
                return self.engine.restore_image(part.image_id, user_id)
            except BlobNotFound:  # ImageExpired included: retention removed the bytes
                return None

        for event in events:
            if not may_record_event(event):
                continue
            payload = group_of(event, read_blob)
            if payload is None:
                continue
            group = payload[GROUP_KEY]
            if group["index"] == 0:
                skeleton, group_id, members = payload.get(EVENT_KEY), group["id"], [event]
            elif group["id"] == group_id and len(members) == group["index"]:
                members.append(event)
            else:
                continue
            if skeleton is not None and len(members) == group["count"]:
                out.append(restore_event(skeleton, members, read_blob, read_image))
                skeleton, group_id, members = None, None, []
        return out


def _is_adk_session(info: SessionInfo) -> bool:
    """Whether a session is an ADK session (not one of the scoped-state stores)."""
    return info.user_id != APP_STATE_USER and not info.session_id.startswith(USER_STATE_SESSION)
