"""An MCP server over agentctx: long-term memory and image restore as tools.

Memory as a tool (seed 003): an MCP client (a desktop assistant, an IDE agent) asks
agentctx for what it knows about the user and tells it what to remember, and gets the
original screenshot behind a ``[Visual_Placeholder: img_…]`` back. Tools:

* ``memory_search(query, limit, kinds)``: the user's memories best matching ``query``;
* ``memory_add(content, kind, subject, keywords, confidence)``: remember something
  (consolidated like an extracted memory: a duplicate merges into the existing one);
* ``restore_image(image_id)``: the image's original bytes, as MCP image content.

One server serves one user, named when it starts (``agentctx mcp --user u1``): the
client cannot reach another user's data. Expected failures (an unknown image, bad
input) are tool errors (``isError``), never a crash of the server. Stdio is the
default transport (the client starts the server as a subprocess)::

    python -m agentctx.integrations.mcp_server --user u1 [--url URL] [--home DIR]

Requires the ``mcp`` package, 2.x (``pip install "agentctx[mcp]"``).
"""

import argparse
import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from PIL import Image as PILImage
from PIL import UnidentifiedImageError

from agentctx.errors import AgentCtxError, MissingExtra
from agentctx.memory.models import MemoryHit, MemoryKind

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from agentctx.engine import ContextEngine

Transport = Literal["stdio", "sse", "streamable-http"]

SERVER_NAME = "agentctx"
INSTRUCTIONS = (
    "agentctx keeps this user's long-term memory and the screenshots of their sessions. "
    "Search memory before asking the user something they may have said before; add a "
    "memory when they state a lasting fact or preference; restore an image when a "
    "context shows [Visual_Placeholder: img_…] and you need to see it."
)
MAX_LIMIT = 50


def _require_mcp() -> None:
    try:
        import mcp.server.mcpserver  # noqa: F401, PLC0415
    except ImportError as exc:
        raise MissingExtra("mcp", "mcp") from exc


def _hit(hit: MemoryHit) -> dict[str, Any]:
    memory = hit.memory
    return {
        "memory_id": memory.memory_id,
        "kind": memory.kind.value,
        "content": memory.content,
        "subject": memory.subject,
        "confidence": memory.confidence,
        "support_count": memory.support_count,
        "score": round(hit.score, 4),
        "updated_at": memory.updated_at.isoformat(),
    }


def _image_format(data: bytes) -> str:
    """The image's format for its MIME type (``png``, ``jpeg``, …), read from the bytes."""
    try:
        with PILImage.open(io.BytesIO(data)) as image:
            return (image.format or "png").lower()
    except (UnidentifiedImageError, OSError):
        return "png"


def build_mcp_server(
    engine: "ContextEngine", user_id: str, *, name: str = SERVER_NAME
) -> "MCPServer":
    """The MCP server (the SDK's ``MCPServer``, formerly ``FastMCP``) for ``user_id``.

    (This module does not postpone annotations: the SDK reads the tools' annotations,
    and ``Image`` is imported here, with the SDK.)
    """
    _require_mcp()
    from mcp.server.mcpserver import Image, MCPServer  # noqa: PLC0415
    from mcp.server.mcpserver.exceptions import ToolError  # noqa: PLC0415

    server: MCPServer = MCPServer(name=name, instructions=INSTRUCTIONS)
    kinds = ", ".join(kind.value for kind in MemoryKind)

    @server.tool(description=f"Search the user's long-term memories. kinds: any of {kinds}.")
    def memory_search(
        query: str, limit: int = 10, kinds: list[str] | None = None
    ) -> list[dict[str, Any]]:
        if not 1 <= limit <= MAX_LIMIT:
            raise ToolError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
        try:
            hits = engine.memory.search(user_id, query, kinds=kinds or None, limit=limit)
        except (AgentCtxError, ValueError) as exc:
            raise ToolError(str(exc)) from exc
        return [_hit(hit) for hit in hits]

    @server.tool(description=f"Remember something about the user. kind: one of {kinds}.")
    def memory_add(
        content: str,
        kind: str = "fact",
        subject: str | None = None,
        keywords: list[str] | None = None,
        confidence: float = 0.9,
    ) -> dict[str, Any]:
        if not content.strip():
            raise ToolError("content is empty")
        try:
            memory = engine.memory.add(
                user_id,
                content,
                kind=MemoryKind(kind),
                subject=subject,
                keywords=tuple(keywords or ()),
                confidence=confidence,
            )
        except (AgentCtxError, ValueError) as exc:
            raise ToolError(str(exc)) from exc
        return {
            "memory_id": memory.memory_id,
            "kind": memory.kind.value,
            "content": memory.content,
            "version": memory.version,
            "support_count": memory.support_count,
        }

    @server.tool(
        description="The original image behind an image id (img_…), e.g. of a "
        "[Visual_Placeholder: img_…] in a context window."
    )
    def restore_image(image_id: str) -> Image:
        try:
            data = engine.restore_image(image_id, user_id=user_id)
        except AgentCtxError as exc:  # unknown, another user's, or expired
            raise ToolError(f"{exc} [{exc.code}]") from exc
        return Image(data=data, format=_image_format(data))

    return server


def run(
    *,
    user_id: str,
    url: str | None = None,
    home: str | Path | None = None,
    transport: Transport = "stdio",
    engine: "ContextEngine | None" = None,
) -> None:
    """Serve ``user_id``'s memory and images over ``transport`` until the client leaves.

    Without ``engine``, opens the store ``url``/``home`` name (default: the settings'),
    and closes it afterwards.
    """
    _require_mcp()
    from agentctx.engine import ContextEngine  # noqa: PLC0415

    owned = engine is None
    if engine is None:
        given: dict[str, Any] = {k: v for k, v in (("url", url), ("home", home)) if v}
        engine = ContextEngine(**given)
    try:
        build_mcp_server(engine, user_id).run(transport)
    finally:
        if owned:
            engine.close()


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m agentctx.integrations.mcp_server --user U [--url URL] [--home DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m agentctx.integrations.mcp_server")
    parser.add_argument("--user", required=True, help="The user whose data the server serves.")
    parser.add_argument("--url", help="Database URL (default: the settings').")
    parser.add_argument("--home", help="agentctx home folder (default: the settings').")
    parser.add_argument("--transport", default="stdio", choices=["stdio", "sse", "streamable-http"])
    args = parser.parse_args(argv)
    run(user_id=args.user, url=args.url, home=args.home, transport=args.transport)


if __name__ == "__main__":
    main()
