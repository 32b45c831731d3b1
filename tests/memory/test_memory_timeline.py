"""Facts in time: supersession, validity, ``as_of``, contested statements, retractions,
concurrent consolidation, idempotent replay and the audit trail of memory.

Every test runs on SQLite and on a real PostgreSQL (the ``db_url`` fixture).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from agentctx import ContextEngine
from agentctx.errors import InvalidInput
from agentctx.events import EventDraft, EventType, Role, TextPart
from agentctx.memory import Memory, MemoryCandidate, Provenance
from agentctx.storage.schema import audit

DAY0 = datetime(2026, 1, 1, tzinfo=UTC)


def day(n: int) -> datetime:
    return DAY0 + timedelta(days=n)


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(
        url=db_url,
        home=home,
        jobs="inline",
        embeddings={"provider": "hashing"},
        memory={"enabled": True},
        session_ttl=None,
    ) as engine:
        yield engine


def statement(
    eng: ContextEngine,
    session: str,
    when: int,
    value: str,
    *,
    subject: str = "occupation",
    content: str | None = None,
    retracted: bool = False,
    event: str = "e1",
) -> list[str]:
    """The user says ``value`` of ``subject`` in ``session`` on day ``when``."""
    data: dict[str, object] = {"value": value}
    if retracted:
        data["retracted"] = True
    report = eng.memory.consolidator.apply(
        "u1",
        [
            MemoryCandidate(
                kind="profile",  # type: ignore[arg-type]
                content=content or f"User works as a {value}",
                subject=subject,
                data=data,
                confidence=0.8,
                sources=(
                    Provenance(session_id=session, event_id=event, seq=1, extractor_version="test"),
                ),
                ts=day(when),
            )
        ],
    )
    eng.memory._reindex("u1", report.touched)
    return report.created or report.merged


def by_value(eng: ContextEngine, value: str) -> list[Memory]:
    return [m for m in eng.memory.list("u1", status=None) if m.data.get("value") == value]


def top(eng: ContextEngine, query: str, as_of: datetime | None = None) -> str | None:
    hits = eng.memory.search("u1", query, as_of=as_of, limit=5)
    return hits[0].memory.data.get("value") if hits else None


def test_a_changed_fact_supersedes_the_old_one_which_as_of_still_answers(
    eng: ContextEngine,
) -> None:
    statement(eng, "s1", 1, "nurse")
    statement(eng, "s2", 5, "nurse", content="User is a nurse")  # same value, other words
    for session, when in (("s3", 20), ("s4", 30), ("s5", 40)):
        statement(eng, session, when, "software engineer")
    (nurse,) = by_value(eng, "nurse")
    (engineer,) = by_value(eng, "software engineer")
    # One memory per fact, support accumulated across its sessions.
    assert (nurse.support_count, engineer.support_count) == (2, 3)
    assert engineer.status == "active" and nurse.status == "stale"
    assert nurse.superseded_by == engineer.memory_id
    assert (nurse.valid_from, nurse.valid_to, engineer.valid_from) == (day(1), day(20), day(20))
    assert engineer.valid_to is None
    change = eng.memory.history("u1", nurse.memory_id)[-1]
    assert change.action == "supersede" and engineer.memory_id in change.reason
    # Now, then, and before anything was said.
    assert top(eng, "what is my job?") == "software engineer"
    assert top(eng, "what is my job?", as_of=day(10)) == "nurse"
    assert top(eng, "what is my job?", as_of=day(25)) == "software engineer"
    assert top(eng, "what is my job?", as_of=day(0)) is None
    # Superseded memories are never injected.
    injected = eng.memory.verified("u1", None, "what is my job?", limit=10)
    assert [h.memory.memory_id for h in injected] == [engineer.memory_id]


def test_a_correction_in_the_same_session_wins_against_any_support(eng: ContextEngine) -> None:
    for i in range(4):
        statement(eng, f"s{i}", i, "nurse")
    # "I'm a nurse... actually, I'm a paramedic": same session, said later.
    statement(eng, "s9", 9, "nurse", event="e1")
    statement(eng, "s9", 9, "paramedic", event="e2")
    assert top(eng, "what do I do for a living?") == "paramedic"
    (nurse,) = by_value(eng, "nurse")
    assert nurse.status == "stale" and nurse.support_count == 5


def test_clearly_more_support_contests_a_single_statement_until_it_is_repeated(
    eng: ContextEngine,
) -> None:
    for i in range(3):
        statement(eng, f"s{i}", i, "nurse")
    statement(eng, "s5", 5, "pilot")
    (pilot,) = by_value(eng, "pilot")
    assert pilot.status == "stale" and pilot.valid_to is None  # contested, never true
    assert top(eng, "job", as_of=day(6)) == "nurse"
    assert "clearly more support" in eng.memory.history("u1", pilot.memory_id)[-1].reason
    statement(eng, "s6", 6, "pilot")
    (pilot,) = by_value(eng, "pilot")
    assert pilot.status == "active" and pilot.support_count == 2
    # The change dates from when it was first said.
    (nurse,) = by_value(eng, "nurse")
    assert nurse.valid_to == day(5) and nurse.superseded_by == pilot.memory_id


def test_a_fact_said_again_after_it_was_superseded_is_true_again_from_then_on(
    eng: ContextEngine,
) -> None:
    statement(eng, "s1", 1, "accountant")
    statement(eng, "s2", 10, "photographer")
    statement(eng, "s3", 20, "accountant")
    periods = sorted(by_value(eng, "accountant"), key=lambda m: m.valid_from or DAY0)
    assert [m.status for m in periods] == ["stale", "active"]
    assert periods[1].support_count == 2  # the earlier period's sessions count
    assert top(eng, "job", as_of=day(5)) == "accountant"
    assert top(eng, "job", as_of=day(15)) == "photographer"
    assert top(eng, "job") == "accountant"


def test_a_retraction_supersedes_the_fact_and_nothing_stale_is_injected(
    eng: ContextEngine,
) -> None:
    for i in range(2):
        statement(eng, f"s{i}", i, "vegetarian", subject="diet", content="User is vegetarian")
    statement(
        eng,
        "s3",
        3,
        "vegetarian",
        subject="diet",
        content="User is no longer vegetarian",
        retracted=True,
    )
    memories = eng.memory.list("u1", status=None)
    believed = [m for m in memories if m.status == "active"]
    assert [m.retracted for m in believed] == [True]
    assert all(m.status == "stale" for m in memories if not m.retracted)
    injected = eng.memory.verified("u1", None, "what is my diet?", limit=10)
    assert all(h.memory.retracted for h in injected)


def test_a_statement_extracted_late_is_history_not_the_current_truth(
    eng: ContextEngine,
) -> None:
    statement(eng, "s3", 30, "pilot")
    statement(eng, "s1", 10, "nurse")  # an older session, extracted afterwards
    (nurse,) = by_value(eng, "nurse")
    (pilot,) = by_value(eng, "pilot")
    assert pilot.status == "active"
    assert (nurse.status, nurse.valid_to, nurse.superseded_by) == (
        "stale",
        day(30),
        pilot.memory_id,
    )
    assert top(eng, "job", as_of=day(20)) == "nurse"


def read(
    eng: ContextEngine, session: str, on: int, content: str, subject: str, **data: object
) -> Memory:
    """A statement of ``subject`` as the extractors make it (``data`` as given)."""
    report = eng.memory.consolidator.apply(
        "u1",
        [
            MemoryCandidate(
                kind="fact",  # type: ignore[arg-type]
                content=content,
                subject=subject,
                data=data,
                confidence=0.6,
                sources=(
                    Provenance(session_id=session, event_id="e1", seq=1, extractor_version="test"),
                ),
                ts=day(on),
            )
        ],
    )
    eng.memory._reindex("u1", report.touched)
    (memory_id,) = report.created or report.merged  # the new memory, or the one it merged into
    return eng.memory.get("u1", memory_id)


def status(eng: ContextEngine, memory: Memory) -> tuple[str, str | None]:
    now = eng.memory.get("u1", memory.memory_id)
    return now.status, now.superseded_by


def test_a_retraction_in_other_words_retracts_the_fact_of_its_attribute_it_names(
    eng: ContextEngine,
) -> None:
    french = read(eng, "s1", 1, "User speaks French", "language: french", value="french")
    korean = read(eng, "s1", 1, "User speaks some Korean", "language: korean", value="korean")
    # The classifier's subject ("language: speak korean") is not the rules' one.
    gone = read(
        eng,
        "s2",
        10,
        "User can't speak Korean anymore",
        "language: speak korean",
        category="language",
        key="speak korean",
        retracted=True,
    )
    assert status(eng, korean) == ("stale", gone.memory_id)
    assert status(eng, french) == ("active", None)
    # A retraction that names nothing the user said retracts nothing.
    read(
        eng,
        "s3",
        20,
        "User doesn't speak Welsh anymore",
        "language: speak welsh",
        category="language",
        key="speak welsh",
        retracted=True,
    )
    assert status(eng, french) == ("active", None)
    hits = eng.memory.search("u1", "which languages do I speak?", as_of=day(5), limit=5)
    assert "Korean" in " ".join(h.memory.content for h in hits)


def test_a_change_in_other_words_replaces_the_latest_value_of_its_attribute(
    eng: ContextEngine,
) -> None:
    project = read(eng, "s0", 0, "User is building Apollo", "project: apollo", value="apollo")
    japan = read(eng, "s1", 1, "User is going to Japan in May", "plan: trip japan", value="japan")
    october = read(
        eng,
        "s2",
        10,
        "User moved the trip to October instead",
        "plan: moved trip october",
        category="plan",
        key="moved trip october",
        replaces=True,
    )
    assert status(eng, japan) == ("stale", october.memory_id)
    assert status(eng, project) == ("active", None)  # another attribute: untouched
    then = eng.memory.get("u1", japan.memory_id)
    assert (then.valid_from, then.valid_to) == (day(1), day(10))
    hits = eng.memory.search("u1", "trip", as_of=day(5), limit=5)
    assert hits and hits[0].memory.memory_id == japan.memory_id
    # Without the change mark, a new plan is one more plan.
    read(eng, "s3", 20, "User is running a marathon in June", "plan: marathon june")
    assert status(eng, october)[0] == "active"


def test_one_plan_on_a_new_date_supersedes_and_on_the_same_date_merges(
    eng: ContextEngine,
) -> None:
    june = read(
        eng,
        "s1",
        1,
        "User signed up for the IELTS in June",
        "plan: ielts",
        value="ielts",
        when="June",
    )
    again = read(eng, "s2", 5, "User's IELTS is in June", "plan: ielts", value="ielts", when="june")
    assert again.memory_id == june.memory_id and again.support_count == 2  # said twice
    august = read(
        eng, "s3", 9, "User moved the IELTS to August", "plan: ielts", value="ielts", when="August"
    )
    assert status(eng, june) == ("stale", august.memory_id)
    hits = eng.memory.search("u1", "when is my IELTS?", limit=5)
    assert hits[0].memory.memory_id == august.memory_id


def test_as_of_must_be_an_aware_datetime(eng: ContextEngine) -> None:
    with pytest.raises(InvalidInput):
        eng.memory.search("u1", "job", as_of=datetime(2026, 1, 1))
    with pytest.raises(InvalidInput):
        eng.memory.search("u1", "job", as_of="2026-01-01")  # type: ignore[arg-type]


def test_procedural_text_is_made_from_the_merged_counts(eng: ContextEngine) -> None:
    def run(session: str, successes: int, failures: int) -> str:
        report = eng.memory.consolidator.apply(
            "u1",
            [
                MemoryCandidate(
                    kind="procedural",  # type: ignore[arg-type]
                    content="whatever the first extractor wrote",
                    subject="refund: lookup → refund",
                    data={
                        "scenario": "refund",
                        "tools": ["lookup", "refund"],
                        "successes": successes,
                        "failures": failures,
                        "failure_reasons": {"window closed": failures} if failures else {},
                    },
                    sources=(
                        Provenance(session_id=session, event_id="e", seq=1, extractor_version="t"),
                    ),
                )
            ],
        )
        return (report.created or report.merged)[0]

    memory_id = run("s1", 1, 0)
    assert "worked 1/1 (100%)" in eng.memory.get("u1", memory_id).content
    run("s2", 1, 1)
    merged = eng.memory.get("u1", memory_id)
    stats = merged.procedural
    assert stats is not None and (stats.successes, stats.failures) == (2, 1)
    assert merged.content == stats.render()
    assert "worked 2/3 (67%)" in merged.content and "window closed" in merged.content
    # An update of the data makes the text again; a text of its own is refused.
    updated = eng.memory.update(
        "u1", memory_id, data={**merged.data, "successes": 7, "failures": 1}
    )
    assert "worked 7/8 (88%)" in updated.content
    with pytest.raises(InvalidInput):
        eng.memory.update("u1", memory_id, content="worked 100%", data=merged.data)


def test_concurrent_consolidations_of_one_memory_lose_nothing(eng: ContextEngine) -> None:
    statement(eng, "s0", 0, "nurse")
    (nurse,) = by_value(eng, "nurse")
    errors: list[BaseException] = []

    def say(i: int) -> None:
        try:
            statement(eng, f"t{i}", 1, "nurse")
        except BaseException as exc:
            errors.append(exc)

    def bump() -> None:
        try:
            for _ in range(3):
                eng.memory.update("u1", nurse.memory_id, keywords=["job"])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=say, args=(i,)) for i in range(6)]
    threads.append(threading.Thread(target=bump))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    (after,) = by_value(eng, "nurse")
    assert after.support_count == 7
    history = eng.memory.history("u1", nurse.memory_id)
    # Every write is one version, in order, none lost.
    assert [c.version for c in history] == list(range(1, after.version + 1))
    assert sum(c.action == "merge" for c in history) == 6
    assert sum(c.action == "update" for c in history) == 3


def user_draft(text: str, when: datetime) -> EventDraft:
    return EventDraft(
        type=EventType.USER_INPUT, role=Role.USER, parts=(TextPart(text=text),), ts=when
    )


def test_a_replayed_extraction_changes_nothing(eng: ContextEngine) -> None:
    session = eng.create_session(user_id="u1", agent_id="a")
    session.append(user_draft("I live in Lyon.", day(1)))
    eng.memory.extract_session("u1", session.id)  # (the turn-end job may have run it)
    before = [(m.memory_id, m.version, m.support_count) for m in eng.memory.list("u1")]
    assert len(before) == 1
    for _ in range(2):
        assert eng.memory.extract_session("u1", session.id).touched == []
    # The same run applied again by its key (a retried job) writes nothing either.
    candidates = eng.memory.extractors[0][2](session.events())
    key = "u1\x1freplay"
    eng.memory.consolidator.apply("u1", candidates, run_key=key, through_seq=1)
    mid = [(m.memory_id, m.version, m.support_count) for m in eng.memory.list("u1")]
    replay = eng.memory.consolidator.apply("u1", candidates, run_key=key, through_seq=1)
    assert replay.touched == [] and replay.skipped == len(candidates)
    after = [(m.memory_id, m.version, m.support_count) for m in eng.memory.list("u1")]
    assert after == mid and [m[0] for m in after] == [m[0] for m in before]


def test_memory_writes_and_injection_decisions_are_audited_without_content(
    eng: ContextEngine,
) -> None:
    statement(eng, "s1", 1, "nurse")
    statement(eng, "s2", 2, "nurse")
    statement(eng, "s3", 3, "zookeeper")
    (keeper,) = by_value(eng, "zookeeper")
    eng.memory.update("u1", keeper.memory_id, confidence=0.95)
    eng.memory.delete("u1", keeper.memory_id)
    session = eng.create_session(user_id="u1", agent_id="a")
    session.append(user_draft("what is my job?", day(4)))
    session.build_context(query="what is my job?", budget=2000)
    eng.memory.flush_audit()
    with eng.db.read() as conn:
        rows = conn.execute(
            select(audit.c.action, audit.c.meta).where(audit.c.action.like("memory.%"))
        ).all()
    actions = [row.action for row in rows]
    for action in ("memory.create", "memory.merge", "memory.supersede", "memory.update"):
        assert action in actions, action
    assert "memory.delete" in actions and "memory.inject" in actions
    metas = json.dumps([row.meta for row in rows])
    assert keeper.memory_id in metas
    for text in ("nurse", "zookeeper", "works as"):
        assert text not in metas


def test_a_retraction_ranks_below_a_statement_as_relevant(eng: ContextEngine) -> None:
    eng.memory.add(
        "u1",
        "User eats fish",
        kind="fact",
        subject="diet: fish",
        data={"value": "fish"},
        confidence=0.6,
    )
    eng.memory.add(
        "u1",
        "User no longer eats meat",
        kind="fact",
        subject="diet: meat",
        data={"value": "meat", "retracted": True},
        confidence=0.95,
    )
    hits = eng.memory.search("u1", "what do I eat?", limit=5)
    assert [h.memory.content for h in hits] == ["User eats fish", "User no longer eats meat"]
