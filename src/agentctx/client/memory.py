"""``RemoteMemory``: ``engine.memory`` of a ``RemoteEngine``, over ``/v1/memories``.

The same calls as the embedded memory service (``search``, ``add``, ``get``, ``list``,
``update``, ``delete``, ``history``, ``set_opt_out``, ``opted_out``), each taking the
user first. ``update`` and ``delete`` with ``expected_version`` are a compare-and-set
(``If-Match``; ``StaleMemory`` when the memory moved on).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel

from agentctx.client.transport import Transport, parse
from agentctx.memory import Memory, MemoryChange, MemoryHit, MemoryKind


class _MemoryPage(BaseModel):
    items: list[Memory]
    next_offset: int | None = None


def _kinds(kinds: Sequence[MemoryKind | str] | None) -> list[str] | None:
    return [MemoryKind(k).value for k in kinds] if kinds else None


def _if_match(version: int | None) -> dict[str, str]:
    return {"If-Match": f'"{version}"'} if version is not None else {}


class RemoteMemory:
    """Long-term memories of a server's users."""

    def __init__(self, transport: Transport) -> None:
        self._http = transport

    def _path(self, memory_id: str) -> str:
        return f"/v1/memories/{quote(memory_id, safe='')}"

    def search(
        self,
        user_id: str,
        query: str | None = None,
        *,
        kinds: Sequence[MemoryKind | str] | None = None,
        agent_id: str | None = None,
        limit: int = 10,
    ) -> builtins.list[MemoryHit]:
        """The user's active memories best matching ``query``."""
        params = {
            "user_id": user_id,
            "query": query,
            "kind": _kinds(kinds),
            "agent_id": agent_id,
            "limit": limit,
        }
        response = self._http.request("GET", "/v1/memories/search", params=params)
        return parse(response, builtins.list[MemoryHit])

    def add(
        self,
        user_id: str,
        content: str,
        *,
        kind: MemoryKind | str = MemoryKind.FACT,
        subject: str | None = None,
        data: dict[str, Any] | None = None,
        keywords: Sequence[str] = (),
        confidence: float = 0.9,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> Memory:
        """Add a memory (consolidated like an extracted one: a duplicate merges)."""
        body = {
            "content": content,
            "kind": MemoryKind(kind).value,
            "subject": subject,
            "data": data,
            "keywords": list(keywords),
            "confidence": confidence,
            "agent_id": agent_id,
            "session_id": session_id,
        }
        response = self._http.request(
            "POST",
            "/v1/memories",
            params={"user_id": user_id},
            json={k: v for k, v in body.items() if v is not None},
            # A repeated add merges into the first and counts as more support: not
            # repeated unless the request never reached the server.
            retry="unsent",
        )
        return parse(response, Memory)

    def get(self, user_id: str, memory_id: str) -> Memory:
        """One memory of the user, with its provenance (``MemoryNotFound`` otherwise)."""
        response = self._http.request("GET", self._path(memory_id), params={"user_id": user_id})
        return parse(response, Memory)

    def list(
        self,
        user_id: str,
        *,
        kinds: Sequence[MemoryKind | str] | None = None,
        status: str | None = "active",
        agent_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[Memory]:
        """The user's memories with ``status`` ("active", "stale", "deleted"; None: any),
        newest update first."""
        params = {
            "user_id": user_id,
            "kind": _kinds(kinds),
            "status": "all" if status is None else status,
            "agent_id": agent_id,
            "limit": limit,
            "offset": offset,
        }
        response = self._http.request("GET", "/v1/memories", params=params)
        return parse(response, _MemoryPage).items

    def update(
        self,
        user_id: str,
        memory_id: str,
        *,
        content: str | None = None,
        data: dict[str, Any] | None = None,
        keywords: Sequence[str] | None = None,
        confidence: float | None = None,
        tainted: bool | None = None,
        expected_version: int | None = None,
        reason: str = "updated",
    ) -> Memory:
        """Change a memory; with ``expected_version`` a compare-and-set (``StaleMemory``)."""
        body = {
            "content": content,
            "data": data,
            "keywords": builtins.list(keywords) if keywords is not None else None,
            "confidence": confidence,
            "tainted": tainted,
            "reason": reason,
        }
        response = self._http.request(
            "PATCH",
            self._path(memory_id),
            params={"user_id": user_id},
            json={k: v for k, v in body.items() if v is not None},
            headers=_if_match(expected_version),
            retry="unsent",
        )
        return parse(response, Memory)

    def delete(
        self, user_id: str, memory_id: str, *, expected_version: int | None = None
    ) -> Memory:
        """Mark a memory deleted (kept in history; never searched or injected again)."""
        response = self._http.request(
            "DELETE",
            self._path(memory_id),
            params={"user_id": user_id},
            headers=_if_match(expected_version),
            # Deleting twice is harmless without a version; with one, a retry would
            # report its own write as a conflict.
            retry="safe" if expected_version is None else "unsent",
        )
        return parse(response, Memory)

    def history(self, user_id: str, memory_id: str) -> builtins.list[MemoryChange]:
        """Every change of a memory, oldest first."""
        response = self._http.request(
            "GET", f"{self._path(memory_id)}/history", params={"user_id": user_id}
        )
        return parse(response, builtins.list[MemoryChange])

    def set_opt_out(self, user_id: str, *, declarative: bool) -> None:
        """Opt the user out of (or back into) declarative memory."""
        self._http.request(
            "PUT",
            "/v1/memory-settings",
            params={"user_id": user_id},
            json={"declarative_opt_out": declarative},
        )

    def opted_out(self, user_id: str) -> bool:
        """Whether the user opted out of declarative memory."""
        response = self._http.request("GET", "/v1/memory-settings", params={"user_id": user_id})
        return bool(response.json()["declarative_opt_out"])
