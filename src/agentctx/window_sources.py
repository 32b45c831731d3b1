"""What an engine's window builder reads through: the session service's events (one
head per build), the blob store's images and tool outputs, at the engine's settings."""

from __future__ import annotations

from collections.abc import Callable

from agentctx.cache.events import Head, pinned_loader
from agentctx.compaction.tool_output.compressor import ToolOutputConfig
from agentctx.context.sources import EventLoader, LogHead
from agentctx.events import Event, ImagePart
from agentctx.sessions.service import SessionService
from agentctx.storage.blobs import BlobStore
from agentctx.tokens import TokenCounter


class WindowSources:
    """The reads behind one engine's windows (``ContextBuilder``'s sources)."""

    def __init__(
        self, service: SessionService, blobs: BlobStore, tool_output: ToolOutputConfig
    ) -> None:
        self._service = service
        self._blobs = blobs
        self._tool_output = tool_output

    def open_log(self, user_id: str, session_id: str, head: LogHead) -> EventLoader:
        """One build's reads: the hot cache's built events (the builder never changes
        one), up to the head the build began with (read with the session's row when
        ``head`` has its ``created_at``, else once, at the first read)."""
        known = Head(head.last_seq, head.created_at) if head.created_at is not None else None
        return pinned_loader(self._service.events, user_id, session_id, known)

    def image_bytes(self, user_id: str, part: ImagePart) -> bytes:
        """An image's bytes, if an event of the user references it."""
        return self._service.blob_reads.get_blob(user_id, part.blob_id)

    def tool_output_text(
        self, user_id: str, session_id: str
    ) -> Callable[[Event, TokenCounter], str]:
        """How one build shows tool results: compressed, or previewed and offloaded."""
        from agentctx.compaction.tool_output.offload import (  # noqa: PLC0415 - imports sessions
            window_tool_text,
        )

        # The build has read the session already: its ids and the blob store are all
        # the renderer needs, so it reads no session row of its own.
        config, blobs = self._tool_output, self._blobs
        return lambda event, counter: window_tool_text(
            blobs, user_id, session_id, event, counter=counter, config=config
        )
