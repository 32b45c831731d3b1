"""``read_offloaded`` as a tool a model can call, in OpenAI's and Anthropic's formats."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from agentctx.compaction.tool_output.offload import read_offloaded_page
from agentctx.tooling import parse_tool_arguments, tool_definition

if TYPE_CHECKING:
    from agentctx.sessions.session import Session

TOOL_NAME = "read_offloaded"
DEFAULT_PAGE_TOKENS = 4000
"""The page size of a call that names no ``max_tokens``, so one call cannot flood the
window with the output that was offloaded to keep it small."""

_DESCRIPTION = (
    "Read the full text of a tool output that was offloaded from the context. "
    "A line like [tool_output: out_…, N tokens, use read_offloaded(out_…)] names it. "
    "Long outputs come in pages: pass the offset the previous page ends at to continue."
)


def _schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "id": {
                "type": "string",
                "description": "The id from the pointer line, e.g. out_3f2a9c0e5d7b41a8c2e9f610.",
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "Character offset to start reading at (default 0).",
            },
            "max_tokens": {
                "type": "integer",
                "minimum": 1,
                "description": f"Most tokens to return (default {DEFAULT_PAGE_TOKENS}).",
            },
        },
        "required": ["id"],
        "additionalProperties": False,
    }


def read_offloaded_tool(format: Literal["openai", "anthropic"] = "openai") -> dict[str, Any]:
    """The JSON definition of the ``read_offloaded`` tool for a model request.

    ``"openai"``: a Chat Completions ``tools`` entry (``{"type": "function", …}``);
    ``"anthropic"``: a Messages API tool (``{"name", "description", "input_schema"}``).
    """
    return tool_definition(TOOL_NAME, _DESCRIPTION, _schema(), format)


class ReadOffloadedArgs(BaseModel):
    """The arguments of a ``read_offloaded`` call, as its schema defines them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: StrictStr = Field(min_length=1)
    offset: StrictInt = Field(default=0, ge=0)
    max_tokens: StrictInt | None = Field(default=None, ge=1)


def parse_read_offloaded_args(arguments: dict[str, Any] | str) -> ReadOffloadedArgs:
    """Validate a model's ``read_offloaded`` arguments (a dict, or JSON text as OpenAI
    sends them); ``InvalidInput`` says what is wrong."""
    return parse_tool_arguments(TOOL_NAME, arguments, ReadOffloadedArgs)


def handle_read_offloaded(
    session: Session,
    arguments: dict[str, Any] | str,
    *,
    default_max_tokens: int | None = DEFAULT_PAGE_TOKENS,
) -> str:
    """Run a model's ``read_offloaded`` call and return the tool result text.

    A page that does not reach the end is followed by a line saying where it stops
    and how to continue. Bad arguments raise ``InvalidInput``; an unknown id, or one
    from another session, ``BlobNotFound``.
    """
    args = parse_read_offloaded_args(arguments)
    page = read_offloaded_page(
        session,
        args.id,
        offset=args.offset,
        max_tokens=args.max_tokens if args.max_tokens is not None else default_max_tokens,
    )
    if page.next_offset is None:
        return page.text
    return (
        f"{page.text}\n[read_offloaded: characters {page.offset:,}-{page.next_offset:,} of "
        f"{page.total_chars:,}; continue with offset={page.next_offset}]"
    )
