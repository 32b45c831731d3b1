"""``agentctx bench memory --timelines``: the fact-timeline suite's scoring, on a small
suite written here (not the development data), and the threshold calibration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentctx.bench.memory_facts import (
    FactsReport,
    HalfReport,
    QuestionOutcome,
    chats_labelled_pairs,
    run_fact_timelines,
)
from agentctx.bench.memory_facts_report import failures_text
from agentctx.llm.hashing import HashingEmbedder
from agentctx.memory.calibration import LabelledPair, calibrate, separate
from test_bench_memory import write_chat

SUITE = """
- id: t-occ-change
  lang: en
  category: occupation
  sessions:
    - date: 2026-01-05
      turns:
        - user: "I'm a nurse."
        - assistant: "Nice."
    - date: 2026-01-20
      turns:
        - user: "I'm a nurse, long shifts this week."
    - date: 2026-03-01
      turns:
        - user: "Big news: I'm a pilot now."
  facts:
    - {category: occupation, value: nurse, sessions: [0, 1]}
    - {category: occupation, value: pilot, sessions: [2]}
  questions:
    - q: "what do I do for work?"
      answer: [pilot]
      stale: [nurse]
    - q: "what was my job in February?"
      as_of: 2026-02-10
      answer: [nurse]
      stale: [pilot]
- id: t-city
  lang: en
  category: residence
  sessions:
    - date: 2026-01-05
      turns:
        - user: "I live in Lyon."
  facts:
    - {category: residence, value: lyon, sessions: [0]}
  questions:
    - q: "which city am I based in?"
      answer: [lyon]
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    half = tmp_path / "suite" / "dev"
    half.mkdir(parents=True)
    (half / "cases_en.yaml").write_text(SUITE, encoding="utf-8")
    return tmp_path / "suite"


def test_the_suite_scores_latest_truth_as_of_and_extraction(suite: Path) -> None:
    report = run_fact_timelines(suite, embedder="hashing")
    (half,) = report.halves
    assert half.name == "dev" and half.cases == 2 and len(half.outcomes) == 3
    by_question = {o.question: o for o in half.outcomes}
    now = by_question["what do I do for work?"]
    assert now.correct and now.top is not None and "pilot" in now.top
    then = by_question["what was my job in February?"]
    assert then.as_of == "2026-02-10"
    assert then.correct and then.top is not None and "nurse" in then.top
    assert half.stale_injected == 0
    occupation = half.extraction.categories["occupation"]
    assert (occupation.stated, occupation.learned) == (2, 2)
    assert occupation.precision == 1.0


def test_a_wrong_answer_is_scored_wrong(suite: Path) -> None:
    # The same chat with the answer the suite expects swapped: the scorer must notice.
    swapped = (suite / "dev" / "cases_en.yaml").read_text(encoding="utf-8")
    swapped = swapped.replace("answer: [pilot]\n      stale: [nurse]", "answer: [nurse]")
    (suite / "dev" / "cases_en.yaml").write_text(swapped, encoding="utf-8")
    (half,) = run_fact_timelines(suite, embedder="hashing").halves
    wrong = [o for o in half.outcomes if not o.correct]
    assert [o.question for o in wrong] == ["what do I do for work?"]


def test_the_threshold_keeps_the_share_of_relevant_pairs_asked_for() -> None:
    relevant = [(0.9 - i * 0.02, True) for i in range(20)]  # 0.9 down to 0.52
    scored = [*relevant, (0.6, False), (0.3, False), (0.1, False), (0.05, False)]
    threshold, kept, irrelevant = separate(scored, keep=0.95)
    assert threshold == pytest.approx(0.54)  # the 19th of 20 relevant scores
    assert (kept, irrelevant) == (0.95, 0.25)
    assert separate(scored, keep=1.0)[0] == pytest.approx(0.52)
    with pytest.raises(ValueError, match="relevant and irrelevant"):
        separate([(0.5, True)])


def test_calibration_measures_pairs_with_the_embedder() -> None:
    embedder = HashingEmbedder(dimensions=256)
    pairs = [
        LabelledPair("what is my job?", "User works as a pilot\njob work occupation", True),
        LabelledPair("what is my job?", "User lives in Oslo\nlive city home", False),
        LabelledPair("where do I live?", "User lives in Oslo\nlive city home", True),
        LabelledPair("where do I live?", "User works as a pilot\njob work occupation", False),
    ]
    result = calibrate(embedder, pairs)
    assert result.embedder == embedder.name
    assert (result.relevant, result.irrelevant) == (2, 2)
    assert result.relevant_passing == 1.0 and result.irrelevant_passing == 0.0


