"""A local OpenAI-compatible chat server for ``agentctx bench compaction --llm-server``.

It stands in for a hosted model the benchmark cannot reach: a real HTTP server on
127.0.0.1 answering ``POST /v1/chat/completions`` in OpenAI's wire format (``id``,
``object``, ``choices[].message``, ``finish_reason``, ``usage``; errors as
``{"error": {...}}``), so the engine's ``openai`` SDK client talks to it exactly as to
a hosted endpoint, over a socket, with JSON parsing, schemas and retries in play.

What it answers is deterministic and derived from the prompt: an extractive summary
(:func:`~agentctx.compaction.offline.extractive_summary`) of the request's last user
message, within the request's ``max_tokens``. When the request asks for JSON
(``response_format`` ``json_schema`` or ``json_object``) the summary is packed into a
value of the requested schema: every string field gets the summary (a title its first
words), numbers their minimum (an end index the prompt's last message number), arrays
one item, enums their first value, nullable fields null. The same request always gets
the same answer.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentctx.compaction.offline import extractive_summary
from agentctx.tokens import EstimateCounter, TokenCounter

MODEL = "agentctx-bench-summarizer"
API_KEY = "sk-agentctx-bench"  # the server checks it, as a hosted endpoint would
_DEFAULT_MAX_TOKENS = 512
_SCHEMA_DEPTH = 8  # nested schemas deeper than this get the text (none of ours are)
_NUMBERED = re.compile(r"^\[(\d+)\]", re.MULTILINE)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _prompt_text(messages: Any) -> str:
    """The text to summarize: the last user message (the system message is instructions)."""
    if not isinstance(messages, list):
        return ""
    users = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
    chosen = users[-1:] or [m for m in messages if isinstance(m, Mapping)][-1:]
    return "\n".join(_content_text(m.get("content")) for m in chosen)


def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, list):
        return [str(k) for k in kind]
    return [str(kind)] if kind is not None else []


def _title(text: str) -> str:
    return " ".join(text.split()[:8])


def schema_value(schema: Any, text: str, *, name: str = "", last_index: int = 0) -> Any:
    """A value valid for the JSON ``schema`` (the subset chat-model schemas use) that
    carries ``text`` in its string fields, as a model answering the prompt would.

    Field names guide a few choices: ``title`` gets the first words of ``text``;
    ``end``/``end_index`` the last message number of the prompt (``last_index``), other
    integers their minimum; a nullable field is null (nothing was said about it).
    """
    return _value(schema, text, name, last_index, 0)


def _value(schema: Any, text: str, name: str, last: int, depth: int) -> Any:
    if not isinstance(schema, Mapping) or depth > _SCHEMA_DEPTH:
        return text
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            if any(isinstance(o, Mapping) and o.get("type") == "null" for o in options):
                return None
            return _value(options[0], text, name, last, depth + 1)
    kinds = _types(schema)
    if "null" in kinds:
        return None
    kind = kinds[0] if kinds else ("object" if "properties" in schema else "string")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {key: _value(sub, text, key, last, depth + 1) for key, sub in properties.items()}
    if kind == "array":
        items = schema.get("items", {})
        if name == "keywords":
            words = sorted({w.strip(".,!?:;()[]").lower() for w in text.split()}, key=len)
            return [w for w in words if w.isalpha()][-3:][::-1] or [_title(text)]
        count = max(1, int(schema.get("minItems", 1)))
        return [_value(items, text, name, last, depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = low + (1 if "exclusiveMinimum" in schema else 0)
        if name in ("end", "end_index"):
            value = max(value, last)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    shown = _title(text) if name == "title" else text
    limit = schema.get("maxLength")
    shown = shown[: max(0, limit)] if isinstance(limit, int) else shown
    low = schema.get("minLength", 0)
    return shown.ljust(low, ".") if isinstance(low, int) else shown


def answer_for(body: Mapping[str, Any], counter: TokenCounter) -> str:
    """The completion text for a request body (deterministic)."""
    prompt = _prompt_text(body.get("messages"))
    limit = body.get("max_completion_tokens") or body.get("max_tokens") or _DEFAULT_MAX_TOKENS
    # Leave room for the JSON around the text, as a model answering in JSON would.
    budget = max(8, int(limit) * 3 // 4 - 16)
    lines = [line for line in prompt.splitlines() if line.strip()]
    summary = extractive_summary(lines, budget_tokens=budget, counter=counter).text
    summary = summary or (prompt.strip()[:200] or "nothing to summarize")
    # Prompts that number their messages "[i] role: text" (topic batches) get answers
    # spanning all of them: one topic from the first message to the last.
    numbers = [int(n) for n in _NUMBERED.findall(prompt)]
    last = max(numbers, default=0)
    response_format = body.get("response_format") or {"type": "text"}
    kind = response_format.get("type") if isinstance(response_format, Mapping) else "text"
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        return json.dumps(schema_value(spec.get("schema", {}), summary, last_index=last))
    if kind == "json_object":
        return json.dumps({"summary": summary})
    return summary


def _schema_name(body: Mapping[str, Any]) -> str:
    """The name of the JSON schema a request asks for (``text`` / ``json_object`` without)."""
    response_format = body.get("response_format")
    if not isinstance(response_format, Mapping):
        return "text"
    spec = response_format.get("json_schema")
    if isinstance(spec, Mapping):
        return str(spec.get("name") or "json_schema")
    return str(response_format.get("type") or "text")


def _error(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


@dataclass
class BenchChatServer:
    """The running server: its base URL (``…/v1``) and what it served."""

    url: str
    api_key: str = API_KEY
    model: str = MODEL
    requests: int = 0
    failures: int = 0
    seconds: list[float] = field(default_factory=list)  # time to answer each request
    by_schema: dict[str, int] = field(default_factory=dict)  # response_format schema name
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def settings(self) -> dict[str, Any]:
        """The engine's ``llm`` setting that points its fast model here."""
        return {
            "provider": "openai",
            "base_url": self.url,
            "api_key": self.api_key,
            "fast_model": self.model,
            "timeout": 30.0,
            "max_retries": 0,  # a failure must show in the report, not hide in a retry
        }

    def _served(self, seconds: float, ok: bool, schema: str) -> None:
        with self._lock:
            self.requests += 1
            self.failures += not ok
            self.seconds.append(seconds)
            self.by_schema[schema] = self.by_schema.get(schema, 0) + 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def _completion(body: Mapping[str, Any], content: str, counter: TokenCounter) -> dict[str, Any]:
    prompt = sum(counter.count(_content_text(m.get("content"))) for m in body.get("messages", []))
    completion = counter.count(content)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model") or MODEL),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
        "system_fingerprint": "fp_agentctx_bench",
    }


