"""OpenAIChatLLM against a real local HTTP server speaking the Chat Completions protocol."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from openai_chat_server import ChatServer, Reply, start_chat_server

from agentctx.errors import ConfigError, InvalidInput
from agentctx.llm import (
    LLM,
    Completion,
    LLMError,
    LLMRequestRejected,
    LLMResponseInvalid,
    LLMTimeout,
    LLMUnavailable,
    OpenAIChatLLM,
    Usage,
    UsageLedger,
)

SUMMARY = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "points": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["title", "points"],
    "additionalProperties": False,
}
GOOD = {"title": "Lisbon trip", "points": ["tram 28", "ferry"]}
ASK = [
    {"role": "system", "content": "You summarize conversations."},
    {"role": "user", "content": "Summarize: we planned a Lisbon trip."},
]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with start_chat_server() as running:
        yield running


def make_llm(server: ChatServer, **options: Any) -> OpenAIChatLLM:
    options.setdefault("api_key", "sk-test")
    options.setdefault("max_retries", 0)
    options.setdefault("timeout", 5.0)
    return OpenAIChatLLM("test-model", base_url=server.url, **options)


def server_usage(server: ChatServer) -> Usage:
    return sum(
        (
            Usage(u["prompt_tokens"], u["completion_tokens"], u["total_tokens"])
            for u in server.usages
        ),
        Usage(),
    )


# Plain text --------------------------------------------------------------------------


def test_text_completion_round_trip(server: ChatServer) -> None:
    server.script(Reply.text("We planned a Lisbon trip by tram and ferry."))
    llm = make_llm(server)
    assert isinstance(llm, LLM) and llm.name == "openai:test-model"

    answer = llm.complete(ASK, max_tokens=64)

    assert isinstance(answer, Completion)
    assert answer.text == "We planned a Lisbon trip by tram and ferry."
    assert answer.data is None and answer.finish_reason == "stop"
    assert answer.model == "test-model-2024-08-06" and answer.attempts == 1
    assert answer.usage == server_usage(server) and answer.usage.total_tokens > 0
    assert not answer.usage.estimated and answer.latency_ms > 0
    (request,) = server.requests
    assert request["model"] == "test-model" and request["messages"] == ASK
    assert request["max_tokens"] == 64 and request["temperature"] == 0.0
    assert "response_format" not in request
    assert server.headers[0]["authorization"] == "Bearer sk-test"


def test_text_answers_lose_a_leading_reasoning_block(server: ChatServer) -> None:
    server.script(Reply.text("<think>They want a summary.</think>\n\nA Lisbon trip."))
    assert make_llm(server).complete(ASK).text == "A Lisbon trip."


def test_a_truncated_text_answer_is_returned_as_such(server: ChatServer) -> None:
    server.script(Reply.truncated("We planned a Lisbon"))
    answer = make_llm(server).complete(ASK, max_tokens=4)
    assert answer.finish_reason == "length" and answer.text == "We planned a Lisbon"
    assert len(server.requests) == 1


def test_missing_usage_is_estimated(server: ChatServer) -> None:
    server.script(Reply(content="A short summary of the trip.", include_usage=False))
    usage = make_llm(server).complete(ASK).usage
    assert usage.estimated and usage.prompt_tokens > 10 and usage.completion_tokens > 3
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


# Structured answers --------------------------------------------------------------------


def test_valid_json_is_parsed_and_the_schema_sent(server: ChatServer) -> None:
    server.script(Reply.json(GOOD))
    answer = make_llm(server).complete(ASK, schema=SUMMARY, schema_name="summary")
    assert answer.data == GOOD and answer.attempts == 1 and not answer.repaired
    (request,) = server.requests
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "summary", "schema": SUMMARY, "strict": True},
    }
    assert request["messages"] == ASK  # the endpoint enforces the schema: no instruction added


def test_fenced_json_is_repaired_without_asking_again(server: ChatServer) -> None:
    server.script(Reply.fenced(GOOD))
    answer = make_llm(server).complete(ASK, schema=SUMMARY)
    assert answer.data == GOOD and answer.repaired and answer.attempts == 1
    assert len(server.requests) == 1


def test_malformed_json_is_asked_for_again_with_the_reason(server: ChatServer) -> None:
    server.script(Reply.text('{"title": "Lisbon trip", "points": ["tram'), Reply.json(GOOD))
    ledger = UsageLedger()
    answer = make_llm(server, ledger=ledger).complete(ASK, schema=SUMMARY)
    assert answer.data == GOOD and answer.attempts == 2
    assert answer.usage == server_usage(server) and len(server.usages) == 2
    retry = server.requests[1]["messages"]
    assert retry[: len(ASK)] == ASK
    assert retry[-2] == {
        "role": "assistant",
        "content": '{"title": "Lisbon trip", "points": ["tram',
    }
    assert retry[-1]["role"] == "user" and "not JSON" in retry[-1]["content"]
    entry = ledger.total()
    assert (entry.calls, entry.failures, entry.attempts) == (1, 0, 2)
    assert entry.total_tokens == answer.usage.total_tokens


def test_a_schema_violation_is_named_in_the_retry(server: ChatServer) -> None:
    server.script(Reply.json({"title": "", "points": ["a"]}), Reply.json(GOOD))
    assert make_llm(server).complete(ASK, schema=SUMMARY).data == GOOD
    assert "$.title" in server.requests[1]["messages"][-1]["content"]


def test_invalid_twice_raises_with_the_raw_answer(server: ChatServer) -> None:
    server.script(Reply.text("I would rather not."), Reply.json({"title": "x", "points": "no"}))
    ledger = UsageLedger()
    with pytest.raises(LLMResponseInvalid) as caught:
        make_llm(server, ledger=ledger, slot="fast").complete(ASK, schema=SUMMARY)
    error = caught.value
    assert isinstance(error, LLMError) and error.code == "llm_response_invalid"
    assert error.raw == '{"title": "x", "points": "no"}'
    assert "$.points" in error.reason and error.attempts == 2
    assert error.usage == server_usage(server)
    assert len(server.requests) == 2  # one retry, no more
    entry = ledger.total(slot="fast")
    assert (entry.calls, entry.failures) == (1, 1)
    assert entry.total_tokens == error.usage.total_tokens > 0  # tokens of a failure still count


def test_a_truncated_answer_is_asked_for_again_shorter_with_more_room(server: ChatServer) -> None:
    server.script(
        Reply.truncated('{"title": "Lisbon trip", "points": ["tram 28 across'), Reply.json(GOOD)
    )
    answer = make_llm(server).complete(ASK, schema=SUMMARY, max_tokens=50)
    assert answer.data == GOOD and answer.attempts == 2
    first, second = server.requests
    assert first["max_tokens"] == 50 and second["max_tokens"] == 100
    assert second["messages"][: len(ASK)] == ASK and len(second["messages"]) == len(ASK) + 1
    assert "cut off" in second["messages"][-1]["content"]
    assert "shorter" in second["messages"][-1]["content"]


def test_truncated_twice_gives_up(server: ChatServer) -> None:
    server.script(Reply.truncated('{"title": "a'), Reply.truncated('{"title": "b'))
    with pytest.raises(LLMResponseInvalid, match="cut off"):
        make_llm(server).complete(ASK, schema=SUMMARY)
    assert len(server.requests) == 2


def test_a_server_without_json_schema_gets_json_object_from_then_on() -> None:
    with start_chat_server(formats=frozenset({"text", "json_object"})) as server:
        server.script(Reply.json(GOOD), Reply.json(GOOD))
        llm = make_llm(server)
        assert llm.complete(ASK, schema=SUMMARY).data == GOOD
        assert llm.response_format == "json_object"
        assert llm.complete(ASK, schema=SUMMARY).data == GOOD
        kinds = [r.get("response_format", {}).get("type") for r in server.requests]
        # json_schema refused (strict, then not), json_object remembered for the next call
        assert kinds == ["json_schema", "json_schema", "json_object", "json_object"]
        system = server.requests[2]["messages"][0]
        assert system["role"] == "system" and system["content"].startswith(ASK[0]["content"])
        assert (
            json.dumps(SUMMARY, separators=(",", ":")) in system["content"]
        )  # the schema travels in the prompt
        assert len(server.requests[2]["messages"]) == len(ASK)
        # Another instance starts over: what one endpoint refuses says nothing of another.
        server.script(Reply.json(GOOD))
        assert make_llm(server).complete(ASK, schema=SUMMARY).data == GOOD
        assert server.requests[-2]["response_format"]["type"] == "json_schema"


def test_a_refused_strict_schema_is_sent_again_without_strict() -> None:
    with start_chat_server(refuse_strict=True) as server:
        server.script(Reply.json(GOOD), Reply.json(GOOD))
        llm = make_llm(server)
        assert llm.complete(ASK, schema=SUMMARY).data == GOOD
        assert llm.complete(ASK, schema=SUMMARY).data == GOOD
        sent = [r["response_format"]["json_schema"]["strict"] for r in server.requests]
        assert sent == [True, False, False]
        assert llm.response_format == "json_schema"


def test_a_server_with_no_response_format_gets_the_schema_in_the_prompt() -> None:
    with start_chat_server(formats=frozenset({"text"})) as server:
        server.script(Reply.fenced(GOOD))
        llm = make_llm(server)
        user_only = [ASK[1]]
        answer = llm.complete(user_only, schema=SUMMARY)
        assert answer.data == GOOD and answer.repaired
        assert llm.response_format == "prompt"
        assert len(server.requests) == 4
        last = server.requests[-1]
        assert "response_format" not in last
        assert (
            last["messages"][0]["role"] == "system"
            and "JSON schema" in last["messages"][0]["content"]
        )
        assert last["messages"][1:] == user_only
        # Text calls never carried a response format and are unaffected.
        server.script(Reply.text("plain"))
        assert llm.complete(user_only).text == "plain"
        assert server.requests[-1]["messages"] == user_only


def test_other_bad_requests_are_rejected_without_changing_the_format(server: ChatServer) -> None:
    server.script(
        Reply.bad_request("This model's maximum context length is 8192 tokens.", param="messages")
    )
    llm = make_llm(server, max_retries=3)
    with pytest.raises(LLMRequestRejected, match="maximum context length") as caught:
        llm.complete(ASK, schema=SUMMARY)
    assert caught.value.status == 400 and len(server.requests) == 1
    assert llm.response_format == "json_schema"


def test_reasoning_models_get_max_completion_tokens_and_no_temperature() -> None:
    with start_chat_server(reasoning_model=True) as server:
        server.script(Reply.text("done"), Reply.text("again"))
        llm = make_llm(server)
        assert llm.complete(ASK, max_tokens=100).text == "done"
        assert llm.complete(ASK, max_tokens=100).text == "again"
        final = server.requests[-1]
        assert final["max_completion_tokens"] == 100 and "max_tokens" not in final
        assert "temperature" not in final
        assert len(server.requests) == 4  # two refusals, each learned once


# Failures ----------------------------------------------------------------------------


def test_rate_limits_are_retried_honouring_retry_after(server: ChatServer) -> None:
    server.script(Reply.rate_limited(retry_after_ms=800), Reply.text("ok"))
    assert make_llm(server, max_retries=2).complete(ASK).text == "ok"
    assert len(server.requests) == 2
    # The SDK's own first backoff is at most 0.5 s; the server asked for 0.8 s.
    assert server.times[1] - server.times[0] >= 0.78


def test_server_errors_are_retried(server: ChatServer) -> None:
    server.script(Reply.server_error(500), Reply.text("ok"))
    assert make_llm(server, max_retries=1).complete(ASK).text == "ok"
    assert len(server.requests) == 2


def test_server_errors_after_the_retries_are_unavailable(server: ChatServer) -> None:
    server.script(*[Reply.server_error(503)] * 3)
    ledger = UsageLedger()
    with pytest.raises(LLMUnavailable) as caught:
        make_llm(server, max_retries=1, ledger=ledger).complete(ASK, schema=SUMMARY)
    assert caught.value.status == 503 and caught.value.code == "llm_unavailable"
    assert len(server.requests) == 2 and server.pending == 1
    assert ledger.total().failures == 1 and ledger.total().total_tokens == 0


def test_a_slow_endpoint_times_out_with_a_typed_error(server: ChatServer) -> None:
    server.script(Reply.slow(3.0))
    started = time.monotonic()
    with pytest.raises(LLMTimeout) as caught:
        make_llm(server, timeout=0.2).complete(ASK)
    assert time.monotonic() - started < 2.5  # gave up long before the answer came
    assert isinstance(caught.value, LLMUnavailable) and caught.value.code == "llm_timeout"
    assert len(server.requests) == 1


def test_an_unreachable_endpoint_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again below: nothing listens there
    llm = OpenAIChatLLM("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    with pytest.raises(LLMUnavailable, match="cannot reach"):
        llm.complete(ASK)


def test_a_refused_key_is_a_config_error_and_not_retried() -> None:
    with start_chat_server(api_key="sk-right") as server:
        llm = make_llm(server, api_key="sk-wrong", max_retries=3)
        with pytest.raises(ConfigError, match="refused the API key"):
            llm.complete(ASK)
        assert len(server.requests) == 1


def test_an_unknown_model_is_a_config_error() -> None:
    with start_chat_server(models=frozenset({"qwen2.5:7b"})) as server:
        with pytest.raises(ConfigError, match="no model 'test-model'"):
            make_llm(server).complete(ASK)
        server.script(Reply.text("hi"))
        llm = OpenAIChatLLM("qwen2.5:7b", base_url=server.url, max_retries=0)
        assert llm.complete(ASK).text == "hi"


@pytest.mark.parametrize(
    ("messages", "options"),
    [
        ([], {}),
        ("hello", {}),
        (["hello"], {}),
        (ASK, {"max_tokens": 0}),
        (ASK, {"temperature": 3.0}),
        (ASK, {"schema": {"type": "nope"}}),
        (ASK, {"schema": SUMMARY, "schema_name": "has spaces"}),
    ],
)
def test_bad_arguments_are_invalid_input_and_send_nothing(
    server: ChatServer, messages: Any, options: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInput):
        make_llm(server).complete(messages, **options)
    assert server.requests == []


def test_constructing_sends_nothing_and_repr_hides_the_key(server: ChatServer) -> None:
    llm = make_llm(server, api_key="sk-very-secret")
    assert server.requests == []
    assert "sk-very-secret" not in repr(llm) and "test-model" in repr(llm)


# Usage ledger --------------------------------------------------------------------------


def test_the_ledger_adds_up_concurrent_calls_per_slot_and_model() -> None:
    with start_chat_server(default=lambda body: Reply.text("one two three")) as server:
        ledger = UsageLedger()
        fast = make_llm(server, ledger=ledger, slot="fast")
        primary = OpenAIChatLLM(
            "big-model", base_url=server.url, api_key="k", ledger=ledger, slot="primary"
        )
        answers: list[Completion] = []
        lock = threading.Lock()

        def work(llm: OpenAIChatLLM) -> None:
            for _ in range(5):
                answer = llm.complete(ASK)
                with lock:
                    answers.append(answer)

        threads = [threading.Thread(target=work, args=(llm,)) for llm in [fast, primary] * 4]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert len(answers) == 40 == len(server.requests)
        entries = ledger.entries()
        assert set(entries) == {("fast", "test-model"), ("primary", "big-model")}
        assert entries["fast", "test-model"].calls == 20
        total = ledger.total()
        assert total.calls == 40 and total.failures == 0 and total.attempts == 40
        assert total.completion_tokens == 40 * 3
        assert total.total_tokens == sum(a.usage.total_tokens for a in answers)
        assert total.total_tokens == server_usage(server).total_tokens
        assert ledger.total(model="big-model").calls == 20
        assert ledger.reset() == entries and ledger.total().calls == 0