def _bench_memory(*args: str) -> subprocess.CompletedProcess[str]:
    """``agentctx bench memory ARGS`` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "agentctx.cli.main", "bench", "memory", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _calibrated(suite: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    done = _bench_memory(
        "--timelines", str(suite), "--embedder", "hashing", "--calibrate", *extra, "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    return done


def test_the_command_runs_the_suite_and_writes_its_figures(suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "facts.json"
    done = _calibrated(suite, out)
    assert "latest truth" in done.stdout
    figures = json.loads(out.read_text())
    assert figures["halves"][0]["latest_truth"] == 1.0
    assert figures["calibration"]["relevant"] > 0  # measured on the dev half
    neither = _bench_memory()
    assert neither.returncode == 2 and "--timelines" in neither.stdout + neither.stderr


NAME_CASE = """
- id: t-name
  lang: en
  category: name
  sessions:
    - date: 2026-01-05
      turns:
        - user: "Hi! My name is Matthew Harris."
  facts:
    - {category: name, value: Matthew, sessions: [0]}
  questions:
    - q: "do you remember what I'm called?"
      answer: [Matthew]
"""


def test_an_answer_the_redaction_gate_kept_out_is_told_apart(tmp_path: Path) -> None:
    (tmp_path / "names.yaml").write_text(NAME_CASE, encoding="utf-8")
    (redacted,) = run_fact_timelines(tmp_path, embedder="hashing").halves
    (outcome,) = redacted.outcomes
    assert not outcome.answer_stored and not outcome.correct
    assert redacted.redacted_answers == 1
    (kept,) = run_fact_timelines(tmp_path, embedder="hashing", redaction=False).halves
    (outcome,) = kept.outcomes
    assert outcome.answer_stored and outcome.correct


def test_a_chat_labels_the_memories_learned_from_its_evidence(tmp_path: Path) -> None:
    """A REALTALK-format chat gives calibration pairs: a memory learned from the
    question's evidence turn is relevant to it, the chat's other memories are not."""
    pairs = chats_labelled_pairs([write_chat(tmp_path / "chat.json")], "hashing")
    relevant = {(p.question, p.memory_text.split("\n")[0].rstrip(".")) for p in pairs if p.relevant}
    assert relevant == {
        ("What does Ana work as?", "User works as a nurse"),
        ("Which food does Ana love?", "User loves sushi"),
        ("Where does Ana live?", "User lives in Lisbon"),
        ("What is Ana's favourite sport?", "User's favourite sport is tennis"),
    }
    by_question: dict[str, list[bool]] = {}
    for pair in pairs:
        by_question.setdefault(pair.question, []).append(pair.relevant)
    # Every question meets every memory; a friend's parrot is no memory of the user.
    assert len({len(labels) for labels in by_question.values()}) == 1
    assert not any(by_question["What pet did Ben adopt?"])
    assert any(by_question["Where does Ana live?"])


def test_the_command_calibrates_with_chats_too(suite: Path, tmp_path: Path) -> None:
    chat = write_chat(tmp_path / "chat.json")
    out = tmp_path / "facts.json"
    runs = []
    for extra in ([], ["--calibrate-with", str(chat)]):
        _calibrated(suite, out, *extra)
        runs.append(json.loads(out.read_text())["calibration"])
    alone, with_chat = runs
    assert with_chat["relevant"] > alone["relevant"]
    assert with_chat["irrelevant"] > alone["irrelevant"]


def test_the_heldout_halfs_misses_are_listed_only_when_asked() -> None:
    def half(name: str, case: str) -> HalfReport:
        wrong = QuestionOutcome(case, "en", "what is my job?", None, False, False, (), None)
        return HalfReport(name=name, cases=1, outcomes=[wrong])

    report = FactsReport(
        halves=[half("dev", "dev-case"), half("heldout", "held-case")], embedder="e"
    )
    quiet = failures_text(report)
    assert "dev-case" in quiet and "held-case" not in quiet
    assert "--show-heldout-misses" in quiet
    assert "held-case" in failures_text(report, heldout=True)
