"""Long-term memory: search, add, list, get, update (compare-and-set), delete, history."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Response

from agentctx.engine import ContextEngine
from agentctx.errors import MemoryNotFound
from agentctx.memory import Memory, MemoryChange, MemoryHit, MemoryKind
from agentctx.server.deps import (
    AgentIdQuery,
    Caller,
    Engine,
    IdPath,
    ReadUser,
    WriteUser,
    respond,
)
from agentctx.server.errors import error_responses, links
from agentctx.server.routes.sessions import IF_MATCH_PATTERN, etag, parse_if_match
from agentctx.server.schemas import TEXT_PATTERN, MemoryCreate, MemoryList, MemoryPatch, OptOut

router = APIRouter(prefix="/v1", tags=["memory"], responses=error_responses(400))
_CAS = error_responses(409, 412)

Kinds = Annotated[list[MemoryKind] | None, Query(alias="kind")]
# Optional, yet stated as a string only: "null" is not a version to send.
IfMatch = Annotated[
    str,
    Header(
        description='"<version>": a compare-and-set (412 stale_memory when it moved on)',
        max_length=32,
        pattern=IF_MATCH_PATTERN,
    ),
]


@router.get("/memories/search", response_model=list[MemoryHit], responses=error_responses(501))
def search_memories(
    user_id: ReadUser,
    engine: Engine,
    caller: Caller,
    query: Annotated[str | None, Query(max_length=10_000, pattern=TEXT_PATTERN)] = None,
    kinds: Kinds = None,
    agent_id: AgentIdQuery = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> Response:
    """The user's active memories best matching ``query``."""
    hits = engine.memory.search(user_id, query, kinds=kinds, agent_id=agent_id, limit=limit)
    return respond(caller, list(hits))


_MEMORY = "/v1/memories/{memory_id}"
_OPENS = links(
    201,
    "memory_id",
    "memory_id",
    {
        "GetMemory": ("get", _MEMORY),
        "UpdateMemory": ("patch", _MEMORY),
        "MemoryHistory": ("get", f"{_MEMORY}/history"),
        "DeleteMemory": ("delete", _MEMORY),
    },
)


@router.post("/memories", status_code=201, response_model=Memory, responses={**_CAS, **_OPENS})
def add_memory(body: MemoryCreate, user_id: WriteUser, engine: Engine, caller: Caller) -> Response:
    """Add a memory; a duplicate of an existing one merges into it."""
    memory = engine.memory.add(
        user_id,
        body.content,
        kind=body.kind,
        subject=body.subject,
        data=body.data,
        keywords=body.keywords,
        confidence=body.confidence,
        agent_id=body.agent_id,
        session_id=body.session_id,
    )
    return respond(caller, memory, 201, ETag=etag(memory.version))


@router.get("/memories", response_model=MemoryList)
def list_memories(
    user_id: ReadUser,
    engine: Engine,
    caller: Caller,
    kinds: Kinds = None,
    status: Annotated[str, Query(pattern="^(active|stale|deleted|all)$")] = "active",
    agent_id: AgentIdQuery = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> Response:
    """The user's memories, newest update first."""
    items = list(
        engine.memory.list(
            user_id,
            kinds=kinds,
            status=None if status == "all" else status,  # type: ignore[arg-type]
            agent_id=agent_id,
            limit=limit + 1,
            offset=offset,
        )
    )
    more = len(items) > limit
    body = MemoryList(items=items[:limit], next_offset=offset + limit if more else None)
    return respond(caller, body)


def _live(engine: ContextEngine, user_id: str, memory_id: str) -> Memory:
    """The memory, unless it was deleted: a deleted memory is gone from the API (404
    ``memory_not_found``); its history stays at ``…/history``."""
    memory = engine.memory.get(user_id, memory_id)
    if memory.status == "deleted":
        raise MemoryNotFound(memory_id)
    return memory


@router.get("/memories/{memory_id}", response_model=Memory)
def get_memory(memory_id: IdPath, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """One memory with its provenance; its ETag is its version. 404 once deleted."""
    memory = _live(engine, user_id, memory_id)
    return respond(caller, memory, ETag=etag(memory.version))


@router.patch("/memories/{memory_id}", response_model=Memory, responses=_CAS)
def update_memory(
    memory_id: IdPath,
    body: MemoryPatch,
    user_id: WriteUser,
    engine: Engine,
    caller: Caller,
    if_match: IfMatch = None,  # type: ignore[assignment]
) -> Response:
    """Change a memory; with ``If-Match`` a compare-and-set (412 ``stale_memory``).
    404 once deleted."""
    expected = parse_if_match(if_match) if if_match is not None else None
    _live(engine, user_id, memory_id)
    memory = engine.memory.update(
        user_id,
        memory_id,
        content=body.content,
        data=body.data,
        keywords=body.keywords,
        confidence=body.confidence,
        tainted=body.tainted,
        expected_version=expected,
        reason=body.reason,
    )
    return respond(caller, memory, ETag=etag(memory.version))


@router.delete("/memories/{memory_id}", response_model=Memory, responses=_CAS)
def delete_memory(
    memory_id: IdPath,
    user_id: WriteUser,
    engine: Engine,
    caller: Caller,
    if_match: IfMatch = None,  # type: ignore[assignment]
) -> Response:
    """Mark a memory deleted (its history stays); 404 when it already is."""
    expected = parse_if_match(if_match) if if_match is not None else None
    _live(engine, user_id, memory_id)
    memory = engine.memory.delete(user_id, memory_id, expected_version=expected)
    return respond(caller, memory)


@router.get("/memories/{memory_id}/history", response_model=list[MemoryChange])
def memory_history(
    memory_id: IdPath, user_id: ReadUser, engine: Engine, caller: Caller
) -> Response:
    """Every change of a memory, oldest first."""
    return respond(caller, list(engine.memory.history(user_id, memory_id)))


@router.put("/memory-settings", response_model=OptOut)
def set_memory_settings(
    body: OptOut, user_id: WriteUser, engine: Engine, caller: Caller
) -> Response:
    """Opt the user out of (or back into) declarative memory."""
    engine.memory.set_opt_out(user_id, declarative=body.declarative_opt_out)
    return respond(caller, OptOut(declarative_opt_out=engine.memory.opted_out(user_id)))


@router.get("/memory-settings", response_model=OptOut)
def get_memory_settings(user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """Whether the user opted out of declarative memory."""
    return respond(caller, OptOut(declarative_opt_out=engine.memory.opted_out(user_id)))
