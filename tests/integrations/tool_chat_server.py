"""A local HTTP server speaking OpenAI's ``/v1/chat/completions``, with tool calls.

``tests/llm/openai_chat_server.py`` scripts text answers; agents also need answers
that call tools. Each scripted :class:`Turn` is either text or a list of tool calls,
sent in the wire format OpenAI uses (``message.tool_calls``, ``finish_reason:
tool_calls``), so the ``openai`` SDK and the Agents SDK parse them as in production.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Turn:
    """One scripted answer: ``text``, or ``calls`` as (call id, tool name, arguments)."""

    text: str | None = None
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class ToolChatServer:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    _script: deque[Turn] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    def script(self, *turns: Turn) -> None:
        with self._lock:
            self._script.extend(turns)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> ToolChatServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            turn = self._script.popleft() if self._script else None
        if turn is None:
            error = {"message": "no scripted reply left", "type": "invalid_request_error"}
            return 418, {"error": error | {"param": None, "code": None}}
        message: dict[str, Any] = {"role": "assistant", "content": turn.text, "refusal": None}
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for call_id, name, args in turn.calls
            ]
        return 200, {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if turn.calls else "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


def start_tool_chat_server() -> ToolChatServer:
    """Start a server on a free local port."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            status, answer = (
                state.answer(body)
                if self.path == "/v1/chat/completions"
                else (404, {"error": {"message": f"Invalid URL (POST {self.path})"}})
            )
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state = ToolChatServer(url=f"http://127.0.0.1:{server.server_address[1]}/v1", _server=server)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    return state
