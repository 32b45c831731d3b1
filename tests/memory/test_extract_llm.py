"""LLM extraction against a real local server speaking the OpenAI wire format."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from agentctx import ContextEngine
from agentctx.events import Event
from agentctx.llm import OpenAIChatLLM
from agentctx.memory.extract import (
    LLM_VERSION,
    RULES_VERSION,
    LLMExtractor,
    extract_declarative,
)
from agentctx.memory.models import MemoryKind
from llm.openai_chat_server import ChatServer, Reply, start_chat_server

DAY = datetime(2024, 5, 10, 9, 30, tzinfo=UTC)
API_KEY = "sk-proj-AbCdEf1234567890abcdefGHIJKL"
ANSWERED_BY = "test-model-2024-08-06"  # the model the server says answered


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with start_chat_server() as running:
        yield running


def extractor(server: ChatServer) -> LLMExtractor:
    llm = OpenAIChatLLM(
        "test-model", base_url=server.url, api_key="sk-test", max_retries=0, timeout=5.0
    )
    return LLMExtractor(llm)


def conversation(engine: ContextEngine) -> list[Event]:
    session = engine.create_session(user_id="u1")
    session.add_message("user", f"I work as a nurse. My key is {API_KEY}.", ts=DAY)
    session.add_message("assistant", "Noted! Anything else?", ts=DAY)
    with session.turn() as turn:
        call = turn.add_tool_call("lookup", {"q": "nurse"})
        turn.add_tool_result(call.call_id, content="a tool's text")
    session.add_message("user", "I moved to Porto last month and I love surfing.", ts=DAY)
    return session.events()


def memory(
    kind: str,
    content: str,
    seqs: list[int],
    subject: str | None = None,
    *,
    value: str | None = None,
    retracted: bool = False,
) -> dict:
    return {
        "kind": kind,
        "content": content,
        "subject": subject,
        "value": value,
        "retracted": retracted,
        "keywords": [content.rsplit(maxsplit=1)[-1]],
        "confidence": 0.8,
        "source_seqs": seqs,
    }


def test_valid_answer_becomes_candidates_citing_the_prompted_events(
    engine: ContextEngine, server: ChatServer
) -> None:
    events = conversation(engine)
    nurse, porto = events[0], events[-1]
    server.script(
        Reply.json(
            {
                "memories": [
                    memory("profile", "User works as a nurse", [nurse.seq], "Occupation"),
                    memory("profile", "User lives in Porto", [porto.seq, 999], "residence"),
                    memory("preference", "User loves surfing", [porto.seq]),
                    memory("fact", "User invented this", [999]),  # cites nothing shown
                    memory("fact", "User's key is [SECRET]", [nurse.seq]),
                    memory("preference", "User loves surfing", [porto.seq]),  # duplicate
                ]
            }
        )
    )
    found, report = extractor(server).extract(events)

    assert [(c.kind, c.content, c.subject) for c in found] == [
        (MemoryKind.PROFILE, "User works as a nurse", "occupation"),
        (MemoryKind.PROFILE, "User lives in Porto", "residence"),
        (MemoryKind.PREFERENCE, "User loves surfing", None),
    ]
    assert [[s.event_id for s in c.sources] for c in found] == [
        [nurse.event_id],
        [porto.event_id],  # the out-of-range seq 999 was dropped
        [porto.event_id],
    ]
    assert all(
        s.extractor_version == LLM_VERSION and s.model == ANSWERED_BY
        for c in found
        for s in c.sources
    )
    assert found[1].keywords == ("porto",) and found[1].confidence == 0.8
    assert report.method == f"llm:{ANSWERED_BY}" and not report.fell_back
    assert (report.calls, report.attempts, report.dropped) == (1, 1, 3)
    assert report.usage.total_tokens > 0

    # One request, showing only stored (redacted) messages with their seqs; no tool output.
    (request,) = server.requests
    prompt = request["messages"][-1]["content"]
    assert f"[{nurse.seq}] 2024-05-10 user: I work as a nurse." in prompt
    assert f"[{porto.seq}] 2024-05-10 user: I moved to Porto" in prompt
    assert API_KEY not in str(request) and "[SECRET]" in prompt
    assert "a tool's text" not in prompt


def test_malformed_twice_falls_back_to_the_rules(engine: ContextEngine, server: ChatServer) -> None:
    events = conversation(engine)
    server.script(Reply.text("I think the user is a nurse."), Reply.text('{"memories": [oops'))
    found, report = extractor(server).extract(events)

    assert len(server.requests) == 2  # the structured-output retry, then give up
    assert report.fell_back and report.failure is not None
    assert report.method == "rules (llm failed: llm_response_invalid)"
    assert report.attempts == 2
    assert found == extract_declarative(events)
    assert [c.content for c in found] == [
        "User works as a nurse",
        "User moved to Porto",
        "User loves surfing",
    ]
    assert all(s.extractor_version == RULES_VERSION for c in found for s in c.sources)
    assert all(API_KEY not in c.model_dump_json() for c in found)


def test_unreachable_model_falls_back_and_nothing_to_read_costs_no_call(
    engine: ContextEngine, server: ChatServer
) -> None:
    events = conversation(engine)
    server.script(Reply.server_error(503))
    found, report = extractor(server).extract(events)
    assert report.method == "rules (llm failed: llm_unavailable)"
    assert found == extract_declarative(events)

    tool_only = [e for e in events if e.type.value.startswith("tool")]
    before = len(server.requests)
    assert extractor(server).extract(tool_only) == ([], extractor(server).extract([])[1])
    assert len(server.requests) == before


def test_the_extraction_schema_compiles_and_rejects_a_bad_answer() -> None:
    from agentctx.llm.structured import compile_schema
    from agentctx.memory.extract import EXTRACTION_SCHEMA

    check = compile_schema(EXTRACTION_SCHEMA)
    with pytest.raises(ValueError):
        check({"memories": "not a list"})


def test_the_model_s_statements_are_facts_in_time(
    engine: ContextEngine, server: ChatServer
) -> None:
    """The model names each statement's subject and value, and a retraction: a later
    session's answer supersedes the earlier fact exactly as the rules' would."""
    first = engine.create_session(user_id="u1")
    first.add_message("user", "I'm a nurse and I'm vegetarian.", ts=DAY)
    later = engine.create_session(user_id="u1")
    when = DAY.replace(month=7)
    later.add_message("user", "Actually I'm a paramedic now.", ts=when)
    later.add_message("user", "And I'm not vegetarian anymore.", ts=when)
    e1, (e2, e3) = first.events()[0], later.events()
    server.script(
        Reply.json(
            {
                "memories": [
                    memory("profile", "User is a nurse", [e1.seq], "occupation", value="Nurse"),
                    memory("fact", "User is vegetarian", [e1.seq], "diet", value="vegetarian"),
                ]
            }
        ),
        Reply.json(
            {
                "memories": [
                    memory(
                        "fact",
                        "User is no longer vegetarian",
                        [e3.seq],
                        "diet",
                        value="vegetarian",
                        retracted=True,
                    ),
                    memory(
                        "profile", "User is a paramedic", [e2.seq], "occupation", value="paramedic"
                    ),
                ]
            }
        ),
    )
    consolidator = engine.memory.consolidator
    before, _ = extractor(server).extract(first.events())
    assert {c.data["value"] for c in before} == {"nurse", "vegetarian"}
    consolidator.apply("u1", before)
    after, _ = extractor(server).extract(later.events())
    # In the order said, whatever order the model answered in.
    assert [c.content for c in after] == ["User is a paramedic", "User is no longer vegetarian"]
    assert after[1].retracted and not after[0].retracted
    consolidator.apply("u1", after)
    believed = {m.content for m in engine.memory.list("u1")}
    assert believed == {"User is a paramedic", "User is no longer vegetarian"}
    nurse = next(m for m in engine.memory.list("u1", status="stale") if "nurse" in m.content)
    assert nurse.valid_to == when and nurse.superseded_by is not None
