"""``agentctx bench recall``: loading LoCoMo and REALTALK files, matching, baselines, command."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentctx import ContextEngine
from agentctx.bench.recall import RecallConfig, ingest, turn_draft
from agentctx.bench.recall_baselines import (
    MESSAGE_FRAMING_TOKENS,
    BM25Index,
    ConversationBaselines,
    Embedder,
    EstimateCounter,
    MiniLMEmbedder,
    fill,
    load_embedder,
    recent_order,
    render_turn,
    rrf,
    tokenize,
    turn_costs,
)
from agentctx.bench.recall_data import (
    Turn,
    data_files,
    load_dataset,
    parse_date,
    parse_evidence,
)
from agentctx.bench.recall_score import (
    AGENTCTX,
    HYBRID,
    Outcome,
    QuestionResult,
    aggregate,
    found_evidence,
    judge,
    recall_bound,
    window_text,
)
from agentctx.cli.main import app
from agentctx.errors import InvalidInput
from agentctx.events import EventType, Role

# ---------------------------------------------------------------- generated data

_TOPICS = [
    "I finally repaired the bicycle chain this morning",
    "The bakery on Elm street sells amazing rye bread",
    "My sister adopted a small grey kitten named Pepper",
    "We watched the meteor shower from the hill last night",
    "Work has been busy with the quarterly budget review",
    "I am learning to play the cello, slowly but surely",
    "The museum opened a new exhibit about ancient maps",
    "My flight to Lisbon got moved to Thursday evening",
]


def _locomo_turns(session: int, speakers: tuple[str, str], count: int) -> list[dict[str, Any]]:
    turns = []
    for n in range(1, count + 1):
        text = f"{_TOPICS[(session * 3 + n) % len(_TOPICS)]} (session {session}, line {n})."
        turn: dict[str, Any] = {"speaker": speakers[(n + 1) % 2], "dia_id": f"D{session}:{n}"}
        turn["text"] = text
        if n == 2:
            turn |= {"img_url": ["http://example.invalid/x.jpg"], "blip_caption": "a photo"}
        turns.append(turn)
    return turns


def locomo_file(path: Path) -> Path:
    """Two conversations; the first has quirky evidence ids and an adversarial question."""
    speakers = ("Caro", "Mel")
    conversation = {
        "speaker_a": speakers[0],
        "speaker_b": speakers[1],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": _locomo_turns(1, speakers, 4),
        "session_2_date_time": "10:37 am on 27 June, 2023",
        "session_2": _locomo_turns(2, speakers, 5),
        "session_3_date_time": "12:05 am on 3 Sept, 2023",
        "session_3": _locomo_turns(3, speakers, 3),
    }
    qa = [
        {"question": "What did Caro fix?", "answer": "bike", "evidence": ["D1:1"], "category": 4},
        {"question": "Q two", "answer": "a", "evidence": ["D1:3; D2:1"], "category": 1},
        {"question": "Q three", "answer": "b", "evidence": ["D:11:26", "D2:4"], "category": 2},
        {"question": "Q four", "answer": "c", "evidence": ["D2:1-D2:3"], "category": 3},
        {"question": "Q five", "adversarial_answer": "x", "evidence": ["D1:2"], "category": 5},
        {"question": "Q six", "answer": "d", "evidence": ["D9:1", "D:1"], "category": 1},
    ]
    other = {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "9:00 pm on 1 January, 2024",
        "session_1": _locomo_turns(1, ("Ann", "Bo"), 3),
    }
    data = [
        {"sample_id": "conv-1", "conversation": conversation, "qa": qa},
        {
            "sample_id": "conv-2",
            "conversation": other,
            "qa": [{"question": "Q", "answer": "a", "evidence": ["D1:3"], "category": 2}],
        },
    ]
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def realtalk_file(path: Path) -> Path:
    """One conversation at the top level, per-turn dates, ranges and a removed turn."""
    names = {"speaker_1": "Kim", "speaker_2": "lee"}
    data: dict[str, Any] = {"name": names}
    day = 28
    for session, count in ((1, 6), (2, 4)):
        turns = []
        for n in range(1, count + 1):
            if session == 1 and n == 5:
                continue  # a removed turn: D1:5 names nothing
            speaker = names["speaker_1"] if n % 2 else names["speaker_2"]
            text = f"{_TOPICS[(session + n) % len(_TOPICS)]}, part {session}.{n}"
            hour = 9 + n
            turns.append(
                {
                    "clean_text": text,
                    "speaker": speaker,
                    "date_time": f"{day + session:02d}.12.2023, {hour:02d}:{n * 7:02d}:05",
                    "img_file": [],
                    "img_url": [],
                    "dia_id": f"D{session}:{n}",
                }
            )
        data[f"session_{session}"] = turns
        data[f"events_session_{session}"] = {"agent_a": [], "agent_b": []}
        data[f"session_{session}_date_time"] = f"{day + session:02d}.12.2023, 10:07:05"
    data["qa"] = [
        {"question": "What is Kim learning?", "answer": "cello", "evidence": ["D1:2-D1:4"],
         "category": 1},
        {"question": "Q2", "answer": "a", "evidence": ["D1:5", "D2:3. D2:4"], "category": 2},
        {"question": "Q3", "answer": "b", "evidence": ["D1:5"], "category": 3},
        {"question": "Q4", "answer": "c", "evidence": ["D1:6-D2:1;D2:2"], "category": 3},
    ]  # fmt: skip
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _turns(texts: Sequence[str], speakers: tuple[str, str] = ("Ann", "Bo")) -> list[Turn]:
    start = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    return [
        Turn(
            dia_id=f"D1:{i + 1}",
            speaker=speakers[i % 2],
            text=text,
            ts=start.replace(minute=i % 60),
            index=i,
            session=1,
        )
        for i, text in enumerate(texts)
    ]


# ---------------------------------------------------------------- loading


def test_dates_of_both_layouts() -> None:
    assert parse_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_date("12:05 am on 3 Sept, 2023") == datetime(2023, 9, 3, 0, 5, tzinfo=UTC)
    assert parse_date("12:30 pm on 1 Jan 2024") == datetime(2024, 1, 1, 12, 30, tzinfo=UTC)
    assert parse_date("29.12.2023, 00:51:12") == datetime(2023, 12, 29, 0, 51, 12, tzinfo=UTC)
    for bad in ("2023-05-08", "13:10 pm on 8 May, 2023", "1:56 pm on 31 February, 2023", ""):
        with pytest.raises(InvalidInput, match="unrecognised date"):
            parse_date(bad)


def test_evidence_ids_are_cleaned() -> None:
    turns = _turns([f"turn {i}" for i in range(6)])  # D1:1 .. D1:6
    turns.append(Turn("D2:1", "Ann", "next day", turns[0].ts, 6, 2))
    assert parse_evidence(["D1:1; D1:3"], turns) == (["D1:1", "D1:3"], 0)
    assert parse_evidence(["D1:2-D1:4", "D1:3"], turns) == (["D1:2", "D1:3", "D1:4"], 0)
    assert parse_evidence(["D1:5-6"], turns) == (["D1:5", "D1:6"], 0)
    assert parse_evidence(["D1:4. D1:5", "D1:6:D2:1"], turns) == (
        ["D1:4", "D1:5", "D1:6", "D2:1"],
        0,
    )
    # Ranges across sessions take the turns between the ends, in conversation order.
    assert parse_evidence(["D1:6-D2:1"], turns) == (["D1:6", "D2:1"], 0)
    # Not ids, or ids naming no turn: dropped and counted.
    assert parse_evidence(["D:11:26", "D58", "D9:1", "", 7], turns) == ([], 4)
    assert parse_evidence(["D1:5-D1:9"], turns) == (["D1:5", "D1:6"], 3)
    assert parse_evidence(["D01:02"], turns) == (["D1:2"], 0)


def test_locomo_layout(tmp_path: Path) -> None:
    dataset = load_dataset(locomo_file(tmp_path / "locomo.json"))
    assert dataset.layout == "locomo"
    first, second = dataset.conversations
    assert (first.sample_id, first.speaker_1, first.speaker_2) == ("conv-1", "Caro", "Mel")
    assert len(first.turns) == 12 and len(second.turns) == 3
    assert [t.index for t in first.turns] == list(range(12))
    # Every turn carries its session's date.
    assert first.turn("D1:4").ts == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert first.turn("D2:1").ts == datetime(2023, 6, 27, 10, 37, tzinfo=UTC)
    assert first.turn("D3:3").ts == datetime(2023, 9, 3, 0, 5, tzinfo=UTC)
    assert first.turn("D2:1").session == 2
    kept = {q.question: q for q in first.questions}
    assert list(kept) == ["What did Caro fix?", "Q two", "Q three", "Q four"]
    assert kept["Q two"].evidence == ("D1:3", "D2:1")
    assert kept["Q three"].evidence == ("D2:4",)
    assert kept["Q four"].evidence == ("D2:1", "D2:2", "D2:3")
    assert kept["What did Caro fix?"].category == 4 and kept["What did Caro fix?"].answer == "bike"
    stats = first.stats
    assert (stats.questions, stats.adversarial, stats.no_evidence) == (6, 1, 1)
    assert stats.dropped_ids == 3  # "D:11:26", "D9:1", "D:1"
    assert dataset.stats.questions == 7


def test_realtalk_layout(tmp_path: Path) -> None:
    dataset = load_dataset(realtalk_file(tmp_path / "Chat_9_Kim_Lee.json"))
    assert dataset.layout == "realtalk"
    (conv,) = dataset.conversations
    assert (conv.sample_id, conv.speaker_1, conv.speaker_2) == ("Chat_9_Kim_Lee", "Kim", "lee")
    assert [t.dia_id for t in conv.turns] == [
        "D1:1", "D1:2", "D1:3", "D1:4", "D1:6", "D2:1", "D2:2", "D2:3", "D2:4",
    ]  # fmt: skip
    # Per-turn dates, not the session's.
    assert conv.turn("D1:3").ts == datetime(2023, 12, 29, 12, 21, 5, tzinfo=UTC)
    assert conv.turn("D2:4").ts == datetime(2023, 12, 30, 13, 28, 5, tzinfo=UTC)
    assert conv.turn("D1:2").text.endswith("part 1.2")
    evidence = {q.question: q.evidence for q in conv.questions}
    assert evidence == {
        "What is Kim learning?": ("D1:2", "D1:3", "D1:4"),
        "Q2": ("D2:3", "D2:4"),
        "Q4": ("D1:6", "D2:1", "D2:2"),
    }
    assert (conv.stats.no_evidence, conv.stats.dropped_ids) == (1, 2)  # Q3; D1:5 twice


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        data_files([tmp_path / "missing.json"])
    with pytest.raises(InvalidInput, match=r"no \.json files"):
        data_files([tmp_path])
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidInput, match="not valid JSON"):
        load_dataset(broken)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"messages": []}), encoding="utf-8")
    with pytest.raises(InvalidInput, match="neither the LoCoMo layout"):
        load_dataset(other)
    no_date = tmp_path / "no_date.json"
    no_date.write_text(
        json.dumps([{"sample_id": "c", "conversation": {"speaker_a": "A", "speaker_b": "B",
                     "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}}]),
        encoding="utf-8",
    )  # fmt: skip
    with pytest.raises(InvalidInput, match="session_1_date_time"):
        load_dataset(no_date)


def test_a_folder_gives_its_json_files_in_order(tmp_path: Path) -> None:
    realtalk_file(tmp_path / "b.json")
    locomo_file(tmp_path / "a.json")
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    assert [p.name for p in data_files([tmp_path])] == ["a.json", "b.json"]


# ---------------------------------------------------------------- matching


def test_window_text_and_matching() -> None:
    messages = [
        {"role": "system", "content": "Earlier:\n[2024-01-01] Kim:  I   adopted a\nkitten"},
        {"role": "user", "content": [{"type": "text", "text": "Pepper is grey."},
                                     {"type": "image_url", "image_url": {"url": "data:,"}}]},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "user", "content": "Who is Pepper?"},
    ]  # fmt: skip
    text = window_text(messages, question="Who is  Pepper?")
    assert "Who is Pepper?" not in text
    evidence = {
        "D1:1": "I adopted a kitten",  # whitespace differs: still found
        "D1:2": "Pepper is grey.",  # inside a text part
        "D1:3": "Pepper is black.",
        "D1:4": "   ",  # no text: never found
    }
    assert found_evidence(text, evidence) == ["D1:1", "D1:2"]
    # The question's own text is not evidence of a turn inside it.
    assert found_evidence(window_text(messages, "Who is Pepper?"), {"x": "Who is"}) == []


# ---------------------------------------------------------------- baselines


class _CharCounter:
    """One token per character: makes costs easy to reason about."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


