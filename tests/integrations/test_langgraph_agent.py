"""The ``pre_model_hook``: a prebuilt LangGraph agent records its conversation in agentctx
and its model is sent agentctx's window. The model answers from a script; the graph,
its tool node, checkpointer and message reducer are LangGraph's own."""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import create_react_agent

from agentctx import ContextEngine, EventType
from agentctx.errors import InvalidInput
from agentctx.integrations.langgraph import (
    AgentCtxChatMessageHistory,
    paired,
    pre_model_hook,
)
from integrations.scripted_chat_model import ScriptedChatModel, call, scripted

TRACKING = "ZX4471"
FILLER_TURNS = 9
BUDGET = 1500


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        yield engine


@tool
def lookup(order: str) -> str:
    """Look up an order."""
    if order == "A1":
        return f"order A1: shipped to Porto, tracking number {TRACKING}"
    return f"order {order}: " + " ".join(f"line {i} of the {order} invoice" for i in range(60))


def agent(
    model: ScriptedChatModel, hook: Callable[..., Any], **kwargs: Any
) -> CompiledStateGraph[Any]:
    # create_react_agent is deprecated in LangGraph 1.x for langchain's create_agent,
    # which has no pre_model_hook; it is still LangGraph's prebuilt agent.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, [lookup], pre_model_hook=hook, **kwargs)


CONFIG: Any = {"configurable": {"user_id": "u1", "thread_id": "orders"}}


def test_the_model_gets_the_window_and_each_message_is_recorded_once(
    eng: ContextEngine,
) -> None:
    script: list[AIMessage | str] = [call("c0", "lookup", order="A1"), "Order A1 shipped."]
    for i in range(1, FILLER_TURNS + 1):
        script += [call(f"c{i}", "lookup", order=f"B{i}"), f"Invoice B{i} has 60 lines."]
    script.append(f"The tracking number is {TRACKING}.")
    model = scripted(*script)
    hook = pre_model_hook(eng, budget=BUDGET)
    windows: list[int] = []

    def measured(state: Any, config: RunnableConfig) -> dict[str, Any]:
        update = hook(state, config)
        assert hook.last_window is not None
        windows.append(hook.last_window.tokens)
        return update

    graph = agent(model, measured, checkpointer=InMemorySaver())

    requests = ["Where is order A1?"]
    requests += [f"Show the invoice B{i}" for i in range(1, FILLER_TURNS + 1)]
    requests.append("What was the tracking number of order A1?")
    for request in requests:
        state = graph.invoke({"messages": [("user", request)]}, CONFIG)
    # Every model call: a window within the budget, every tool call answered.
    assert len(windows) == len(model.sent) == len(script)
    assert all(0 < tokens <= BUDGET for tokens in windows)
    assert all(sent == paired(sent) for sent in model.sent)
    assert model.tools == ["lookup"]

    # The last model call: the window, within the budget; the newest turns as chat,
    # the old lookup found again by agentctx (it left the history long ago).
    window = hook.last_window
    assert window is not None and window.tokens <= BUDGET
    sent = model.sent[-1]
    assert isinstance(sent[-2], HumanMessage)
    assert sent[-2].text == "What was the tracking number of order A1?"
    texts = [str(m.content) for m in sent]
    assert any(TRACKING in t and t.startswith("Earlier in this conversation") for t in texts)
    assert not any(isinstance(m, ToolMessage) and TRACKING in m.text for m in sent)
    assert not any(t == "Show the invoice B1" for t in texts)  # compacted away
    # The model's earlier inputs were windows too: the second call of the first turn.
    first = model.sent[1]
    assert [type(m) for m in first] == [HumanMessage, AIMessage, ToolMessage]
    assert first[2].tool_call_id == "c0" and TRACKING in first[2].text

    # Each message once: the hook saw the whole list at every step.
    hook.record(state["messages"], CONFIG)  # the final answer (no model call after it)
    handle = eng.get_session("orders", user_id="u1")
    events = handle.events()
    counts = Counter(e.type for e in events)
    messages = state["messages"]
    assert counts[EventType.USER_INPUT] == sum(isinstance(m, HumanMessage) for m in messages)
    assert counts[EventType.TOOL_RESULT] == sum(isinstance(m, ToolMessage) for m in messages)
    assert counts[EventType.TOOL_CALL] == sum(
        len(m.tool_calls) for m in messages if isinstance(m, AIMessage)
    )
    answers = [m for m in messages if isinstance(m, AIMessage) and m.text]
    assert counts[EventType.AGENT_RESPONSE] == len(answers)
    assert len(events) == sum(counts.values()) == len({e.idempotency_key for e in events})
    assert [e.call_id for e in events if e.type is EventType.TOOL_RESULT] == [
        f"c{i}" for i in range(FILLER_TURNS + 1)
    ]
    assert handle.verify().ok
    # The log gives the conversation back exactly, as a chat history reads it.
    history = AgentCtxChatMessageHistory(eng, session_id="orders", user_id="u1")
    assert history.messages == messages

    # A hook that does not know where it stopped (another process) writes nothing new.
    again = pre_model_hook(eng, user_id="u1", session_id="orders")
    again.record(messages)
    assert len(handle.events()) == len(events)


def test_each_request_is_a_turn_of_its_own(eng: ContextEngine) -> None:
    model = scripted(call("c1", "lookup", order="A1"), "Shipped.", "You are welcome.")
    hook = pre_model_hook(eng, user_id="u1", session_id="turns")
    graph = agent(model, hook)
    state = graph.invoke({"messages": [("user", "Where is order A1?")]})
    graph.invoke({"messages": [*state["messages"], ("user", "Thanks")]})
    events = eng.get_session("turns", user_id="u1").events()
    kinds = [e.type for e in events]
    assert kinds == [
        EventType.USER_INPUT,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.AGENT_RESPONSE,
        EventType.USER_INPUT,
    ]
    # The request; its tool step; the answer (seen at the next request); the next one.
    turns = [e.turn_id for e in events]
    assert turns[1] == turns[2] and len(set(turns)) == 4


def test_the_window_pairs_what_a_chat_model_needs_paired() -> None:
    asked = AIMessage(
        "",
        tool_calls=[
            {"id": "a", "name": "f", "args": {}},
            {"id": "b", "name": "f", "args": {}},
        ],
    )
    messages = [
        ToolMessage("orphan", tool_call_id="z"),
        HumanMessage("hi"),
        asked,
        ToolMessage("for a", tool_call_id="a"),
        AIMessage("", tool_calls=[{"id": "c", "name": "f", "args": {}}]),
        HumanMessage("bye"),
    ]
    out = paired(messages)
    assert [type(m) for m in out] == [HumanMessage, AIMessage, ToolMessage, HumanMessage]
    assert isinstance(out[1], AIMessage) and [c["id"] for c in out[1].tool_calls] == ["a"]


def test_a_run_must_name_its_user_and_session(eng: ContextEngine) -> None:
    hook = pre_model_hook(eng)
    with pytest.raises(InvalidInput, match="user"):
        hook({"messages": [HumanMessage("hi", id="m1")]}, {"configurable": {"thread_id": "t"}})
    with pytest.raises(InvalidInput, match="session"):
        hook({"messages": [HumanMessage("hi", id="m1")]}, {"configurable": {"user_id": "u1"}})
