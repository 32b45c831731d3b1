"""``AgentCtxSession``: an OpenAI Agents SDK ``Session`` whose history lives in agentctx.

``Runner.run(agent, input, session=AgentCtxSession(engine, session_id=…, user_id=…))``
reads the conversation from agentctx before the run and writes what the run adds
back, so the history is an agentctx session like any other: redacted, hash-chained,
searchable, compacted, inspectable.

* ``get_items()`` (no limit) is the *context window*: ``build_context`` within the
  session's ``budget``, converted to SDK items (``window.window_items``). What
  compaction took out comes back as it shows in the window: summaries and memories
  as ``system`` messages, shortened tool output, image placeholders.
* ``get_items(limit=N)`` is the newest N items exactly as they were added (content
  redacted), for the SDK's own bookkeeping (retries compare the session's tail).
* ``add_items`` writes one batch as one all-or-nothing append; outside a turn, the
  batch is a turn of its own, so each batch ends a turn and triggers turn-end
  compaction. A run writes its input, then each step's output, as such batches.
* ``pop_item`` retracts the newest item. The log is append-only: the retraction is
  a state change (a ``state_delta`` event) listing the retracted event, and both
  readings skip it. Concurrent pops on one session retract distinct items: the
  state write is compare-and-set, and a pop that lost the race re-reads and retries.
* ``clear_session`` deletes the session and its data and creates it again, empty,
  with the same id.

The engine is anything with the ``ContextEngine`` methods of :class:`EngineLike`
(the in-process engine, or a client of an agentctx server with the same methods).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from agentctx.context.gather import RETRACTED_KEY
from agentctx.context.window import ContextWindow
from agentctx.errors import (
    MissingExtra,
    SessionNotFound,
    StaleSession,
)
from agentctx.events import BlobPart, Event, ImagePart
from agentctx.integrations.openai_agents.items import (
    ITEM_KEY,
    event_to_item,
    item_to_draft,
    records_item,
    skeleton_of,
)
from agentctx.integrations.openai_agents.window import window_items, without_retracted
from agentctx.integrations.sessions import (
    EngineLike,
    SessionLike,
    open_session,
    read_blob,
    read_image,
)

# The session-state key listing retracted item events (``{"event_id", "seq"}``); windows
# leave them out (agentctx.context.builder.without_retracted).

POP_ATTEMPTS = 16
"""How often a pop that keeps losing compare-and-set races retries before giving up."""

Item = dict[str, Any]


def _require_sdk() -> Any:
    try:
        from agents.memory.session_settings import SessionSettings  # noqa: PLC0415
    except ImportError as exc:
        raise MissingExtra("agents", "openai-agents") from exc
    return SessionSettings


class AgentCtxSession:
    """An Agents SDK ``Session`` (the ``agents.memory.Session`` protocol) kept in agentctx.

    ``budget``, ``query``, ``strategy``, ``system_prompt`` and ``context_config`` shape
    the window ``get_items()`` returns (``Session.build_context``'s arguments);
    ``system_prompt=None`` uses the agent's registered prompt, if any (the SDK sends
    the ``Agent``'s instructions itself). The pinned instruction is off unless
    ``pinned_instruction=True``: the runner reads the history *before* it records the
    new input and sends that input after it, so a pin would name the previous request
    as the current goal (with an active task, ``session.set_task``, it names the task).
    ``session_settings`` is the SDK's ``SessionSettings`` (its ``limit`` makes the
    runner read the newest items instead of the window). The agentctx session is
    created on first use.
    """

    def __init__(
        self,
        engine: EngineLike,
        *,
        session_id: str,
        user_id: str,
        agent_id: str = "default",
        budget: int = 4000,
        query: str | None = None,
        strategy: str | None = None,
        system_prompt: str | None = None,
        context_config: dict[str, Any] | None = None,
        pinned_instruction: bool = False,
        session_settings: Any = None,
    ) -> None:
        settings_type = _require_sdk()
        self.engine = engine
        self.session_id = session_id
        self.user_id = user_id
        self.agent_id = agent_id
        self.budget = budget
        self.query = query
        self.strategy = strategy
        self.system_prompt = system_prompt
        sections = {"pinned_instruction": pinned_instruction}
        given = dict(context_config or {})
        sections.update(given.pop("sections", None) or {})
        self.context_config: dict[str, Any] = {**given, "sections": sections}
        self.session_settings = session_settings
        if session_settings is not None and not isinstance(session_settings, settings_type):
            self.session_settings = settings_type(**dict(session_settings))
        self._handle: SessionLike | None = None

    def __repr__(self) -> str:
        return f"AgentCtxSession(session_id={self.session_id!r}, user_id={self.user_id!r})"

    # The SDK's protocol: coroutines, the engine's blocking calls run in a thread ------

    async def get_items(self, limit: int | None = None) -> list[Item]:
        """The context window as items (no ``limit``), or the newest ``limit`` items."""
        if limit is None:
            return await asyncio.to_thread(self.window_items)
        return await asyncio.to_thread(self.latest_items, limit)

    async def add_items(self, items: list[Any]) -> None:
        """Record ``items`` as events, in one transaction."""
        await asyncio.to_thread(self.record, items)

    async def pop_item(self) -> Item | None:
        """Retract the newest item and return it (None when there is none)."""
        return await asyncio.to_thread(self.retract_latest)

    async def clear_session(self) -> None:
        """Delete the session's data; the session starts again, empty, with the same id."""
        await asyncio.to_thread(self.clear)

    # The same operations, synchronous ------------------------------------------------

    def session(self) -> SessionLike:
        """The agentctx session (created on first use)."""
        if self._handle is None:
            self._handle = open_session(self.engine, self.session_id, self.user_id, self.agent_id)
        return self._handle

    def record(self, items: Sequence[Any]) -> list[Event]:
        """Append one event per item (one transaction, one turn)."""
        drafts = [item_to_draft(_as_dict(item)) for item in items]
        if not drafts:
            return []
        return self.session().append(*drafts)

    def context_window(self) -> ContextWindow:
        """The window ``get_items()`` converts (for inspection: its report says what
        each section cost and what compaction left out)."""
        return self.session().build_context(
            self.query,
            self.budget,
            strategy=self.strategy,
            system_prompt=self.system_prompt,
            config=self.context_config,
        )

    def window_items(self) -> list[Item]:
        """The context window as SDK items, retracted items left out."""
        window = self.context_window()
        items = window_items(window.messages)
        retracted = self._retracted(refresh=False)
        shown = set(window.report.included_event_ids)
        gone = [entry for entry in retracted if entry["event_id"] in shown]
        if gone:
            items = without_retracted(items, self._events_of(gone))
        return items

    def latest_items(self, limit: int) -> list[Item]:
        """The newest ``limit`` items, oldest first, as they were added (redacted)."""
        if limit <= 0:
            return []
        return [self._item(event) for event in self._latest_events(limit)]

    def retract_latest(self) -> Item | None:
        """Retract the newest item (see the module docstring for the race guarantee)."""
        lost: StaleSession | None = None
        for _ in range(POP_ATTEMPTS):
            retracted = self._retracted(refresh=True)
            latest = self._latest_events(1, retracted)
            if not latest:
                return None
            event = latest[-1]
            entry = {"event_id": event.event_id, "seq": event.seq}
            try:
                self.session().update_state({RETRACTED_KEY: [*retracted, entry]})
            except StaleSession as exc:
                lost = exc  # another writer changed the state first: read again
                continue
            return self._item(event)
        assert lost is not None
        raise lost

    def clear(self) -> None:
        """Delete the session (events, blobs no other session uses, summaries, jobs)
        and create it again, empty, with the same id."""
        with contextlib.suppress(SessionNotFound):
            self.engine.delete_session(self.session_id, self.user_id)
        self._handle = None
        self.session()

    # Helpers --------------------------------------------------------------------------

    def _retracted(self, *, refresh: bool) -> list[dict[str, Any]]:
        session = self.session()
        if refresh:
            session.refresh()
        value = session.state.get(RETRACTED_KEY) or []
        return [dict(entry) for entry in value if isinstance(entry, dict)]

    def _latest_events(
        self, limit: int, retracted: Sequence[dict[str, Any]] | None = None
    ) -> list[Event]:
        """The newest ``limit`` events that record items and are not retracted."""
        if retracted is None:
            retracted = self._retracted(refresh=True)
        skip = {entry["event_id"] for entry in retracted}
        # Other events (state changes, agentctx's own error notes) sit between items:
        # read a little more than asked, and more again while it is not enough.
        fetch = limit + len(skip) + 8
        while True:
            events = self.session().events(last=fetch)
            found = [e for e in events if e.event_id not in skip and self._records_item(e)]
            if len(found) >= limit or len(events) < fetch:
                return found[-limit:]
            fetch *= 4

    def _events_of(self, entries: Sequence[dict[str, Any]]) -> list[Event]:
        events: list[Event] = []
        for entry in entries:
            seq = int(entry["seq"])
            events.extend(
                e
                for e in self.session().events(start_seq=seq, end_seq=seq)
                if e.event_id == entry["event_id"]
            )
        return events

    def _records_item(self, event: Event) -> bool:
        # Another writer's event with an offloaded payload is told apart by reading it.
        return records_item(event) and (
            ITEM_KEY in event.payload or skeleton_of(event, self._read_blob) is not None
        )

    def _item(self, event: Event) -> Item:
        item = event_to_item(event, self._read_blob, self._read_image)
        if item is None:  # unreachable for events _records_item accepted
            raise ValueError(f"event {event.event_id} records no Agents SDK item")
        return item

    def _read_blob(self, part: BlobPart) -> bytes:
        return read_blob(self.engine, self.user_id, part)

    def _read_image(self, part: ImagePart) -> bytes | None:
        return read_image(self.engine, self.user_id, part)


def _as_dict(item: Any) -> dict[str, Any]:
    """An item as a plain dict (the SDK passes dicts; pydantic models are accepted too)."""
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        value = dump(exclude_unset=True)
        if isinstance(value, dict):
            return value
    raise TypeError(f"an Agents SDK input item must be a dict, got {type(item).__name__}")
