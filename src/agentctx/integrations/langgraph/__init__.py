"""The LangGraph / LangChain integration (``pip install "agentctx[langgraph]"``).

* :class:`AgentCtxStore`: a LangGraph ``BaseStore`` over agentctx long-term memory
  (``create_react_agent(..., store=...)``, LangMem's memory tools);
* :func:`pre_model_hook`: a ``pre_model_hook`` for ``create_react_agent`` that records
  the conversation in an agentctx session and gives the model agentctx's window;
* :class:`AgentCtxChatMessageHistory`: a LangChain ``BaseChatMessageHistory`` kept in
  an agentctx session.

Importing this package imports ``langgraph`` and ``langchain_core``; without them it
raises ``MissingExtra`` with the ``pip install`` line.
"""

from agentctx.errors import MissingExtra

try:
    import langchain_core.messages  # noqa: F401
    import langgraph.store.base  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised with the packages hidden
    raise MissingExtra("langgraph", "langgraph") from exc

from agentctx.integrations.langgraph.history import AgentCtxChatMessageHistory
from agentctx.integrations.langgraph.hook import ContextHook, latest_request, pre_model_hook
from agentctx.integrations.langgraph.messages import (
    event_to_message,
    message_to_drafts,
    paired,
    window_messages,
)
from agentctx.integrations.langgraph.store import AgentCtxStore, Namespaces, item_subject
from agentctx.integrations.sessions import WindowSettings

__all__ = [
    "AgentCtxChatMessageHistory",
    "AgentCtxStore",
    "ContextHook",
    "Namespaces",
    "WindowSettings",
    "event_to_message",
    "item_subject",
    "latest_request",
    "message_to_drafts",
    "paired",
    "pre_model_hook",
    "window_messages",
]
