"""``SearchService``: the search sub-agent as the engine offers it to a session.

Seed 003 section 6, separate histories: the agent works in a session of its own (the
*search session*: same user, agent ``search-agent``, metadata naming the parent session
and call), and only the result is shared. The parent session gets one ``tool_result``
for its ``tool_call``: the report rendered within ``report_max_tokens``, with the search
session's id and the ``out_…`` ids of the pages read, so the parent's window holds the
report and pointers and never page text. A page comes back byte for byte with
``engine.get_session(sub_session_id, user_id).read_offloaded(page_id)``.

Guarantee: the parent's call always gets its result. When the agent itself fails (not a
provider: those failures are recorded and researched around, see
:mod:`agentctx.search.agent`), the error is recorded in the search session, the parent
gets a failed ``tool_result`` naming the search session, and the error is raised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from agentctx.compaction.tool_output.offload import offload, offloaded_id
from agentctx.errors import InvalidInput, SessionNotFound
from agentctx.events import BlobPart, Event, EventType, JsonPart
from agentctx.llm.chat import LLM
from agentctx.search.agent import AGENT_ID, AgentOptions, SearchAgent, page_blob_id
from agentctx.search.models import SearchProvider
from agentctx.search.report import SearchReport
from agentctx.sessions.session import Session

if TYPE_CHECKING:
    from agentctx.engine import ContextEngine

TOOL_NAME = "web_research"
DEFAULT_REPORT_TOKENS = 600


class SearchService:
    """Runs the search agent for sessions of an engine.

    ``provider``: the web search provider (``build_provider(config)``); ``config``: a
    ``SearchConfig`` (or anything with its loop settings: ``confidence_threshold``,
    ``max_iterations``, ``pages_per_iteration``, ``max_results``), None for seed 000's
    defaults; ``llm``: plans and judges when given, else the offline methods do;
    ``report_max_tokens``: the cap of the report the parent session gets.
    Thread-safe: each research works in a session of its own.
    """

    def __init__(
        self,
        engine: ContextEngine,
        provider: SearchProvider,
        config: object | None = None,
        llm: LLM | None = None,
        *,
        report_max_tokens: int = DEFAULT_REPORT_TOKENS,
    ) -> None:
        if report_max_tokens < 50:
            raise InvalidInput(f"report_max_tokens must be at least 50, got {report_max_tokens}")
        self.engine = engine
        self.provider = provider
        self.config = config
        self.llm = llm
        self.report_max_tokens = report_max_tokens
        self.agent = SearchAgent(
            provider, options=AgentOptions.from_config(config), llm=llm, page_pointer=self._pointer
        )

    def _pointer(self, session: Session, event: Event) -> str:
        """The ``out_…`` id of a recorded page: the blob the size guard wrote for a large
        page, or the page offloaded now (so a small page is restorable the same way)."""
        blob_id = page_blob_id(event)
        if blob_id is not None:
            return offloaded_id(blob_id)
        return offload(
            session,
            event,
            counter=self.engine.token_counter(),
            config=self.engine.settings.tool_output,
        ).id

    def research(
        self, session: Session, question: str, *, call_id: str | None = None
    ) -> SearchReport:
        """Research ``question`` for ``session`` and record the report as the result of
        its tool call ``call_id`` (a ``web_research`` tool call is recorded first when
        ``call_id`` is None). Returns the full report."""
        question = " ".join(question.split())
        if not question:
            raise InvalidInput("the research question is empty")
        if call_id is None:
            call_id = session.add_tool_call(TOOL_NAME, {"question": question}).call_id
        sub = self.engine.create_session(
            session.user_id,
            AGENT_ID,
            metadata={
                "parent_session_id": session.id,
                "parent_call_id": call_id,
                "question": question[:500],
                "provider": self.provider.name,
            },
        )
        try:
            with sub.turn(author=AGENT_ID):
                report = self.agent.run(sub, question)
        except Exception as exc:
            # The turn recorded the error in the search session; the parent learns of it.
            session.add_tool_result(
                call_id,
                f"[web_research] failed ({type(exc).__name__}: {str(exc)[:300]}); "
                f"search session {sub.id}",
                is_error=True,
                author=AGENT_ID,
                metadata={"sub_session_id": sub.id, "error_type": type(exc).__name__},
            )
            raise
        session.add_tool_result(
            call_id,
            report.render(self.engine.token_counter(), self.report_max_tokens),
            author=AGENT_ID,
            metadata={
                "sub_session_id": sub.id,
                "confidence": report.confidence,
                "method": report.method,
                "page_ids": report.page_ids,
            },
        )
        return report

    def report(self, user_id: str, sub_session_id: str) -> SearchReport:
        """The full report of a finished research (its search session's ``final`` event).

        ``SessionNotFound`` for a session of another user, one that is not a search
        session, or a research that never finished.
        """
        sub = self.engine.get_session(sub_session_id, user_id=user_id)
        if sub.agent_id != AGENT_ID:
            raise SessionNotFound(f"{sub_session_id} is not a search session")
        finals = sub.events(types=[EventType.FINAL], last=1)
        if not finals:
            raise SessionNotFound(f"search session {sub_session_id} has no report")
        data = _json_of(self.engine, user_id, finals[-1])
        return SearchReport.model_validate(data)

    def read_page(self, user_id: str, sub_session_id: str, page_id: str) -> str:
        """The text of a page read in a research, by its ``out_…`` id."""
        return self.engine.get_session(sub_session_id, user_id=user_id).read_offloaded(page_id)


def _json_of(engine: ContextEngine, user_id: str, event: Event) -> Any:
    """The JSON part of an event, read back from the blob store if it was offloaded."""
    for part in event.parts:
        if isinstance(part, JsonPart):
            return part.data
        if isinstance(part, BlobPart) and part.original_kind == "json":
            return orjson.loads(engine.get_blob(part.blob_id, user_id))
    raise SessionNotFound(f"event {event.event_id} holds no report")
