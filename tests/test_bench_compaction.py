"""``agentctx bench compaction``: the generated session, the model server, the command."""

from __future__ import annotations

import itertools
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentctx.bench.compaction import CompactionConfig, replay, run_compaction_benchmark
from agentctx.bench.compaction_engine import compaction_overrides, open_engine
from agentctx.bench.compaction_server import API_KEY, running_chat_server, schema_value
from agentctx.bench.compaction_session import MAX_OUTPUT_CHARS, generate_session
from agentctx.bench.recall_data import load_dataset
from agentctx.cli.main import app
from agentctx.config import Settings
from agentctx.llm.openai_chat import OpenAIChatLLM
from agentctx.tokens import EstimateCounter

_LINES = [
    "I finally repaired the bicycle chain this morning before work",
    "The bakery on Elm street sells amazing rye bread on Fridays",
    "My sister adopted a small grey kitten named Pepper last week",
    "We watched the meteor shower from the hill near the lake",
    "Work has been busy with the quarterly budget review again",
    "I am learning to play the cello, slowly but surely improving",
    "The museum opened a new exhibit about ancient maps and ships",
    "My flight to Lisbon got moved to Thursday evening at nine",
    "The garden tomatoes are finally turning red after the rain",
    "Our team won the trivia night thanks to a question on volcanoes",
]