def test_fill_contiguous_and_skipping() -> None:
    costs = [5, 50, 5, 5]
    assert fill([3, 2, 1, 0], costs, 20, contiguous=True) == [3, 2]
    assert fill([3, 2, 1, 0], costs, 20, contiguous=False) == [3, 2, 0]
    assert fill([1], costs, 49, contiguous=False) == []


def test_costs_use_the_counter_and_message_framing() -> None:
    turns = _turns(["hello there"])
    assert render_turn(turns[0]) == "[2024-03-01 09:00] Ann: hello there"
    assert turn_costs(turns, _CharCounter()) == [
        len(render_turn(turns[0])) + MESSAGE_FRAMING_TOKENS
    ]
    estimate = EstimateCounter()
    assert turn_costs(turns, estimate) == [estimate.count(render_turn(turns[0])) + 4]


def _filler(n: int) -> list[str]:
    return [f"Filler remark number {i} about nothing in particular today." for i in range(n)]


def test_recency_finds_only_the_last_turns() -> None:
    texts = [*_filler(30), "The key is under the blue flowerpot.", "Thanks, see you soon!"]
    turns = _turns(texts)
    costs = turn_costs(turns, EstimateCounter())
    budget = costs[-1] + costs[-2] + costs[-3]  # room for exactly the last three turns
    taken = fill(recent_order(len(turns)), costs, budget, contiguous=True)
    assert sorted(taken) == [29, 30, 31]
    early = fill(recent_order(len(turns)), costs, budget - 1, contiguous=True)
    assert sorted(early) == [30, 31]


