"""Memories as a window shows them: the items of its memory section."""

from __future__ import annotations

from agentctx.context.sources import MemoryItem
from agentctx.memory.models import Memory


def memory_item(memory: Memory) -> MemoryItem:
    """A memory as the window's memory section shows it, citing where it came from."""
    cited = ", ".join(
        f"{source.session_id[-8:]}#{source.seq}"
        if source.seq is not None
        else source.session_id[-8:]
        for source in memory.sources[:3]
    )
    more = f" +{len(memory.sources) - 3}" if len(memory.sources) > 3 else ""
    return MemoryItem(
        memory_id=memory.memory_id,
        text=memory.content,
        kind=memory.kind.value,
        updated_at=memory.updated_at,
        confidence=memory.confidence,
        support=memory.support_count,
        provenance=f"{cited}{more}" if cited else "added by API",
    )


__all__ = ["memory_item"]
