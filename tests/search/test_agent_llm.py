"""The search agent with a model: planning and judging through a local OpenAI-compatible
server, and the offline fallback when the model fails."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.events import EventType
from agentctx.llm import OpenAIChatLLM
from agentctx.search.providers.tavily import TavilyProvider
from agentctx.search.service import SearchService
from llm.openai_chat_server import Reply, start_chat_server
from search.agent_web import GOOD, IRRELEVANT, QUESTION, local_web, make_engine, tavily_config
from search.servers import tavily_server


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with make_engine(db_url, home) as engine:
        yield engine


def _llm(url: str) -> OpenAIChatLLM:
    return OpenAIChatLLM("test-model", base_url=url, api_key="sk-test", max_retries=0, timeout=5)


def _user_prompt(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return str(messages[-1]["content"])


def test_the_model_plans_and_judges(eng: ContextEngine) -> None:
    with (
        local_web([GOOD, GOOD]) as web,
        tavily_server(pages=web.corpus) as srv,
        start_chat_server() as chat,
    ):
        chat.script(
            Reply.json({"queries": ["Skerryvore lighthouse automated year"]}),
            Reply.json(
                {
                    "answer": "It was automated in 1994 [1].",
                    "confidence": 0.4,
                    "citations": [1],
                    "next_queries": ["Skerryvore automation Northern Lighthouse Board"],
                }
            ),
            Reply.fenced(
                {
                    "answer": "Skerryvore was automated in 1994 [1][2].",
                    "confidence": 0.93,
                    "citations": [1, 2, 99],
                }
            ),
        )
        provider = TavilyProvider(tavily_config(srv.url, srv.api_key or ""))
        service = SearchService(eng, provider, provider.config, llm=_llm(chat.url))
        parent = eng.create_session("u1", "helper")
        report = service.research(parent, QUESTION)
        searched = [r.json["query"] for r in srv.requests if r.path == "/search"]
        judge_prompt = _user_prompt(chat.requests[1])

    assert report.method == "llm" and report.llm_failures == 0
    assert report.iterations == 2 and report.stopped == "confident"
    assert report.confidence == pytest.approx(0.93)
    assert report.answer == "Skerryvore was automated in 1994 [1][2]."
    # The model's queries were searched: its plan first, then its next query.
    assert searched == [
        "Skerryvore lighthouse automated year",
        "Skerryvore automation Northern Lighthouse Board",
    ]
    # The judge saw numbered sources with the pages' evidence, not the whole pages.
    assert "[1]" in judge_prompt and "automated in 1994" in judge_prompt
    assert "PAGE_ONLY_MARKER" not in judge_prompt
    cited = {s.n for s in report.sources}
    assert {1, 2} <= cited and 99 not in cited
    sub = eng.get_session(report.sub_session_id, "u1")
    reflections = sub.events(types=[EventType.REFLECTION])
    assert [r.parts[1].data["method"] for r in reflections] == ["llm", "llm"]  # type: ignore[union-attr]
    assert [r.parts[1].data["confidence"] for r in reflections] == [0.4, 0.93]  # type: ignore[union-attr]
    planners = sub.events(types=[EventType.PLANNER])
    assert [p.parts[1].data["method"] for p in planners] == ["llm", "llm"]  # type: ignore[union-attr]
    assert not sub.events(types=[EventType.ERROR])


def test_a_time_sensitive_plan_dates_the_query(eng: ContextEngine) -> None:
    with (
        local_web([GOOD, GOOD]) as web,
        tavily_server(pages=web.corpus) as srv,
        start_chat_server() as chat,
    ):
        chat.script(
            Reply.json({"queries": ["Skerryvore lighthouse status"], "time_sensitive": True}),
            Reply.json({"answer": "Automated since 1994 [1].", "confidence": 0.9}),
        )
        config = tavily_config(srv.url, srv.api_key or "")
        service = SearchService(eng, TavilyProvider(config), config, llm=_llm(chat.url))
        service.research(eng.create_session("u1", "helper"), QUESTION)
        sent = next(r.json for r in srv.requests if r.path == "/search")
    assert sent["query"].startswith("Skerryvore lighthouse status 20")
    assert sent["topic"] == "news"


def test_a_failing_model_falls_back_offline_and_is_recorded(eng: ContextEngine) -> None:
    with (
        local_web([GOOD, GOOD]) as web,
        tavily_server(pages=web.corpus) as srv,
        start_chat_server() as chat,
    ):
        chat.script(Reply.server_error(), Reply.text("not json at all"), Reply.text("still not"))
        config = tavily_config(srv.url, srv.api_key or "")
        service = SearchService(eng, TavilyProvider(config), config, llm=_llm(chat.url))
        report = service.research(eng.create_session("u1", "helper"), QUESTION)

    assert report.method == "offline" and report.llm_failures == 2
    assert report.stopped == "confident" and "1994" in report.answer
    sub = eng.get_session(report.sub_session_id, "u1")
    errors = sub.events(types=[EventType.ERROR])
    assert [(e.payload["job"], e.payload["error_code"]) for e in errors] == [
        ("plan", "llm_unavailable"),
        ("judge", "llm_response_invalid"),
    ]


def test_the_model_cannot_be_confident_about_nothing(eng: ContextEngine) -> None:
    with (
        local_web([IRRELEVANT]) as web,
        tavily_server(pages=web.corpus, results=lambda body: []) as srv,
        start_chat_server() as chat,
    ):
        chat.default = lambda body: Reply.json(
            {"queries": ["anything"]}
            if "plan" in json.dumps(body.get("response_format", {}))
            else {"answer": "1994, surely.", "confidence": 0.99}
        )
        config = tavily_config(srv.url, srv.api_key or "", max_iterations=2)
        service = SearchService(eng, TavilyProvider(config), config, llm=_llm(chat.url))
        report = service.research(eng.create_session("u1", "helper"), QUESTION)
    assert report.confidence == 0.0 and report.iterations == 2
    assert report.stopped == "max_iterations" and not report.sources
