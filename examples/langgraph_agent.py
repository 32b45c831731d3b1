"""A LangGraph agent whose context and memory live in agentctx. Runs offline.

    pip install "agentctx[langgraph]"
    python examples/langgraph_agent.py [--home DIR]

The prebuilt ReAct agent gets three agentctx parts:

* ``pre_model_hook``: before each model call, the new messages are recorded in the
  agentctx session of the thread, and the model is sent agentctx's context window
  (recent turns as chat, older ones compacted, old tool results found again when the
  request needs them) instead of the whole message list;
* ``AgentCtxStore``: the graph's store; the ``remember`` tool writes the user's
  long-term memories through it;
* the checkpointer is LangGraph's own: the graph state still keeps every message.

The model is a script (no API key, no network): it calls the tools a real model would
and prints nothing of its own. Swap in ``ChatOpenAI(...)`` for a real one.
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config, get_store
from langgraph.prebuilt import create_react_agent

from agentctx import ContextEngine
from agentctx.integrations.langgraph import AgentCtxStore, pre_model_hook


class ScriptedModel(GenericFakeChatModel):
    """Answers from a script; binds tools as a real chat model does."""

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[Any, AIMessage]:
        return self


def calls(name: str, **args: Any) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"id": f"call_{uuid.uuid4().hex[:8]}", "name": name, "args": args}]
    )


@tool
def lookup_order(order: str) -> str:
    """Look up an order's shipping status."""
    if order == "A1":
        return "order A1: shipped to Porto on 3 March, tracking number ZX4471"
    return f"order {order}: " + ", ".join(f"item {i} of {order} packed" for i in range(40))


@tool
def remember(fact: str) -> str:
    """Keep a fact about the user for later conversations."""
    user = get_config()["configurable"]["user_id"]
    get_store().put(("memories", user), uuid.uuid4().hex, {"content": fact})
    return f"remembered: {fact}"


def script() -> list[AIMessage | str]:
    replies: list[AIMessage | str] = [
        calls("remember", fact="User ships orders to Porto"),
        calls("lookup_order", order="A1"),
        "Order A1 shipped on 3 March.",
    ]
    for i in range(2, 8):
        replies += [calls("lookup_order", order=f"B{i}"), f"Order B{i} is packed."]
    replies.append("Order A1's tracking number is ZX4471.")
    return replies


def main(home: Path) -> None:
    with ContextEngine(url=f"sqlite:///{home / 'agentctx.db'}", home=home) as engine:
        hook = pre_model_hook(engine, budget=1200)
        with warnings.catch_warnings():  # create_react_agent is deprecated in LangGraph 1.x
            warnings.simplefilter("ignore")
            agent = create_react_agent(
                ScriptedModel(messages=iter(script())),
                [lookup_order, remember],
                pre_model_hook=hook,
                store=AgentCtxStore(engine),
                checkpointer=InMemorySaver(),
            )
        config: Any = {"configurable": {"user_id": "ann", "thread_id": "orders-1"}}
        requests = ["I ship to Porto. Where is order A1?"]
        requests += [f"And order B{i}?" for i in range(2, 8)]
        requests.append("What was the tracking number of order A1 again?")
        state: dict[str, Any] = {}
        for request in requests:
            state = agent.invoke({"messages": [("user", request)]}, config)
        hook.record(state["messages"], config)  # the last answer, too

        window = hook.last_window
        assert window is not None
        session = engine.get_session("orders-1", user_id="ann")
        print(f"graph state: {len(state['messages'])} messages")
        print(f"agentctx session: {len(session.events())} events")
        print(f"last window: {window.tokens} tokens of a 1200 budget")
        retrieved = [
            str(m.get("content"))
            for m in window.messages
            if str(m.get("content")).startswith("Earlier in this conversation")
        ]
        print("retrieved for the last request:", "ZX4471" in "".join(retrieved))
        print("answer:", state["messages"][-1].text)
        memories = engine.memory.list("ann")
        print("memories of ann:", [m.content for m in memories])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="agentctx home (default: a new temp dir)")
    args = parser.parse_args()
    main(args.home or Path(tempfile.mkdtemp(prefix="agentctx-langgraph-")))
