"""``agentctx mcp``: the MCP server, driven by the official MCP client over stdio.

The server runs as a real subprocess (as an MCP client launches it) on a temporary
SQLite home that the test filled in-process beforehand.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from agentctx import ContextEngine
from conftest import make_png

HASHING = json.dumps({"provider": "hashing"})
CLI = (
    "import typer; from agentctx.cli.mcp import mcp; app = typer.Typer(); app.command()(mcp); app()"
)


def recorded_image(home: Path, user_id: str, png: bytes) -> str:
    """Record a tool result with a screenshot in a session of ``user_id``; its image id."""
    with ContextEngine(home=home, embeddings={"provider": "hashing"}) as engine:
        session = engine.create_session(user_id=user_id, agent_id="browser")
        with session.turn() as turn:
            turn.add_message("user", "Open the booking page")
            call = turn.add_tool_call("screenshot", {"region": "full"})
            result = turn.add_tool_result(call.call_id, content="page loaded", images=[png])
        return result.images[0].image_id


def server_params(home: Path, how: str) -> StdioServerParameters:
    env = {"AGENTCTX_HOME": str(home), "AGENTCTX_EMBEDDINGS": HASHING}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    if how == "module":
        args = ["-m", "agentctx.integrations.mcp_server", "--user", "u1", "--home", str(home)]
    else:  # the CLI command function, as `agentctx mcp --user u1` runs it
        args = ["-c", CLI, "--user", "u1"]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    return await session.call_tool(name, arguments)


def test_the_tools_over_stdio(tmp_path: Path) -> None:
    home = tmp_path / "home"
    png = make_png(seed=7)
    image_id = recorded_image(home, "u1", png)
    other_image = recorded_image(home, "u2", make_png(seed=11))

    async def scenario() -> None:
        async with (
            stdio_client(server_params(home, "module")) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = {tool.name for tool in (await session.list_tools()).tools}
            assert tools == {"memory_search", "memory_add", "restore_image"}

            added = await call(
                session,
                "memory_add",
                {"content": "Prefers aisle seats on long flights", "kind": "preference"},
            )
            assert not added.is_error
            memory = added.structured_content
            assert memory["kind"] == "preference" and memory["memory_id"].startswith("mem_")
            await call(session, "memory_add", {"content": "Lives in Porto", "kind": "profile"})

            found = await call(session, "memory_search", {"query": "aisle seat flights"})
            assert not found.is_error
            hits = found.structured_content["result"]
            assert hits[0]["memory_id"] == memory["memory_id"]
            assert hits[0]["content"] == "Prefers aisle seats on long flights"

            image = await call(session, "restore_image", {"image_id": image_id})
            assert not image.is_error
            content = image.content[0]
            assert content.type == "image" and content.mime_type == "image/png"
            assert base64.b64decode(content.data) == png

            for missing in ("img_0000000000000000", other_image):  # unknown; another user's
                failed = await call(session, "restore_image", {"image_id": missing})
                assert failed.is_error
                assert "not found" in failed.content[0].text.lower()

            bad = await call(session, "memory_add", {"content": "x", "kind": "gossip"})
            assert bad.is_error
            # After the errors the server still answers.
            again = await call(session, "restore_image", {"image_id": image_id})
            assert base64.b64decode(again.content[0].data) == png

    asyncio.run(asyncio.wait_for(scenario(), timeout=60))

    # What the client added is in the store, for u1 only.
    with ContextEngine(home=home, embeddings={"provider": "hashing"}) as engine:
        assert sorted(m.content for m in engine.memory.list("u1")) == [
            "Lives in Porto",
            "Prefers aisle seats on long flights",
        ]
        assert engine.memory.list("u2") == []


def test_the_cli_command_serves_over_stdio(tmp_path: Path) -> None:
    """``agentctx mcp --user u1``: the command function, the store from $AGENTCTX_HOME."""
    home = tmp_path / "home"
    png = make_png(seed=2)
    image_id = recorded_image(home, "u1", png)

    async def scenario() -> None:
        async with (
            stdio_client(server_params(home, "cli")) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            image = await call(session, "restore_image", {"image_id": image_id})
            assert base64.b64decode(image.content[0].data) == png

    asyncio.run(asyncio.wait_for(scenario(), timeout=60))


def test_build_mcp_server_in_process(tmp_path: Path) -> None:
    """The server object the SDK's in-process client connects to lists the same tools."""
    from mcp import Client

    from agentctx.integrations.mcp_server import build_mcp_server

    with ContextEngine(home=tmp_path / "home", embeddings={"provider": "hashing"}) as engine:
        server = build_mcp_server(engine, "u9")

        async def scenario() -> None:
            async with Client(server) as client:
                result = await client.call_tool("memory_add", {"content": "Uses vim"})
                assert not result.is_error
                found = await client.call_tool("memory_search", {"query": "vim", "limit": 0})
                assert found.is_error and "limit" in found.content[0].text

        asyncio.run(scenario())
        assert [m.content for m in engine.memory.list("u9")] == ["Uses vim"]
