"""The hashing embedder, embedder configuration, and the OpenAI-compatible embedder
against a real local HTTP server speaking the ``/v1/embeddings`` wire protocol."""

from __future__ import annotations

import base64
import contextlib
import json
import math
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentctx import ConfigError, ContextEngine
from agentctx.llm import (
    Embedder,
    EmbeddingConfig,
    EmbeddingError,
    HashingEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
    embedder_from_config,
)
from agentctx.retrieval import SearchIndex, SyncReport


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# Hashing ---------------------------------------------------------------------------------


def test_hashing_vectors_are_unit_length_deterministic_and_overlap_driven() -> None:
    embedder = HashingEmbedder(dimensions=256)
    assert isinstance(embedder, Embedder)
    assert embedder.name == "hashing-v1-256" and embedder.dimensions == 256
    a, b, c, empty = embedder.embed(
        ["book a flight to Tokyo", "Booking flights to tokyo", "quarterly tax return", "!!"]
    )
    assert len(a) == 256 and math.isclose(cosine(a, a), 1.0, rel_tol=1e-9)
    assert a == HashingEmbedder(dimensions=256).embed(["book a flight to Tokyo"])[0]
    assert cosine(a, b) > 0.6 > abs(cosine(a, c))
    assert empty == [0.0] * 256
    zh = embedder.embed(["预订北京的机票", "北京机票", "今天天气很好"])
    assert cosine(zh[0], zh[1]) > abs(cosine(zh[0], zh[2]))


def test_hashing_dimensions_are_checked() -> None:
    with pytest.raises(ConfigError):
        HashingEmbedder(dimensions=4)


# Configuration ---------------------------------------------------------------------------


def test_config_chooses_the_embedder(tmp_path: Path) -> None:
    assert embedder_from_config({"provider": "none"}, tmp_path) is None
    hashing = embedder_from_config({"provider": "hashing", "dimensions": 64}, tmp_path)
    assert isinstance(hashing, HashingEmbedder) and hashing.dimensions == 64
    auto = embedder_from_config(None, tmp_path)  # the local model is installed here
    assert isinstance(auto, LocalEmbedder) and auto.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert auto.dimensions == 384  # known without loading the model
    assert list(tmp_path.iterdir()) == []  # nothing unpacked yet
    remote = embedder_from_config(
        EmbeddingConfig(provider="openai", base_url="http://127.0.0.1:9/v1", dimensions=32),
        tmp_path,
    )
    assert isinstance(remote, OpenAIEmbedder)
    assert remote.name == "openai:text-embedding-3-small/32" and remote.dimensions == 32


@pytest.mark.parametrize(
    "config",
    [
        {"provider": "magic"},
        {"provider": "hashing", "dimensions": 2},
        {"provider": "openai", "timeout": 0},
        {"provider": "local", "unknown": 1},
        {"provider": "local", "model_path": "/no/such/model"},
    ],
)
def test_bad_configuration_is_a_config_error(
    config: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError):
        embedder_from_config(config, tmp_path)


def test_openai_without_key_or_endpoint_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="api_key"):
        embedder_from_config({"provider": "openai"}, tmp_path)


# OpenAI-compatible endpoint ---------------------------------------------------------------


@dataclass
class FakeEndpoint:
    """What the local server answers, and what it was asked."""

    url: str
    failures: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    size: int = 16
    delay: float = 0.0
    ignore_dimensions: bool = False


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 429:
                self.send_header("retry-after-ms", "10")
            self.end_headers()
            with contextlib.suppress(BrokenPipeError):  # the client gave up (timeout test)
                self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            if self.path != "/v1/embeddings":
                self._send(404, {"error": {"message": "no such route", "type": "invalid"}})
                return
            if state.delay:
                time.sleep(state.delay)
            if state.failures:
                status, error = state.failures.pop(0)
                self._send(status, {"error": error})
                return
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            size = state.size if state.ignore_dimensions else body.get("dimensions", state.size)
            data = []
            for i, text in enumerate(inputs):
                vector = [2.0 * x for x in HashingEmbedder(size).embed([text])[0]]  # not unit
                if body.get("encoding_format") == "base64":
                    encoded: Any = base64.b64encode(struct.pack(f"<{size}f", *vector)).decode()
                else:
                    encoded = vector
                data.append({"object": "embedding", "index": i, "embedding": encoded})
            data.reverse()  # answers may come in any order; "index" says which is which
            self._send(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                },
            )

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state = FakeEndpoint(url=f"http://127.0.0.1:{server.server_address[1]}/v1")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def test_openai_embedder_batches_normalizes_and_keeps_order(endpoint: FakeEndpoint) -> None:
    embedder = OpenAIEmbedder(
        "my-embedder", base_url=endpoint.url, api_key="sk-test", batch_size=2, max_retries=0
    )
    texts = ["alpha beta", "", "gamma delta", "epsilon", "alpha beta gamma"]
    vectors = embedder.embed(texts)
    assert embedder.dimensions == 16 and embedder.name == "openai:my-embedder"
    assert [len(r["input"]) for r in endpoint.requests] == [1, 2, 1]  # the blank text is skipped
    assert all(
        r["model"] == "my-embedder" and r["encoding_format"] == "float" for r in endpoint.requests
    )
    assert endpoint.headers[0]["authorization"] == "Bearer sk-test"
    assert vectors[1] == [0.0] * 16
    for text, vector in zip(texts, vectors, strict=True):
        if text:
            assert math.isclose(cosine(vector, vector), 1.0, rel_tol=1e-6)
    assert cosine(vectors[0], vectors[4]) > cosine(vectors[0], vectors[3])


