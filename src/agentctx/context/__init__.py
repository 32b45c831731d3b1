"""Context assembly: the window an agent sends to its model before every call.

``session.build_context(query, budget)`` is the entry point; :class:`ContextBuilder`
does the work, :class:`ContextConfig` shapes it, :class:`ContextWindow` is the result.
"""

from typing import TYPE_CHECKING, Any

from agentctx.context.config import (
    PRESETS,
    STRATEGIES,
    ContextConfig,
    ContextPreset,
    parse_context_config,
    preset_for,
)
from agentctx.context.sources import (
    MemoryItem,
    MemorySource,
    Retrieval,
    RetrievedHit,
    Retriever,
    SummaryItem,
    SummarySource,
)
from agentctx.context.task import ActiveTask
from agentctx.context.window import ContextReport, ContextWindow, DroppedEvent, SectionReport

if TYPE_CHECKING:
    from agentctx.context.builder import ContextBuilder


def __getattr__(name: str) -> Any:
    # The builder pulls in rendering and token counting; configuration alone does not.
    if name == "ContextBuilder":
        from agentctx.context.builder import ContextBuilder  # noqa: PLC0415

        return ContextBuilder
    raise AttributeError(f"module 'agentctx.context' has no attribute {name!r}")


__all__ = [
    "PRESETS",
    "STRATEGIES",
    "ActiveTask",
    "ContextBuilder",
    "ContextConfig",
    "ContextPreset",
    "ContextReport",
    "ContextWindow",
    "DroppedEvent",
    "MemoryItem",
    "MemorySource",
    "Retrieval",
    "RetrievedHit",
    "Retriever",
    "SectionReport",
    "SummaryItem",
    "SummarySource",
    "parse_context_config",
    "preset_for",
]