@contextlib.contextmanager
def running_chat_server(counter: TokenCounter | None = None) -> Iterator[BenchChatServer]:
    """Serve on a free local port for the duration of the block, then shut down."""
    count = counter or EstimateCounter()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects

        def log_message(self, *args: Any) -> None:
            pass  # the report counts requests; no line per request on stderr

        def _send(self, status: int, body: Mapping[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)

        def do_POST(self) -> None:
            started = time.perf_counter()
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status, reply, schema = self._reply(raw)
            self._send(status, reply)
            state._served(time.perf_counter() - started, status == 200, schema)

        def _reply(self, raw: bytes) -> tuple[int, dict[str, Any], str]:
            if self.path.rstrip("/") != "/v1/chat/completions":
                return 404, _error(f"Invalid URL (POST {self.path})"), "-"
            if self.headers.get("Authorization") != f"Bearer {state.api_key}":
                return 401, _error("Incorrect API key provided."), "-"
            try:
                body = json.loads(raw)
            except ValueError:
                return 400, _error("We could not parse the JSON body of your request."), "-"
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                return 400, _error("'messages' is a required property"), "-"
            return 200, _completion(body, answer_for(body, count), count), _schema_name(body)

    server = _Server(("127.0.0.1", 0), Handler)
    state = BenchChatServer(url=f"http://127.0.0.1:{server.server_address[1]}/v1")
    thread = threading.Thread(
        target=server.serve_forever, args=(0.05,), name="bench-chat-server", daemon=True
    )
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
