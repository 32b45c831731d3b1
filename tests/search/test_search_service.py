"""``SearchService`` and the ``web_research`` tool: reports kept and read back, the parent's
call always answered, user isolation, concurrent research."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.errors import BlobNotFound, InvalidInput, SessionNotFound
from agentctx.events import Event, EventType
from agentctx.search.providers.tavily import TavilyProvider
from agentctx.search.service import TOOL_NAME, SearchService
from agentctx.search.tool import handle_search_tool, search_tool_definition
from agentctx.sessions.session import Session
from search.agent_web import GOOD, QUESTION, local_web, make_engine, tavily_config
from search.servers import tavily_server


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with make_engine(db_url, home) as engine:
        yield engine


@pytest.fixture
def service(eng: ContextEngine) -> Iterator[SearchService]:
    with local_web([GOOD, GOOD]) as web, tavily_server(pages=web.corpus) as srv:
        config = tavily_config(srv.url, srv.api_key or "")
        yield SearchService(eng, TavilyProvider(config), config)


def test_tool_definitions_in_both_formats() -> None:
    openai = search_tool_definition("openai")
    assert openai["type"] == "function" and openai["function"]["name"] == TOOL_NAME
    assert openai["function"]["parameters"]["required"] == ["question"]
    anthropic = search_tool_definition("anthropic")
    assert anthropic["name"] == TOOL_NAME and "question" in anthropic["input_schema"]["properties"]
    with pytest.raises(InvalidInput):
        search_tool_definition("gemini")  # type: ignore[arg-type]


def test_a_model_tool_call_is_answered_in_the_same_call(
    eng: ContextEngine, service: SearchService
) -> None:
    parent = eng.create_session("u1", "helper")
    with parent.turn() as turn:
        turn.add_message("user", QUESTION)
        call = turn.add_tool_call(TOOL_NAME, {"question": QUESTION})
        brief = handle_search_tool(
            service, parent, json.dumps({"question": QUESTION}), call_id=call.call_id
        )
    assert brief["confidence"] >= 0.8 and "1994" in brief["answer"]
    assert all("PAGE_ONLY_MARKER" not in str(s) for s in brief["sources"])
    events = parent.events()
    assert [e.type for e in events] == [
        EventType.USER_INPUT,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
    ]
    assert events[2].call_id == call.call_id and events[2].turn_id == events[1].turn_id
    report = service.report("u1", brief["sub_session_id"])
    assert report.answer == brief["answer"]
    page_id = brief["sources"][0]["page_id"]
    assert "Skerryvore" in service.read_page("u1", brief["sub_session_id"], page_id)

    with pytest.raises(InvalidInput, match="question"):
        handle_search_tool(service, parent, {"question": ""})
    with pytest.raises(InvalidInput):
        handle_search_tool(service, parent, {"query": QUESTION})
    assert len(parent.events()) == 3  # refused calls record nothing


def test_reports_and_pages_are_the_users_own(eng: ContextEngine, service: SearchService) -> None:
    report = service.research(eng.create_session("u1", "helper"), QUESTION)
    with pytest.raises(SessionNotFound):
        service.report("u2", report.sub_session_id)
    with pytest.raises(SessionNotFound):
        service.read_page("u2", report.sub_session_id, report.page_ids[0])
    other = eng.create_session("u1", "helper")
    with pytest.raises(SessionNotFound):
        service.report("u1", other.id)  # not a search session
    # A page id only opens in the search session that read it.
    with pytest.raises(BlobNotFound):
        other.read_offloaded(report.page_ids[0])


class _CrashingService(SearchService):
    """Crashes halfway: after the first page was recorded."""

    def _pointer(self, session: Session, event: Event) -> str:
        raise RuntimeError("disk on fire")


def test_when_the_agent_crashes_the_parent_still_gets_its_result(eng: ContextEngine) -> None:
    with local_web([GOOD]) as web, tavily_server(pages=web.corpus) as srv:
        config = tavily_config(srv.url, srv.api_key or "")
        crashing = _CrashingService(eng, TavilyProvider(config), config)
        parent = eng.create_session("u1", "helper")
        with pytest.raises(RuntimeError, match="disk on fire"):
            crashing.research(parent, QUESTION)

    call, result = parent.events()
    assert call.type is EventType.TOOL_CALL and result.type is EventType.TOOL_RESULT
    assert result.call_id == call.call_id and result.payload["is_error"] is True
    sub_id = result.meta.extra["sub_session_id"]
    sub = eng.get_session(sub_id, "u1")
    assert sub.info.meta["parent_call_id"] == call.call_id
    # What the agent did before the crash is kept, and the crash is recorded.
    assert sub.events(types=[EventType.TOOL_RESULT])
    errors = sub.events(types=[EventType.ERROR])
    assert errors and "disk on fire" in errors[-1].payload["message"]
    assert sub.turns()[-1].status != "open"
    with pytest.raises(SessionNotFound):
        crashing.report("u1", sub_id)  # no report was finished


def test_concurrent_research_for_one_parent_keeps_results_apart(
    eng: ContextEngine, service: SearchService
) -> None:
    parent = eng.create_session("u1", "helper")
    questions = [QUESTION, "Who automated the Skerryvore lighthouse in 1994?"]
    reports: dict[str, str] = {}
    failures: list[BaseException] = []

    def run(question: str) -> None:
        try:
            reports[question] = service.research(parent, question).sub_session_id
        except BaseException as exc:  # surfaced below
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(q,)) for q in questions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures
    assert len(set(reports.values())) == 2
    calls = {e.call_id: e for e in parent.events(types=[EventType.TOOL_CALL])}
    results = parent.events(types=[EventType.TOOL_RESULT])
    assert len(calls) == len(results) == 2
    for result in results:
        sub = eng.get_session(result.meta.extra["sub_session_id"], "u1")
        assert sub.info.meta["parent_call_id"] == result.call_id
        question = calls[result.call_id].parts[0].data["question"]  # type: ignore[union-attr]
        assert reports[question] == sub.id
    assert parent.verify().ok
