"""``RemoteEngine``: ``ContextEngine``'s API, served by an agentctx server.

Moving an agent from the embedded engine to a server is a one-line change::

    engine = ContextEngine()                                  # embedded
    engine = RemoteEngine("https://ctx.example.com", api_key) # the same calls, over HTTP

    session = engine.create_session(user_id="u1", agent_id="helper")
    with session.turn() as turn:
        turn.add_message("user", "Book the cheapest flight")
    window = session.build_context(query="…", budget=4000)

Every call names the user it acts for (sent as the ``user_id`` query parameter; the
API key must be allowed to act for that user, else ``UserNotFound``). Errors are the
same classes the embedded engine raises (``SessionNotFound``, ``StaleSession``, …),
rebuilt from the server's error codes. One pooled HTTP connection set serves all
threads; reads and idempotent writes are retried with backoff on connection errors
and 503 (see :mod:`agentctx.client.transport`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from agentctx.client.memory import RemoteMemory
from agentctx.client.session import RemoteSession
from agentctx.client.transport import Transport, parse
from agentctx.errors import SessionExists
from agentctx.ids import new_id
from agentctx.sessions.models import DeleteReport, Page, SessionInfo, SweepReport, VerifyReport

if TYPE_CHECKING:
    import httpx

API_KEY_ENV = "AGENTCTX_API_KEY"


class RemoteEngine:
    """The client of an agentctx server, with the methods of ``ContextEngine``.

    ``url`` is the server's base address; ``api_key`` its API key (default: the
    ``AGENTCTX_API_KEY`` environment variable). ``timeout`` bounds each request in
    seconds; ``retries`` how often a request that may be repeated is retried, waiting
    ``backoff`` seconds doubled each time. ``transport`` replaces httpx's network
    transport (a proxy, a test harness). Close it (or use ``with``) to free connections.
    """

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.2,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._http = Transport(
            url,
            api_key if api_key is not None else os.environ.get(API_KEY_ENV),
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            transport=transport,
            headers=headers,
        )
        self.memory = RemoteMemory(self._http)

    @property
    def url(self) -> str:
        """The server's base address."""
        return self._http.url

    @property
    def transport(self) -> Transport:
        """The HTTP transport (for requests the engine's methods do not cover)."""
        return self._http

    def __repr__(self) -> str:
        return f"RemoteEngine({self.url!r})"

    # Sessions ---------------------------------------------------------------------------

    def create_session(
        self,
        user_id: str,
        agent_id: str = "default",
        *,
        session_id: str | None = None,
        state: dict[str, Any] | None = None,
        ttl: timedelta | None = None,
        config: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> RemoteSession:
        """Create a session of ``user_id`` with ``agent_id``.

        Without ``session_id`` the client names the session itself, so a retry after a
        lost response finds the session its first attempt created (``SessionExists``)
        and returns it rather than creating a second one.
        """
        named = session_id is None
        body = {
            "agent_id": agent_id,
            "session_id": session_id or new_id(),
            "state": state,
            "ttl_seconds": ttl.total_seconds() if ttl is not None else None,
            "config": config,
            "metadata": metadata,
        }
        try:
            response = self._http.request(
                "POST",
                "/v1/sessions",
                params={"user_id": user_id},
                json={k: v for k, v in body.items() if v is not None},
                retry="safe" if named else "unsent",
            )
        except SessionExists:
            if not named:
                raise
            # Our own random id exists: an earlier attempt of this call created it.
            return self.get_session(str(body["session_id"]), user_id)
        return RemoteSession(self, parse(response, SessionInfo))

    def get_session(self, session_id: str, user_id: str) -> RemoteSession:
        """Load a session. Another user's session raises ``SessionNotFound``, like a missing one."""
        response = self._http.request(
            "GET", f"/v1/sessions/{quote(session_id, safe='')}", params={"user_id": user_id}
        )
        return RemoteSession(self, parse(response, SessionInfo))

    def list_sessions(
        self,
        user_id: str,
        *,
        agent_id: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        search: str | None = None,
    ) -> Page[SessionInfo]:
        """A page of the user's live sessions, oldest first; pass ``next_cursor`` back."""
        params = {
            "user_id": user_id,
            "agent_id": agent_id,
            "limit": limit,
            "cursor": cursor,
            "search": search,
        }
        response = self._http.request("GET", "/v1/sessions", params=params)
        return parse(response, Page[SessionInfo])

    def delete_session(self, session_id: str, user_id: str) -> DeleteReport:
        """Delete a session, its events, turns, jobs and blobs no other session uses."""
        response = self._http.request(
            "DELETE",
            f"/v1/sessions/{quote(session_id, safe='')}",
            params={"user_id": user_id},
            # A retry after a lost response would find nothing and say SessionNotFound.
            retry="unsent",
        )
        return parse(response, DeleteReport)

    def verify(self, session_id: str, user_id: str) -> VerifyReport:
        """Check a session's hash chain; the report names the first bad seq."""
        response = self._http.request(
            "GET",
            f"/v1/sessions/{quote(session_id, safe='')}/verify",
            params={"user_id": user_id},
        )
        return parse(response, VerifyReport)

    # Blobs ------------------------------------------------------------------------------

    def get_blob(self, blob_id: str, user_id: str) -> bytes:
        """Bytes of a blob referenced by one of the user's events."""
        response = self._http.request(
            "GET", f"/v1/blobs/{quote(blob_id, safe='')}", params={"user_id": user_id}
        )
        return response.content

    def restore_image(self, image_id: str, user_id: str) -> bytes:
        """The original bytes behind an image id (``img_…``); ``ImageExpired`` once
        cold-storage retention removed them."""
        response = self._http.request(
            "GET", f"/v1/images/{quote(image_id, safe='')}", params={"user_id": user_id}
        )
        return response.content

    # Data control (admin keys) ----------------------------------------------------------

    def delete_user_data(self, user_id: str) -> DeleteReport:
        """Remove everything stored for a user (needs an ``admin`` key)."""
        response = self._http.request(
            "DELETE", f"/v1/admin/users/{quote(user_id, safe='')}", retry="unsent"
        )
        return parse(response, DeleteReport)

    def sweep(self) -> SweepReport:
        """Delete expired sessions and orphaned blobs, close abandoned turns, trim the
        audit log (needs an ``admin`` key)."""
        response = self._http.request("POST", "/v1/admin/sweep", retry="unsent")
        return parse(response, SweepReport)

    # Lifecycle --------------------------------------------------------------------------

    def ping(self) -> None:
        """Ask the server whether its database answers (raises ``ServerUnavailable``)."""
        self._http.request("GET", "/readyz")

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.close()

    def __enter__(self) -> RemoteEngine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
