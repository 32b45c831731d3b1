"""``AgentCtxChatMessageHistory``: LangChain messages in and out of an agentctx session,
on SQLite and PostgreSQL; and the integration's missing-extra error."""

from __future__ import annotations

import base64
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from agentctx import ContextEngine, EventType, MissingExtra
from agentctx.events import BlobPart
from agentctx.integrations.langgraph import AgentCtxChatMessageHistory, WindowSettings
from conftest import make_png
from integrations.scripted_chat_model import scripted


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        yield engine


def conversation() -> list[BaseMessage]:
    png = base64.b64encode(make_png(seed=7)).decode()
    return [
        SystemMessage("Be brief.", id="s1"),
        HumanMessage(
            [
                {"type": "text", "text": "What is on this screen?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
            ],
            id="h1",
        ),
        AIMessage(
            "Let me zoom in.",
            id="a1",
            tool_calls=[
                {"id": "call_1", "name": "zoom", "args": {"x": 10, "y": 20}},
                {"id": "call_2", "name": "read", "args": {}},
            ],
        ),
        ToolMessage("zoomed", tool_call_id="call_1", name="zoom", id="t1"),
        ToolMessage("unreadable", tool_call_id="call_2", status="error", id="t2"),
        AIMessage("", id="a2", tool_calls=[{"id": "call_3", "name": "zoom", "args": {"x": 1}}]),
        ToolMessage("closer", tool_call_id="call_3", id="t3"),
        AIMessage("A chart.", id="a3", name="helper"),
        ChatMessage("A note from the reviewer.", role="reviewer", id="n1"),
    ]


def test_messages_come_back_as_they_were_added(eng: ContextEngine) -> None:
    history = AgentCtxChatMessageHistory(eng, session_id="chat", user_id="u1")
    messages = conversation()
    history.add_messages(messages)
    assert history.messages == messages
    # Another handle (another process) reads the same history.
    assert AgentCtxChatMessageHistory(eng, session_id="chat", user_id="u1").messages == messages

    events = eng.get_session("chat", user_id="u1").events()
    assert [e.type for e in events] == [
        EventType.SYSTEM,
        EventType.USER_INPUT,
        EventType.AGENT_RESPONSE,
        EventType.TOOL_CALL,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.TOOL_RESULT,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.AGENT_RESPONSE,
        EventType.NOTE,
    ]
    calls = ["call_1", "call_2", "call_1", "call_2", "call_3", "call_3"]
    assert [e.call_id for e in events[3:9]] == calls
    assert events[6].meta.status == "error"
    # Content lives in parts once: the screenshot as an image, text searchable.
    assert eng.restore_image(events[1].images[0].image_id, user_id="u1") == make_png(seed=7)
    assert "base64" not in json.dumps(events[1].payload)
    assert events[2].text == "Let me zoom in."
    assert len({e.turn_id for e in events}) == 1  # one batch, one turn


def test_content_past_the_inline_limit_comes_back_whole(eng: ContextEngine) -> None:
    big = "row " * (eng.settings.max_inline_bytes // 2)
    messages = [
        AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "dump", "args": {}}]),
        ToolMessage(big, tool_call_id="c1", id="t1", artifact={"rows": big}),
    ]
    history = AgentCtxChatMessageHistory(eng, session_id="big", user_id="u1")
    history.add_messages(messages)
    stored = eng.get_session("big", user_id="u1").events()
    assert any(isinstance(p, BlobPart) for p in stored[1].parts)  # offloaded
    assert history.messages == messages


def test_a_message_with_an_id_is_recorded_once(eng: ContextEngine) -> None:
    history = AgentCtxChatMessageHistory(eng, session_id="once", user_id="u1")
    history.add_messages([HumanMessage("hi", id="m1")])
    history.add_messages([HumanMessage("hi", id="m1"), AIMessage("hello", id="m2")])
    history.add_user_message("hi")  # no id: a new message each time
    history.add_user_message("hi")
    assert [m.text for m in history.messages] == ["hi", "hello", "hi", "hi"]


def test_clear_and_redaction(eng: ContextEngine) -> None:
    history = AgentCtxChatMessageHistory(eng, session_id="pii", user_id="u1")
    history.add_user_message("Mail me at ann@example.com")
    stored = eng.get_session("pii", user_id="u1").events()[0]
    assert "ann@example.com" not in json.dumps(stored.model_dump(mode="json"))
    (back,) = history.messages
    assert isinstance(back, HumanMessage) and back.text.startswith("Mail me at ")
    assert "ann@example.com" not in back.text
    history.clear()
    assert history.messages == []
    assert eng.get_session("pii", user_id="u1").events() == []


def test_with_a_budget_the_history_is_the_window(eng: ContextEngine) -> None:
    full = AgentCtxChatMessageHistory(eng, session_id="long", user_id="u1")
    for i in range(30):
        full.add_messages(
            [HumanMessage(f"Question {i}: " + "word " * 60), AIMessage(f"Answer {i}")]
        )
    settings = WindowSettings(budget=800)
    window = AgentCtxChatMessageHistory(eng, session_id="long", user_id="u1", window=settings)
    shown = window.messages
    assert len(full.messages) == 60 and 0 < len(shown) < 60
    assert shown[-1] == AIMessage("Answer 29")
    assert eng.get_session("long", user_id="u1").build_context(None, 800).tokens <= 800


# RunnableWithMessageHistory is deprecated for LangGraph's persistence; chains still use it.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_chain_keeps_its_history_in_agentctx(eng: ContextEngine) -> None:
    model = scripted("Hello Ann.", "You are Ann.")
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    chain = RunnableWithMessageHistory(
        prompt | model,
        lambda session_id: AgentCtxChatMessageHistory(eng, session_id=session_id, user_id="u1"),
        input_messages_key="question",
        history_messages_key="history",
    )
    config: Any = {"configurable": {"session_id": "chain"}}
    chain.invoke({"question": "I am Ann."}, config)
    chain.invoke({"question": "Who am I?"}, config)
    assert [m.text for m in model.sent[1]] == ["I am Ann.", "Hello Ann.", "Who am I?"]
    texts = [e.text for e in eng.get_session("chain", user_id="u1").events()]
    assert texts == ["I am Ann.", "Hello Ann.", "Who am I?", "You are Ann."]


def test_without_langgraph_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name.startswith("agentctx.integrations.langgraph"):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "langgraph.store.base", None)
    with pytest.raises(MissingExtra, match=r"pip install 'agentctx\[langgraph\]'"):
        importlib.import_module("agentctx.integrations.langgraph")
