"""``agentctx bench memory``: a tiny chat run for real, its figures checked by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agentctx.bench.memory import Ranked, first_hit, hit_in_budget, judge, run_memory_benchmark
from agentctx.bench.memory_models import LatencyFigures, MemoryBenchConfig, MemoryBenchReport
from agentctx.bench.memory_report import memory_markdown
from agentctx.cli.bench import bench_app
from conftest import new_pg_database
from llm.openai_chat_server import Reply, start_chat_server

USER, FRIEND = "Ana", "Ben"


def _turn(session: int, n: int, speaker: str, text: str) -> dict[str, Any]:
    return {
        "speaker": speaker,
        "dia_id": f"D{session}:{n}",
        "clean_text": text,
        "date_time": f"0{session}.03.2024, 10:0{n}:00",
    }


def write_chat(path: Path) -> Path:
    """A REALTALK-layout chat: the user states facts in two sessions, questions cite them."""
    chat = {
        "name": {"speaker_1": USER, "speaker_2": FRIEND},
        "session_1": [
            _turn(1, 1, USER, "Hi Ben! I work as a nurse at the city hospital."),
            _turn(1, 2, FRIEND, "Nice, I had no idea. How are the night shifts?"),
            _turn(1, 3, USER, "I love sushi, we should get some after my shift."),
            _turn(1, 4, FRIEND, "I just adopted a parrot called Kiwi, she talks all day."),
        ],
        "session_2": [
            _turn(2, 1, USER, "I live in Lisbon now, the move went fine."),
            _turn(2, 2, FRIEND, "Lisbon sounds lovely, enjoy the sunshine there."),
            _turn(2, 3, USER, "My favourite sport is tennis, I play every Sunday."),
        ],
        "qa": [
            {"question": "What does Ana work as?", "answer": "nurse", "category": 1,
             "evidence": ["D1:1"]},
            {"question": "Which food does Ana love?", "answer": "sushi", "category": 1,
             "evidence": ["D1:3"]},
            {"question": "Where does Ana live?", "answer": "Lisbon", "category": 1,
             "evidence": ["D2:1"]},
            {"question": "What is Ana's favourite sport?", "answer": "tennis", "category": 1,
             "evidence": ["D2:3"]},
            {"question": "What pet did Ben adopt?", "answer": "a parrot", "category": 1,
             "evidence": ["D1:4"]},
        ],
    }  # fmt: skip
    path.write_text(json.dumps(chat), encoding="utf-8")
    return path


def test_first_hit_and_token_budget() -> None:
    results = [
        Ranked(frozenset({"e1"}), 300),
        Ranked(frozenset({"e2", "e3"}), 150),
        Ranked(frozenset({"e4"}), 100),
    ]
    assert first_hit(results, frozenset({"e3"})) == 2
    assert first_hit(results, frozenset({"e9"})) is None
    assert hit_in_budget(results, frozenset({"e3"}), 500)  # 450 tokens spent
    assert not hit_in_budget(results, frozenset({"e4"}), 500)  # 550: the third does not fit
    assert hit_in_budget(results, frozenset({"e4"}), 550)


def test_targets_pass_fail_or_not_measured() -> None:
    rows = [
        LatencyFigures(backend="sqlite", size=100_000, fill_s=1, p50_ms=10, p95_ms=60, dense=True),
        LatencyFigures(backend="postgresql", size=10_000, fill_s=1, p50_ms=1, p95_ms=2, dense=True),
    ]
    sqlite, pg = judge(rows)
    assert sqlite.passed is False and "60.0" in sqlite.detail
    assert pg.passed is None and "not measured" in pg.detail
    rows[0] = rows[0].model_copy(update={"p95_ms": 50.0})
    assert judge(rows)[0].passed is True


def test_tiny_chat_recall_from_real_retrieval(tmp_path: Path) -> None:
    config = MemoryBenchConfig(
        data=write_chat(tmp_path / "chat.json"), embedder="hashing", sizes=[300], queries=5
    )
    report = run_memory_benchmark(config)
    chat = report.chat
    assert chat is not None
    assert (chat.sessions, chat.turns, chat.user_turns, chat.questions) == (2, 7, 4, 5)
    offline = chat.offline
    # Rules read the user's own statements of both sessions: job, food, residence, sport.
    assert offline.memories >= 4
    assert offline.by_kind.get("profile", 0) >= 2 and offline.by_kind.get("preference", 0) >= 1
    assert offline.ms_per_turn is not None and offline.ms_per_turn.count == 2
    by_question = {q.question: q for q in chat.questions_detail}
    for question in ("What does Ana work as?", "Where does Ana live?"):
        assert by_question[question].ranks["memories"] is not None, question
        assert by_question[question].in_budget["memories"]
    # Ben's parrot is said by the assistant side: no memory cites it, a raw turn does.
    parrot = by_question["What pet did Ben adopt?"]
    assert parrot.ranks["memories"] is None and not parrot.user_evidence
    assert parrot.ranks["raw turns"] is not None
    # The figures are the per-question outcomes added up.
    hits = sum(q.ranks["memories"] is not None for q in chat.questions_detail)
    assert offline.recall.hits_at_k == hits
    assert offline.recall.recall_at_k == hits / 5
    assert offline.recall.user_questions == 4
    raw_hits = sum(q.ranks["raw turns"] is not None for q in chat.questions_detail)
    assert chat.raw_turns.hits_at_k == raw_hits == 5  # seven turns: every one is retrieved
    # Part (2) at 300 memories; the targets' sizes were not measured.
    assert [(r.backend, r.size) for r in report.latency] == [("sqlite", 300)]
    assert report.latency[0].p95_ms >= report.latency[0].p50_ms > 0
    assert [v.passed for v in report.verdicts] == [None, None]
    assert chat.with_llm is None
    # The report round-trips through JSON.
    again = MemoryBenchReport.model_validate_json(report.model_dump_json())
    assert again == report
    text = memory_markdown(report)
    assert "| raw turns (event search) | 100.0% (5/5)" in text
    assert "not measured at 1,000,000" in text


def test_llm_extraction_counts_calls_and_tokens(tmp_path: Path) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        # One memory per session, citing its first message (seq 1): D1:1, then D2:1.
        prompt = json.dumps(body["messages"])
        content = "Ana works as a nurse" if "city hospital" in prompt else "Ana lives in Lisbon"
        memory = {
            "kind": "profile",
            "content": content,
            "subject": None,
            "value": None,
            "retracted": False,
            "keywords": content.lower().split()[1:],
            "confidence": 0.9,
            "source_seqs": [1],
        }
        return Reply.json({"memories": [memory]})

    with start_chat_server(default=answer) as server:
        config = MemoryBenchConfig(
            data=write_chat(tmp_path / "chat.json"),
            embedder="hashing",
            sizes=[],
            llm_url=server.url,
            llm_model="test-model",
            llm_api_key="sk-test",
        )
        report = run_memory_benchmark(config)
        usages = list(server.usages)
    chat = report.chat
    assert chat is not None and chat.with_llm is not None and chat.with_llm.llm is not None
    usage = chat.with_llm.llm
    assert usage.calls == len(usages) == 2  # one call per session
    assert usage.fallbacks == 0
    assert usage.prompt_tokens == sum(u["prompt_tokens"] for u in usages)
    assert usage.completion_tokens == sum(u["completion_tokens"] for u in usages)
    assert usage.calls_per_turn == 2 / 7
    # The model's two memories cite D1:1 and D2:1: the job and residence questions hit,
    # the others (evidence D1:3, D2:3, D1:4) cannot.
    assert chat.with_llm.by_kind == {"profile": 2} and chat.with_llm.memories == 2
    assert chat.with_llm.recall.hits_at_k == 2


def test_cli_writes_files(tmp_path: Path) -> None:
    data = write_chat(tmp_path / "chat.json")
    out, md = tmp_path / "memory.json", tmp_path / "memory.md"
    args = ["memory", "--data", str(data), "--embedder", "hashing", "--sizes", "200"]
    args += ["--queries", "5", "--out", str(out), "--markdown", str(md)]
    result = CliRunner().invoke(bench_app, args)
    assert result.exit_code == 0, result.output
    report = MemoryBenchReport.model_validate_json(out.read_text(encoding="utf-8"))
    assert report.chat is not None and report.chat.questions == 5
    assert report.config.sizes == [200] and report.config.llm_url is None
    assert "memory search latency" in md.read_text(encoding="utf-8").lower()
    assert "| sqlite | 200 |" in md.read_text(encoding="utf-8")


def test_cli_parses_llm_and_pg_options(tmp_path: Path) -> None:
    data = write_chat(tmp_path / "chat.json")
    out = tmp_path / "memory.json"
    with start_chat_server(default=lambda _body: Reply.json({"memories": []})) as server:
        args = ["memory", "--data", str(data), "--embedder", "hashing", "--no-latency"]
        args += ["--llm-url", server.url, "--llm-model", "m", "--out", str(out)]
        args += ["--pg-sizes", "1_000_000", "--limit-questions", "2"]
        result = CliRunner(env={"OPENAI_API_KEY": "sk-test"}).invoke(bench_app, args)
        models = {request["model"] for request in server.requests}
    assert result.exit_code == 0, result.output
    assert models == {"m"}
    report = MemoryBenchReport.model_validate_json(out.read_text(encoding="utf-8"))
    assert report.config.llm_url == server.url and report.config.llm_model == "m"
    assert report.config.pg_sizes == [1_000_000] and not report.config.pg
    assert report.latency == [] and report.chat is not None and report.chat.questions == 2
    llm = report.chat.with_llm
    assert llm is not None and llm.llm is not None
    assert llm.llm.calls == 2 and llm.llm.fallbacks == 0 and llm.memories == 0
    bad = CliRunner().invoke(bench_app, ["memory", "--data", str(data), "--sizes", "x"])
    assert bad.exit_code != 0


def test_latency_on_postgresql(pg_server: Any) -> None:
    config = MemoryBenchConfig(
        sizes=[], pg=True, pg_sizes=[250], pg_url=new_pg_database(pg_server), queries=5
    )
    report = run_memory_benchmark(config)
    assert report.chat is None
    (row,) = report.latency
    assert (row.backend, row.size) == ("postgresql", 250) and row.p95_ms >= row.p50_ms > 0
    assert report.machine.postgres and "fsync" in report.machine.postgres_settings
    assert report.verdicts[1].passed is None  # 1M not measured
    assert "| postgresql | 250 |" in memory_markdown(report)
