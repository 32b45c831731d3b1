"""The search sub-agent as a tool a model can call: ``web_research``.

:func:`search_tool_definition` gives the definition in OpenAI's or Anthropic's format;
:func:`handle_search_tool` validates a call's arguments, runs the research for the
session (recording the report as the call's ``tool_result``) and returns the short,
JSON-ready report the model sees: answer, confidence, sources with page pointers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from agentctx.search.service import TOOL_NAME
from agentctx.tooling import parse_tool_arguments, tool_definition

if TYPE_CHECKING:
    from agentctx.search.report import SearchReport
    from agentctx.search.service import SearchService
    from agentctx.sessions.session import Session

_DESCRIPTION = (
    "Research a question on the web: a search agent searches, reads the most promising "
    "pages and answers with a confidence and cited sources. Pages it read can be read in "
    "full with read_offloaded(page id) on the search session it names."
)
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {
            "type": "string",
            "description": "The question to research, self-contained (names, places, dates).",
        }
    },
    "required": ["question"],
    "additionalProperties": False,
}


class ResearchArgs(BaseModel):
    """The arguments of a ``web_research`` call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: StrictStr = Field(min_length=1, max_length=2000)


def search_tool_definition(format: Literal["openai", "anthropic"] = "openai") -> dict[str, Any]:
    """The ``web_research`` tool definition in OpenAI's or Anthropic's format."""
    return tool_definition(TOOL_NAME, _DESCRIPTION, _SCHEMA, format)


def report_brief(report: SearchReport) -> dict[str, Any]:
    """What a model sees of a report: no page text, only quotes and pointers."""
    return {
        "answer": report.answer,
        "confidence": round(report.confidence, 3),
        "iterations": report.iterations,
        "method": report.method,
        "stopped": report.stopped,
        "sub_session_id": report.sub_session_id,
        "sources": [
            {
                "n": source.n,
                "url": source.url,
                "title": source.title,
                "published_date": source.published_date,
                "evidence": list(source.evidence[:1]),
                "page_id": source.page_id,
            }
            for source in report.sources
        ],
        "errors": dict(report.errors),
    }


def handle_search_tool(
    service: SearchService,
    session: Session,
    arguments: dict[str, Any] | str,
    *,
    call_id: str | None = None,
) -> dict[str, Any]:
    """Run a model's ``web_research`` call for ``session``.

    ``call_id``: the id of the call as already recorded in the session (the model's
    ``tool_call``); without it the call is recorded first. ``InvalidInput`` for bad
    arguments. The report is recorded as the call's result and returned in brief.
    """
    args = parse_tool_arguments(TOOL_NAME, arguments, ResearchArgs)
    return report_brief(service.research(session, args.question, call_id=call_id))
