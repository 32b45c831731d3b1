"""A real local HTTP server speaking OpenAI's ``/v1/chat/completions`` wire protocol.

Tests script what it answers, one :class:`Reply` per request, and read back what it
was asked. Bodies, headers and errors are shaped as OpenAI sends them (ids,
``choices``, ``message``, ``finish_reason``, ``usage``, ``{"error": {...}}``), so
the official ``openai`` SDK parses and retries exactly as it does in production.

Use it from any test module::

    from openai_chat_server import Reply, start_chat_server   # in tests/llm
    from llm.openai_chat_server import Reply, start_chat_server   # elsewhere under tests

    with start_chat_server() as server:
        server.script(Reply.json({"title": "x"}), Reply.server_error())
        llm = OpenAIChatLLM("test-model", base_url=server.url, api_key="sk-test")
        ...
        assert len(server.requests) == 2

Besides the scripted replies, the server can behave like particular endpoints:
``formats`` lists the ``response_format`` types it accepts (others get OpenAI's 400),
``refuse_strict`` refuses strict schemas as OpenAI does for keywords its strict mode
lacks, ``api_key`` makes it check the bearer token (401), ``models`` makes unknown
models a 404, and ``reasoning_model`` refuses ``max_tokens`` and a non-default
temperature as OpenAI's reasoning models do. With the script empty, ``default``
answers (if set), else the server answers 418 so a missing reply fails the test
visibly.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ALL_FORMATS = frozenset({"text", "json_object", "json_schema"})


def word_tokens(text: str) -> int:
    """The server's token count: whitespace-separated words (deterministic, easy to assert)."""
    return len(text.split())


