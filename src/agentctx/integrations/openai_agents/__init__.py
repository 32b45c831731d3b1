"""The OpenAI Agents SDK integration: ``AgentCtxSession`` (``pip install "agentctx[agents]"``).

Importing this package does not import the SDK; creating a session does, and fails
with the ``pip install`` line when it is missing.
"""

from agentctx.context.gather import RETRACTED_KEY
from agentctx.integrations.openai_agents.items import event_to_item, item_to_draft
from agentctx.integrations.openai_agents.session import AgentCtxSession
from agentctx.integrations.openai_agents.window import window_items
from agentctx.integrations.sessions import EngineLike, SessionLike

__all__ = [
    "RETRACTED_KEY",
    "AgentCtxSession",
    "EngineLike",
    "SessionLike",
    "event_to_item",
    "item_to_draft",
    "window_items",
]
