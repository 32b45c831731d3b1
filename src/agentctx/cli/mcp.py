"""``agentctx mcp``: serve a user's long-term memory and images to MCP clients.

Stdio by default, so an MCP client starts it as a subprocess, e.g. in a client's
configuration: ``{"command": "agentctx", "args": ["--home", "~/.agentctx", "mcp",
"--user", "u1"]}``. Needs ``pip install "agentctx[mcp]"``.
"""

from __future__ import annotations

from enum import StrEnum

import typer

from agentctx.cli._common import open_engine


class McpTransport(StrEnum):
    """How the server talks to its client."""

    stdio = "stdio"
    sse = "sse"
    streamable_http = "streamable-http"


def mcp(
    ctx: typer.Context,
    user: str = typer.Option(..., "--user", "-u", help="The user whose data the server serves."),
    transport: McpTransport = typer.Option(
        McpTransport.stdio, "--transport", help="stdio (default), sse or streamable-http."
    ),
) -> None:
    """Run an MCP server with the tools memory_search, memory_add and restore_image."""
    from agentctx.integrations.mcp_server import run  # noqa: PLC0415 - imports the mcp SDK

    with open_engine(ctx) as engine:  # agentctx errors (a missing extra) end in one line
        run(user_id=user, engine=engine, transport=transport.value)