@dataclass
class Reply:
    """One scripted answer."""

    content: str | None = ""
    finish_reason: str = "stop"
    status: int = 200
    error: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    include_usage: bool = True
    model: str | None = None

    @classmethod
    def text(cls, content: str, **kwargs: Any) -> Reply:
        return cls(content=content, **kwargs)

    @classmethod
    def json(cls, value: Any, **kwargs: Any) -> Reply:
        return cls(content=json.dumps(value), **kwargs)

    @classmethod
    def fenced(cls, value: Any, **kwargs: Any) -> Reply:
        """JSON in a Markdown code fence with a sentence around it, as chat models write it."""
        body = json.dumps(value, indent=2)
        return cls(content=f"Here is the JSON:\n```json\n{body}\n```\nLet me know!", **kwargs)

    @classmethod
    def truncated(cls, content: str, **kwargs: Any) -> Reply:
        """An answer cut off at the token limit (``finish_reason: length``)."""
        return cls(content=content, finish_reason="length", **kwargs)

    @classmethod
    def failure(
        cls,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",  # OpenAI's field name
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        error = {"message": message, "type": type, "param": param, "code": code}
        return cls(content=None, status=status, error=error, headers=dict(headers or {}))

    @classmethod
    def rate_limited(cls, retry_after_ms: int = 10) -> Reply:
        return cls.failure(
            429,
            "Rate limit reached for requests",
            type="requests",
            code="rate_limit_exceeded",
            headers={"retry-after-ms": str(retry_after_ms)},
        )

    @classmethod
    def server_error(cls, status: int = 500) -> Reply:
        return cls.failure(
            status, "The server had an error while processing your request.", type="server_error"
        )

    @classmethod
    def unauthorized(cls) -> Reply:
        return cls.failure(401, "Incorrect API key provided.", code="invalid_api_key")

    @classmethod
    def bad_request(cls, message: str, *, param: str | None = None) -> Reply:
        return cls.failure(400, message, param=param)

    @classmethod
    def slow(cls, delay: float, content: str = "late") -> Reply:
        return cls(content=content, delay=delay)


@dataclass
class ChatServer:
    """The running server: its URL, its script, and the requests it received."""

    url: str
    formats: frozenset[str] = ALL_FORMATS
    api_key: str | None = None
    models: frozenset[str] | None = None
    reasoning_model: bool = False
    refuse_strict: bool = False
    default: Callable[[dict[str, Any]], Reply] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    usages: list[dict[str, int]] = field(default_factory=list)
    _script: deque[Reply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _close: Callable[[], None] = lambda: None

    def script(self, *replies: Reply) -> None:
        """Queue answers, one per coming request, in order."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted answers not yet used."""
        return len(self._script)

    def close(self) -> None:
        self._close()

    def __enter__(self) -> ChatServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # What the server answers -------------------------------------------------------

    def _refusal(self, body: dict[str, Any], auth: str | None) -> Reply | None:
        """The error OpenAI would give for this request regardless of the script."""
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            return Reply.unauthorized()
        model = body.get("model")
        if self.models is not None and model not in self.models:
            return Reply.failure(
                404,
                f"The model `{model}` does not exist or you do not have access to it.",
                code="model_not_found",
            )
        kind = (body.get("response_format") or {"type": "text"}).get("type")
        if kind not in self.formats:
            return Reply.bad_request(
                f"Invalid parameter: 'response_format' of type '{kind}' is not supported "
                "with this model.",
                param="response_format",
            )
        spec = (body.get("response_format") or {}).get("json_schema") or {}
        if self.refuse_strict and spec.get("strict"):
            return Reply.bad_request(
                f"Invalid schema for response_format '{spec.get('name')}': In context=(), "
                "'minLength' is not permitted.",
                param="response_format",
            )
        text = json.dumps(body.get("messages", []))
        if kind == "json_object" and "json" not in text.lower():
            return Reply.bad_request(
                "'messages' must contain the word 'json' in some form, to use "
                "'response_format' of type 'json_object'.",
                param="messages",
            )
        if self.reasoning_model and "max_tokens" in body:
            return Reply.bad_request(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                param="max_tokens",
            )
        if self.reasoning_model and body.get("temperature", 1) != 1:
            return Reply.bad_request(
                f"Unsupported value: 'temperature' does not support {body['temperature']} "
                "with this model. Only the default (1) value is supported.",
                param="temperature",
            )
        return None

    def _next(self, body: dict[str, Any], auth: str | None) -> Reply:
        refusal = self._refusal(body, auth)
        if refusal is not None:
            return refusal
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.default is not None:
            return self.default(body)
        return Reply.failure(418, "the test server has no scripted reply left")

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        prompt = sum(
            word_tokens(m["content"] if isinstance(m.get("content"), str) else json.dumps(m))
            for m in body.get("messages", [])
        )
        completion = word_tokens(reply.content or "")
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        answer: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or f"{body.get('model')}-2024-08-06",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": reply.content,
                        "refusal": None,
                        "annotations": [],
                    },
                    "logprobs": None,
                    "finish_reason": reply.finish_reason,
                }
            ],
            "service_tier": "default",
            "system_fingerprint": "fp_test",
        }
        if reply.include_usage:
            answer["usage"] = usage | {
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": 0,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            }
            with self._lock:
                self.usages.append(usage)
        return answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a reply still sleeping (timeout tests) must not hold up close()


def start_chat_server(**options: Any) -> ChatServer:
    """Start a server on a free local port; ``options`` set :class:`ChatServer` fields."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
            self.send_header("openai-processing-ms", "1")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # client gave up
                self.wfile.write(data)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = json.loads(raw)
            with state._lock:
                state.requests.append(body)
                state.headers.append({k.lower(): v for k, v in self.headers.items()})
                state.times.append(time.monotonic())
            if self.path != "/v1/chat/completions":
                message = f"Invalid URL (POST {self.path})"
                self._send(
                    404,
                    {
                        "error": {
                            "message": message,
                            "type": "invalid_request_error",
                            "param": None,
                            "code": None,
                        }
                    },
                    {},
                )
                return
            reply = state._next(body, self.headers.get("Authorization"))
            if reply.delay:
                time.sleep(reply.delay)
            if reply.status != 200:
                self._send(reply.status, {"error": reply.error}, reply.headers)
                return
            self._send(200, state._completion(body, reply), reply.headers)

    server = _Server(("127.0.0.1", 0), Handler)
    state = ChatServer(url=f"http://127.0.0.1:{server.server_address[1]}/v1", **options)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()

    def close() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    state._close = close
    return state
