"""Memory as a tool (seed 003 A.3.2): definitions a model can call, executed here.

``memory_search`` for every agent; ``memory_add``, ``memory_update`` and
``memory_delete`` for agents that manage their own memory. Definitions come in
OpenAI's and Anthropic's formats; :func:`handle_memory_tool` validates a call's
arguments and runs it for one user, returning a JSON-ready result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from agentctx.errors import InvalidInput
from agentctx.memory.models import Memory, MemoryKind
from agentctx.tooling import parse_tool_arguments, tool_definition

if TYPE_CHECKING:
    from agentctx.memory.service import MemoryService

SEARCH, ADD, UPDATE, DELETE = "memory_search", "memory_add", "memory_update", "memory_delete"
_KINDS = [kind.value for kind in MemoryKind]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SearchArgs(_Args):
    query: StrictStr = Field(min_length=1)
    kinds: list[MemoryKind] | None = None
    limit: StrictInt = Field(default=5, ge=1, le=50)


class AddArgs(_Args):
    content: StrictStr = Field(min_length=1, max_length=4000)
    kind: MemoryKind = MemoryKind.FACT
    subject: StrictStr | None = Field(default=None, max_length=256)


class UpdateArgs(_Args):
    memory_id: StrictStr = Field(min_length=1)
    content: StrictStr = Field(min_length=1, max_length=4000)
    expected_version: StrictInt | None = Field(default=None, ge=1)


class DeleteArgs(_Args):
    memory_id: StrictStr = Field(min_length=1)


_TOOLS: dict[str, tuple[str, type[_Args], dict[str, Any]]] = {
    SEARCH: (
        "Search what was learned about the user in earlier sessions (facts, preferences, "
        "profile, how tasks were best done). Results carry their confidence.",
        SearchArgs,
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "kinds": {"type": "array", "items": {"type": "string", "enum": _KINDS}},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    ),
    ADD: (
        "Remember something about the user for later sessions.",
        AddArgs,
        {
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "One self-contained statement."},
                "kind": {"type": "string", "enum": _KINDS},
                "subject": {
                    "type": "string",
                    "description": "What it is the value of (e.g. 'occupation'), so a "
                    "later contradicting statement replaces it.",
                },
            },
            "required": ["content"],
            "additionalProperties": False,
        },
    ),
    UPDATE: (
        "Correct a remembered statement.",
        UpdateArgs,
        {
            "type": "object",
            "properties": {
                "memory_id": {"type": "string"},
                "content": {"type": "string"},
                "expected_version": {"type": "integer", "minimum": 1},
            },
            "required": ["memory_id", "content"],
            "additionalProperties": False,
        },
    ),
    DELETE: (
        "Forget a remembered statement.",
        DeleteArgs,
        {
            "type": "object",
            "properties": {"memory_id": {"type": "string"}},
            "required": ["memory_id"],
            "additionalProperties": False,
        },
    ),
}


def memory_tools(
    format: Literal["openai", "anthropic"] = "openai", *, manage: bool = False
) -> list[dict[str, Any]]:
    """The memory tool definitions: ``memory_search``, and with ``manage`` also
    ``memory_add``, ``memory_update`` and ``memory_delete``."""
    names = [SEARCH, ADD, UPDATE, DELETE] if manage else [SEARCH]
    return [tool_definition(n, _TOOLS[n][0], _TOOLS[n][2], format) for n in names]


def _brief(memory: Memory) -> dict[str, Any]:
    return {
        "memory_id": memory.memory_id,
        "kind": memory.kind.value,
        "content": memory.content,
        "confidence": round(memory.confidence, 3),
        "support": memory.support_count,
        "version": memory.version,
        "status": memory.status,
    }


def handle_memory_tool(
    memory: MemoryService,
    user_id: str,
    name: str,
    arguments: dict[str, Any] | str,
    *,
    agent_id: str | None = None,
    session_id: str | None = None,
) -> dict[str, Any]:
    """Run a model's memory tool call for ``user_id``; InvalidInput for bad arguments or
    an unknown tool, MemoryNotFound for a memory that is not the user's."""
    if name not in _TOOLS:
        raise InvalidInput(f"unknown memory tool {name!r}; known: {', '.join(_TOOLS)}")
    args = parse_tool_arguments(name, arguments, _TOOLS[name][1])
    if isinstance(args, SearchArgs):
        hits = memory.search(user_id, args.query, kinds=args.kinds, limit=args.limit)
        return {"memories": [{**_brief(h.memory), "score": round(h.score, 4)} for h in hits]}
    if isinstance(args, AddArgs):
        added = memory.add(
            user_id,
            args.content,
            kind=args.kind,
            subject=args.subject,
            agent_id=agent_id,
            session_id=session_id,
        )
        return {"memory": _brief(added)}
    if isinstance(args, UpdateArgs):
        updated = memory.update(
            user_id,
            args.memory_id,
            content=args.content,
            expected_version=args.expected_version,
            reason="updated by the agent",
        )
        return {"memory": _brief(updated)}
    assert isinstance(args, DeleteArgs)
    deleted = memory.delete(user_id, args.memory_id)
    return {"memory": _brief(deleted)}
