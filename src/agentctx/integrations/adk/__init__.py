"""The Google ADK integration (``pip install "agentctx[adk]"``).

* :class:`AgentCtxSessionService`: ADK sessions (events, state with its ``app:`` /
  ``user:`` / ``temp:`` scopes) kept in agentctx;
* :class:`AgentCtxMemoryService`: ADK's memory service over agentctx long-term memory;
* :func:`agentctx_window` (a ``before_model_callback``) and :class:`AgentCtxPlugin` (a
  runner plugin): the model input is the agentctx context window.

Importing this package without ``google-adk`` raises ``MissingExtra`` with the
``pip install`` line.
"""

from agentctx.errors import MissingExtra

try:
    import google.adk  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised by a test that hides the package
    raise MissingExtra("adk", "google-adk") from exc

from agentctx.integrations.adk.events import event_to_drafts, restore_event
from agentctx.integrations.adk.memory_service import AgentCtxMemoryService
from agentctx.integrations.adk.session_service import AgentCtxSessionService
from agentctx.integrations.adk.window import (
    AgentCtxPlugin,
    WindowCallback,
    agentctx_window,
    apply_window,
    window_contents,
)

__all__ = [
    "AgentCtxMemoryService",
    "AgentCtxPlugin",
    "AgentCtxSessionService",
    "WindowCallback",
    "agentctx_window",
    "apply_window",
    "event_to_drafts",
    "restore_event",
    "window_contents",
]
