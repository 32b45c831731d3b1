"""ADK's scoped state kept in agentctx session state.

ADK state keys carry their scope in a prefix, and ADK's own services treat them so
(``google.adk.sessions._session_util.extract_state_delta``):

* ``app:…`` is shared by every user and session of the app: kept, prefix removed, in
  the state of the agentctx session ``<app>`` of the reserved user
  :data:`~agentctx.integrations.adk.names.APP_STATE_USER`;
* ``user:…`` is shared by the user's sessions of the app: kept, prefix removed, in the
  state of the user's reserved session
  :data:`~agentctx.integrations.adk.names.USER_STATE_SESSION` (so erasing the user's
  data erases it too);
* ``temp:…`` lives for the invocation only and is never persisted;
* every other key belongs to the session: kept in the agentctx session's own state.

Every write is agentctx's compare-and-set (``update_state``): a write that lost a race
with another writer reads the state again and merges once more, so concurrent
sessions of one user never lose each other's keys. State values pass the redaction
gate like every write: personal data in a value comes back redacted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.adk.sessions.state import State

from agentctx.engine import ContextEngine
from agentctx.errors import SessionExists, SessionNotFound, StaleSession
from agentctx.integrations.adk.names import APP_STATE_USER, USER_STATE_SESSION
from agentctx.sessions.session import Session

MERGE_ATTEMPTS = 16
"""How often a state merge that keeps losing compare-and-set races retries."""

Scoped = dict[str, dict[str, Any]]


def split_state(state: Mapping[str, Any]) -> Scoped:
    """``{"app": …, "user": …, "session": …}``: the keys of each scope, prefixes
    removed; ``temp:`` keys are left out (ADK's ``extract_state_delta``)."""
    scoped: Scoped = {"app": {}, "user": {}, "session": {}}
    for key, value in state.items():
        if key.startswith(State.APP_PREFIX):
            scoped["app"][key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            scoped["user"][key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            scoped["session"][key] = value
    return scoped


def merged_state(
    app: Mapping[str, Any], user: Mapping[str, Any], session: Mapping[str, Any]
) -> dict[str, Any]:
    """The state an ADK session shows: its own keys, then ``app:`` and ``user:`` keys."""
    state = dict(session)
    state.update({State.APP_PREFIX + k: v for k, v in app.items()})
    state.update({State.USER_PREFIX + k: v for k, v in user.items()})
    return state


def merge_into(
    session: Session, changes: Mapping[str, Any], *, turn_id: str | None = None
) -> Session:
    """Merge ``changes`` into ``session``'s state by compare-and-set, reading the
    state again after a lost race; the change is recorded in the open turn ``turn_id``
    (or a turn of its own)."""
    lost: StaleSession | None = None
    for _ in range(MERGE_ATTEMPTS):
        try:
            session.update_state(dict(changes), turn_id=turn_id)
            return session
        except StaleSession as exc:
            lost = exc
            session.refresh()
    assert lost is not None
    raise lost


class ScopedStates:
    """The ``app:`` and ``user:`` state stores of one engine."""

    def __init__(self, engine: ContextEngine) -> None:
        self.engine = engine

    def _store(
        self, user_id: str, session_id: str, agent_id: str, *, create: bool
    ) -> Session | None:
        try:
            return self.engine.get_session(session_id, user_id, record_access=False)
        except SessionNotFound:
            if not create:
                return None
        try:
            return self.engine.create_session(
                user_id, agent_id, session_id=session_id, metadata={"adk_state": True}
            )
        except SessionExists:  # created meanwhile by another writer
            return self.engine.get_session(session_id, user_id, record_access=False)

    def app_store(self, app_id: str, *, create: bool = False) -> Session | None:
        """The session holding the app's state (None before any was written)."""
        return self._store(APP_STATE_USER, app_id, app_id, create=create)

    def user_store(self, app_id: str, user_id: str, *, create: bool = False) -> Session | None:
        """The session holding the user's state in the app."""
        return self._store(user_id, USER_STATE_SESSION + app_id, app_id, create=create)

    def app_state(self, app_id: str) -> dict[str, Any]:
        store = self.app_store(app_id)
        return store.state if store is not None else {}

    def user_state(self, app_id: str, user_id: str) -> dict[str, Any]:
        store = self.user_store(app_id, user_id)
        return store.state if store is not None else {}

    def write(self, app_id: str, user_id: str, scoped: Scoped) -> None:
        """Merge the ``app`` and ``user`` parts of ``scoped`` into their stores."""
        if scoped["app"]:
            store = self.app_store(app_id, create=True)
            assert store is not None
            merge_into(store, scoped["app"])
        if scoped["user"]:
            store = self.user_store(app_id, user_id, create=True)
            assert store is not None
            merge_into(store, scoped["user"])