def test_bm25_finds_the_exact_keyword_turn() -> None:
    texts = [*_filler(20), "My passport number is stored in the kitchen drawer.", *_filler(20)]
    turns = _turns(texts)
    assert tokenize("Where is MY passport?") == ["passport"]
    index = BM25Index(turns)
    ranking = index.ranking("Where is my passport kept?")
    assert ranking == [20]  # only the keyword turn scores above zero
    costs = turn_costs(turns, EstimateCounter())
    assert fill(ranking, costs, costs[20], contiguous=False) == [20]
    assert index.ranking("the of and") == []  # stopwords only: no ranking
    assert BM25Index(_turns(["ok", "yes"])).ranking("anything") == []


def test_rrf_fuses_by_rank() -> None:
    # 2 is second in both lists and beats 0 and 1, each first in one list and absent in the other.
    assert rrf([[0, 2, 3], [1, 2, 3]]) == [2, 3, 0, 1]
    assert rrf([[5, 4]], k=0) == [5, 4]
    assert rrf([]) == []


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    loaded = load_embedder()  # without a models folder: the model package's own files
    assert isinstance(loaded, MiniLMEmbedder)
    return loaded


@pytest.mark.slow
def test_hybrid_finds_a_paraphrase_bm25_misses(embedder: Embedder) -> None:
    texts = [
        *_filler(15),
        "We finally adopted a golden retriever puppy last weekend!",
        *_filler(15),
    ]
    baselines = ConversationBaselines(_turns(texts), embedder)
    assert baselines.has_dense and baselines.embed_seconds is not None
    question = "What kind of dog did they get?"
    assert baselines.bm25_ranking(question) == []  # no word in common
    hybrid = baselines.hybrid(question)
    assert sorted(hybrid) == list(range(len(texts)))
    assert hybrid[0] == 15
    vectors = embedder.embed(["a dog", "a puppy"])
    assert len(vectors) == 2 and len(vectors[0]) == 384
    assert abs(sum(float(x) ** 2 for x in vectors[0]) - 1.0) < 1e-4  # unit length