@pytest.fixture
def no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bench engines take settings from the environment: no fsync per commit here, where
    what is checked is tokens and summaries, not commit cost."""
    monkeypatch.setenv("AGENTCTX_SQLITE_SYNCHRONOUS", "OFF")


def locomo_file(path: Path, sessions: int = 3, turns: int = 14) -> Path:
    """One LoCoMo conversation of ``sessions`` x ``turns`` distinct turns, with questions."""
    speakers = ("Caro", "Mel")
    conversation: dict[str, Any] = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
    for s in range(1, sessions + 1):
        conversation[f"session_{s}_date_time"] = f"1:{10 + s:02d} pm on {s} May, 2023"
        conversation[f"session_{s}"] = [
            {
                "speaker": speakers[(n + 1) % 2],
                "dia_id": f"D{s}:{n}",
                "text": f"{_LINES[(s * 7 + n) % len(_LINES)]} (day {s}, note {n}).",
            }
            for n in range(1, turns + 1)
        ]
    qa = [
        {
            "question": "What did Caro repair?",
            "answer": "bike",
            "evidence": ["D1:3"],
            "category": 4,
        },
        {"question": "Where is the bakery?", "answer": "Elm", "evidence": ["D2:2"], "category": 1},
        {
            "question": "What is the kitten called?",
            "answer": "P",
            "evidence": ["D3:5"],
            "category": 2,
        },
    ]
    path.write_text(json.dumps([{"sample_id": "conv-1", "conversation": conversation, "qa": qa}]))
    return path


def test_generated_session_is_deterministic_with_large_tool_outputs(tmp_path: Path) -> None:
    conversation = load_dataset(locomo_file(tmp_path / "chat.json")).conversations[0]
    first = generate_session(conversation, turns=60, seed=7)
    assert first == generate_session(conversation, turns=60, seed=7)
    assert first != generate_session(conversation, turns=60, seed=8)
    # 42 dialogue turns give 60 user/agent pairs by wrapping around, in time order.
    assert [t.index for t in first] == list(range(60))
    assert all(a.ts < b.ts for a, b in itertools.pairwise(first))
    assert first[0].user == conversation.turns[0].text
    assert first[0].agent == conversation.turns[1].text
    calls = [c for t in first for c in t.tool_calls]
    assert 10 <= sum(1 for t in first if t.tool_calls) <= 40
    assert {c.name for c in calls} >= {"search_records", "fetch_page"}
    counter = EstimateCounter()
    sizes = [counter.count(c.output()) for c in calls]
    assert min(len(c.output()) for c in calls) >= 4_000
    assert max(len(c.output()) for c in calls) <= MAX_OUTPUT_CHARS
    assert sum(sizes) / len(sizes) > 2_000
    records = next(c for c in calls if c.name == "search_records").data
    assert isinstance(records, list) and len(records) >= 20
    assert {"id", "title", "amount", "status"} <= set(records[0])
    assert len({c.call_id for c in calls}) == len(calls)


def test_compaction_settings_are_one_mapping() -> None:
    on, off = compaction_overrides(True), compaction_overrides(False)
    assert on.keys() == off.keys() >= {"thread_summary", "tool_output"}
    assert all(value == {"enabled": True} for value in on.values())
    assert all(value == {"enabled": False} for value in off.values())
    assert ("topics" in on) == ("topics" in Settings.model_fields)
    # Every key is a real setting: an engine accepts the mapping as it is.
    Settings(**on)


@pytest.mark.usefixtures("no_fsync")
def test_uncompacted_tokens_are_those_of_a_full_window_of_everything(tmp_path: Path) -> None:
    """The "without compaction" figure, counted incrementally, is what build_context
    returns with compaction off, strategy full and no effective budget."""
    conversation = load_dataset(locomo_file(tmp_path / "chat.json")).conversations[0]
    turns = generate_session(conversation, turns=8, seed=1, tool_rate=0.6)
    engine = open_engine(tmp_path / "off", compaction=False, embedder="none", llm=None)
    try:
        points, session = replay(turns, engine, budget=10**8, say=lambda _m: None)
        window = session.build_context(
            query=turns[-1].user,
            budget=10**8,
            strategy="full",
            config={"full": {"max_messages": 10**6}},
        )
    finally:
        engine.close()
    assert any(t.tool_calls for t in turns)
    # Without compaction the budget-less window is the history itself, turn after turn.
    assert [p.tokens_on for p in points] == sorted(p.tokens_on for p in points)
    answer = EstimateCounter().count(turns[-1].agent) + 4
    history = points[-1].tokens_off + answer
    # The window adds only its fixed sections (the pinned instruction) to the history.
    assert history <= window.tokens <= history + 150


def test_model_server_speaks_the_openai_protocol() -> None:
    schema = {
        "type": "object",
        "properties": {
            "summary": {"type": "string", "minLength": 1},
            "topics": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string", "maxLength": 40},
                        "start": {"type": "integer", "minimum": 1},
                        "kind": {"enum": ["chat", "task"]},
                    },
                    "required": ["title", "start", "kind"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["summary", "topics"],
        "additionalProperties": False,
    }
    prompt = "\n".join(_LINES)
    with running_chat_server() as server:
        llm = OpenAIChatLLM(server.model, base_url=server.url, api_key=API_KEY, max_retries=0)
        answer = llm.complete(
            [{"role": "system", "content": "Summarize."}, {"role": "user", "content": prompt}],
            schema=schema,
            schema_name="bench_test",
            max_tokens=80,
        )
        again = llm.complete(
            [{"role": "system", "content": "Summarize."}, {"role": "user", "content": prompt}],
            schema=schema,
            schema_name="bench_test",
            max_tokens=80,
        )
        request = urllib.request.Request(
            f"{server.url}/chat/completions",
            data=b'{"messages": []}',
            headers={"Content-Type": "application/json"},
        )
        try:
            urllib.request.urlopen(request, timeout=10)
            raise AssertionError("a request without the key was answered")
        except urllib.error.HTTPError as exc:
            denied = (exc.code, json.loads(exc.read()))
        llm.close()
    assert answer.data == again.data  # deterministic
    data = answer.data
    assert isinstance(data, dict)
    summary = data["summary"]
    assert isinstance(summary, str) and summary
    assert set(summary.splitlines()) < set(_LINES)  # extractive: some of the prompt's lines
    assert EstimateCounter().count(summary) <= 80
    assert data["topics"] == [
        {"title": " ".join(summary.split()[:8])[:40], "start": 1, "kind": "chat"}
    ]
    assert answer.usage.prompt_tokens > answer.usage.completion_tokens > 0
    assert denied[0] == 401 and "message" in denied[1]["error"]
    assert server.requests == 3 and server.failures == 1
    assert server.by_schema == {"bench_test": 2, "-": 1}
    assert schema_value({"type": "number", "exclusiveMinimum": 2}, "x") == 3.0
    assert schema_value({"type": ["string", "null"]}, "x") is None  # nullable: not said
    span = {"type": "object", "properties": {"end_index": {"type": "integer", "minimum": 0}}}
    assert schema_value(span, "x", last_index=7) == {"end_index": 7}


@pytest.mark.usefixtures("no_fsync")
def test_command_keeps_the_compacted_curve_under_the_budget(tmp_path: Path) -> None:
    data = locomo_file(tmp_path / "chat.json")
    out, markdown = tmp_path / "report.json", tmp_path / "report.md"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "compaction",
            "--data",
            str(data),
            "--turns",
            "24",
            "--tool-rate",
            "0.35",
            "--budget",
            "1500",
            "--embedder",
            "none",
            "--recall-budget",
            "500,1500",
            "--out",
            str(out),
            "--markdown",
            str(markdown),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    curve = report["curve"]
    assert [p["turn"] for p in curve] == list(range(1, 25))
    assert max(p["tokens_on"] for p in curve) <= 1500 == report["config"]["budget"]
    assert max(p["tokens_off"] for p in curve) > 3 * 1500
    assert curve[-1]["tokens_off"] > curve[0]["tokens_off"]  # the whole history grows
    assert report["first_turn_over_budget_off"] is not None
    assert report["summaries"] >= 1 and report["summary_methods"] == ["offline"]
    assert any(p["summarized"] for p in curve)
    assert report["compaction"]["count"] == 24
    assert report["compaction_by_kind"]["thread_summary"]["count"] == 24
    for point in curve:  # the kinds' shares are inside the turn's total
        assert sum(point["compaction_by_kind"].values()) <= point["compaction_ms"]
    assert [r["budget"] for r in report["recall"]] == [500, 1500]
    assert report["recall_questions"] == 3
    assert all(0.0 <= r["on"] <= 1.0 and 0.0 <= r["off"] <= 1.0 for r in report["recall"])
    verdicts = {v["name"]: v for v in report["verdicts"]}
    assert verdicts["tokens per model call with compaction <= budget"]["passed"] is True
    text = markdown.read_text()
    assert "Tokens per model call, budget 1,500" in text
    assert "| 20 |" in text and "| 24 |" in text  # every 20th turn and the last
    assert "Evidence recall, compaction off vs on" in text and "CPU:" in text
    assert "| … of which thread_summary jobs | 24 |" in text
    assert "| … of which the job queue and other jobs | 24 |" in text


@pytest.mark.usefixtures("no_fsync")
def test_llm_server_mode_summarizes_through_the_server(tmp_path: Path) -> None:
    config = CompactionConfig(
        data=locomo_file(tmp_path / "chat.json"),
        turns=12,
        budget=1200,
        seed=3,
        tool_rate=0.5,
        llm_server=True,
        embedder="none",
        recall=False,
    )
    report = run_compaction_benchmark(config)
    assert report.config.mode == "llm-server"
    assert report.summaries >= 1
    assert report.summary_methods == ["llm:openai:agentctx-bench-summarizer"]
    assert report.llm_requests is not None and report.llm_requests >= report.summaries
    assert report.llm_failures == 0
    assert report.llm_by_schema["thread_summary"] >= report.summaries
    assert report.llm_ms is not None and report.llm_ms.count == report.llm_requests
    assert report.max_tokens_on <= 1200 < report.max_tokens_off
    assert report.recall == []
    compaction_verdict = next(v for v in report.verdicts if "p95" in v.name)
    assert compaction_verdict.passed is None  # the latency target is for offline