def test_openai_embedder_retries_rate_limits_and_server_errors(endpoint: FakeEndpoint) -> None:
    endpoint.failures = [
        (429, {"message": "slow down", "type": "rate_limit"}),
        (500, {"message": "boom", "type": "server_error"}),
    ]
    embedder = OpenAIEmbedder("m", base_url=endpoint.url, api_key="k", max_retries=2)
    assert len(embedder.embed(["hello world"])[0]) == 16
    assert len(endpoint.requests) == 3


def test_openai_embedder_gives_up_with_a_typed_error(endpoint: FakeEndpoint) -> None:
    endpoint.failures = [(503, {"message": "down", "type": "server_error"})] * 3
    embedder = OpenAIEmbedder("m", base_url=endpoint.url, api_key="k", max_retries=1)
    with pytest.raises(EmbeddingError):
        embedder.embed(["hello"])
    assert len(endpoint.requests) == 2


def test_openai_embedder_maps_refusals_to_config_errors(endpoint: FakeEndpoint) -> None:
    endpoint.failures = [(401, {"message": "bad key", "type": "invalid_request_error"})]
    embedder = OpenAIEmbedder("m", base_url=endpoint.url, api_key="wrong", max_retries=3)
    with pytest.raises(ConfigError, match="refused"):
        embedder.embed(["hello"])
    assert len(endpoint.requests) == 1  # an auth failure is not retried


def test_openai_embedder_requests_learns_and_checks_dimensions(endpoint: FakeEndpoint) -> None:
    embedder = OpenAIEmbedder("m", base_url=endpoint.url, api_key="k", dimensions=8)
    assert len(embedder.embed(["hello"])[0]) == 8
    assert endpoint.requests[-1]["dimensions"] == 8
    endpoint.size = 12
    learning = OpenAIEmbedder("m", base_url=endpoint.url, api_key="k")
    assert learning.dimensions == 12 and len(endpoint.requests) == 2  # asked once
    assert learning.dimensions == 12 and len(endpoint.requests) == 2
    endpoint.ignore_dimensions = True  # a server that answers with its own size
    with pytest.raises(EmbeddingError, match="size"):
        embedder.embed(["hello"])


def test_openai_embedder_times_out_with_a_typed_error(endpoint: FakeEndpoint) -> None:
    endpoint.delay = 1.0
    embedder = OpenAIEmbedder("m", base_url=endpoint.url, api_key="k", timeout=0.2, max_retries=0)
    with pytest.raises(EmbeddingError):
        embedder.embed(["hello"])


def test_search_ranks_lexically_while_the_endpoint_is_down(
    engine: ContextEngine, endpoint: FakeEndpoint
) -> None:
    embedder = OpenAIEmbedder("m", base_url=endpoint.url, api_key="k", dimensions=16, max_retries=0)
    index = SearchIndex(engine.db, embedder)
    session = engine.create_session(user_id="u1")
    session.add_message("user", "the Lisbon tram schedule")
    assert index.sync("u1", session.id) == SyncReport(indexed=1, embedded=1)
    endpoint.failures = [(503, {"message": "down", "type": "server_error"})] * 10
    session.add_message("user", "a ferry across the Lisbon river")

    hits = index.search("u1", session.id, "Lisbon ferry")

    assert [h.seq for h in hits] == [2, 1] and all(h.dense_rank is None for h in hits)
    endpoint.failures = []
    assert index.sync("u1", session.id) == SyncReport(indexed=0, embedded=1)  # caught up
    assert index.search("u1", session.id, "Lisbon ferry")[0].dense_rank == 1