# ---------------------------------------------------------------- scoring


def _result(category: int, evidence: int, found: dict[str, dict[int, int]]) -> QuestionResult:
    ids = [f"D1:{i}" for i in range(1, evidence + 1)]
    return QuestionResult(
        file="f.json",
        conversation="c",
        question="q",
        category=category,
        evidence=ids,
        outcomes={
            system: {
                b: Outcome(found=ids[:n], tokens=b // 2, ms=float(n + 1)) for b, n in per.items()
            }
            for system, per in found.items()
        },
    )


def test_aggregate_and_targets() -> None:
    results = [
        _result(1, 2, {AGENTCTX: {1000: 2}, HYBRID: {1000: 1}}),
        _result(2, 4, {AGENTCTX: {1000: 3}, HYBRID: {1000: 1}}),
    ]
    ours = aggregate(results, AGENTCTX, 1000)
    hybrid = aggregate(results, HYBRID, 1000)
    assert ours is not None and hybrid is not None
    assert ours.recall == pytest.approx((1.0 + 0.75) / 2)
    assert ours.turn_recall == pytest.approx(5 / 6)
    assert hybrid.recall == pytest.approx((0.5 + 0.25) / 2)
    assert ours.tokens_mean == 500 and ours.latency.count == 2
    assert aggregate(results, AGENTCTX, 2000) is None
    assert recall_bound(0.6) == pytest.approx(0.8) and recall_bound(0.75) == pytest.approx(0.875)
    # semantic (for questions about a long past): at most half of hybrid's misses.
    recall_target, latency_target = judge([ours, hybrid], [1000], "semantic")
    assert recall_target.bound == pytest.approx(1 - (1 - 0.375) / 2)
    assert recall_target.passed is True  # 0.875 >= 0.6875
    assert latency_target.passed is True  # p95 4 ms
    failing = judge([ours.model_copy(update={"recall": 0.6}), hybrid], [1000], "semantic")[0]
    assert failing.passed is False
    missing = judge([hybrid], [1000], "semantic")
    assert [t.passed for t in missing] == [None, None]
    assert missing[0].note == "agentctx was not measured"
    # The default strategy (for agent loops): at least plain hybrid's, at 4k and 8k only.
    at_4k = [c.model_copy(update={"budget": 4000}) for c in (ours, hybrid)]
    default = judge(at_4k, [4000])[0]
    assert default.bound == pytest.approx(0.375) and default.passed is True
    below = judge([at_4k[0].model_copy(update={"recall": 0.3}), at_4k[1]], [4000])[0]
    assert below.passed is False
    assert judge([ours, hybrid], [1000])[0].passed is None  # no target at 1k


def test_quick_config_and_budgets() -> None:
    config = RecallConfig.quick(data=[Path("x.json")], budgets=[4000, 1000, 1000])
    assert config.budgets == [1000, 4000]
    assert (config.limit_questions, config.max_conversations) == (10, 1)
    assert config.systems == ["agentctx", "recent", "bm25", "hybrid"]
    assert RecallConfig(data=[Path("x")], agentctx=False).systems == ["recent", "bm25", "hybrid"]
    with pytest.raises(ValueError, match="positive"):
        RecallConfig(data=[Path("x")], budgets=[0])


# ---------------------------------------------------------------- agentctx ingestion


def test_ingestion_writes_one_event_per_turn(tmp_path: Path) -> None:
    (conv,) = load_dataset(realtalk_file(tmp_path / "chat.json")).conversations
    with ContextEngine(home=tmp_path / "home", redaction={"enabled": False}) as engine:
        session = ingest(engine, conv, "bench-user")
        events = session.events()
    assert [e.text for e in events] == [t.text for t in conv.turns]
    assert [e.ts for e in events] == [t.ts for t in conv.turns]
    assert [e.author for e in events] == [t.speaker for t in conv.turns]
    assert {(e.author, e.role, e.type) for e in events} == {
        ("Kim", Role.USER, EventType.USER_INPUT),
        ("lee", Role.ASSISTANT, EventType.AGENT_RESPONSE),
    }
    draft = turn_draft(conv.turns[1], conv)
    assert draft.role is Role.ASSISTANT and draft.author == "lee"


# ---------------------------------------------------------------- the command


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(app, ["bench", "recall", *args])


@pytest.mark.slow
def test_cli_baselines_on_both_layouts(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    locomo_file(folder / "locomo.json")
    realtalk_file(folder / "realtalk.json")
    out, md = tmp_path / "recall.json", tmp_path / "recall.md"
    result = _run(["--data", str(folder), "--budget", "60,100000", "--no-agentctx",
                   "--out", str(out), "--markdown", str(md)])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [f["file"] for f in data["files"]] == ["locomo.json", "realtalk.json"]
    assert [f["questions"] for f in data["files"]] == [5, 3]
    assert len(data["questions"]) == 8
    pooled = {(c["system"], c["budget"]): c for c in data["pooled"]}
    assert set(pooled) == {(s, b) for s in ("recent", "bm25", "hybrid") for b in (60, 100000)}
    # A budget larger than any conversation holds everything: recency finds all evidence.
    assert pooled["recent", 100000]["recall"] == 1.0
    assert pooled["hybrid", 100000]["recall"] == 1.0
    assert all(pooled[s, 60]["tokens_mean"] <= 60 for s in ("recent", "bm25", "hybrid"))
    assert pooled["recent", 60]["recall"] < 1.0
    assert data["questions"][0]["question"] == "What did Caro fix?"
    assert set(data["by_file"]) == {"locomo.json", "realtalk.json"}
    assert {int(k) for k in data["by_category"]} == {1, 2, 3, 4}
    assert [t["passed"] for t in data["targets"]] == [None] * 4
    text = md.read_text(encoding="utf-8")
    assert "Evidence recall by question category" in text and "4 single-hop" in text
    assert "Evidence recall by file" in text
    assert "Targets" in result.output


def test_cli_rejects_bad_options(tmp_path: Path) -> None:
    data = str(locomo_file(tmp_path / "l.json"))
    assert _run(["--data", data, "--budget", "10,x"]).exit_code == 2
    assert _run(["--data", data, "--budget", "0"]).exit_code == 2
    assert _run(["--data", data, "--no-agentctx", "--no-baselines"]).exit_code == 2
    missing = _run(["--data", str(tmp_path / "nope.json"), "--no-agentctx"])
    assert missing.exit_code == 1 and "does not exist" in " ".join(missing.output.split())


@pytest.mark.slow
def test_cli_measures_build_context(tmp_path: Path) -> None:
    """The agentctx column: real build_context windows, scored and timed."""
    data = realtalk_file(tmp_path / "realtalk.json")
    out = tmp_path / "recall.json"
    result = _run(["--data", str(data), "--budget", "200,100000", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    pooled = {(c["system"], c["budget"]): c for c in report["pooled"]}
    ours_small, ours_large = pooled["agentctx", 200], pooled["agentctx", 100000]
    assert ours_small["questions"] == ours_large["questions"] == 3
    # Everything fits in a budget far above the conversation: every evidence turn is there.
    assert ours_large["recall"] == 1.0
    assert ours_small["tokens_mean"] <= 200
    assert ours_small["latency"]["p95_ms"] > 0
    assert report["ingestion"][0]["agentctx_s"] > 0
    assert report["ingestion"][0]["first_build_s"] > 0
    targets = report["targets"]
    assert len(targets) == 4
    # The default strategy has recall targets at 4k and 8k only; latency at every budget.
    assert [t["passed"] is not None for t in targets] == [False, True, False, True]
    for question in report["questions"]:
        window = question["outcomes"]["agentctx"]["200"]
        assert set(window["found"]) <= set(question["evidence"])
