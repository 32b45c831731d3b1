"""The summaries a window reads every call (topics, top-level folds, the latest thread
summary) come through compiled statements (``fastsql``): the same objects as Core's own
read of the same rows, on both backends, for awkward values, and only the asking
session's rows, in their order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert, select

from agentctx import ContextEngine
from agentctx.compaction.fold.plan import FoldSummary
from agentctx.compaction.thread import Summary
from agentctx.compaction.topics.models import Topic
from agentctx.storage.schema import summaries, topics

T0 = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=UTC)


def _topic(session_id: str, first: int, keywords: list[Any], n: int) -> dict[str, Any]:
    return {
        "topic_id": f"top_{session_id}_{first}",
        "user_id": "u1",
        "session_id": session_id,
        "title": f"Topic «{first}» 日本",
        "summary": 'said "hi"\nthen \\n left' if n % 2 else "",
        "keywords": keywords,
        "message_count": n,
        "status": "active" if n == 0 else "archived",
        "first_seq": first,
        "last_seq": first + 9,
        "token_count": 12,
        "source_tokens": 2_000_000_000,
        "method": "llm:some-model",
        "created_at": T0 + timedelta(minutes=n),
    }


def _summary(session_id: str, kind: str, version: int, **values: Any) -> dict[str, Any]:
    return {
        "summary_id": f"sum_{session_id}_{kind}_{version}",
        "user_id": "u1",
        "session_id": session_id,
        "kind": kind,
        "version": version,
        "level": 0,
        "seq_ranges": None,
        "text": f"{kind} v{version}: 要約 ✓",
        "first_seq": 1,
        "last_seq": 10,
        "source_event_count": 10,
        "token_count": 9,
        "method": "offline",
        "created_at": T0 + timedelta(seconds=version),
        **values,
    }


def test_window_summary_reads_equal_cores_read_of_the_same_rows(engine: ContextEngine) -> None:
    mine = engine.create_session(user_id="u1").id
    other = engine.create_session(user_id="u1").id
    topic_rows = [
        _topic(mine, 21, ["zeta", "日本", ""], 2),
        _topic(mine, 1, [], 1),  # stored after, read first: ordered by first seq
        _topic(mine, 11, ['a "quoted" word'], 0),
        _topic(other, 1, ["elsewhere"], 3),
    ]
    summary_rows = [
        _summary(mine, "fold", 1, seq_ranges=[[1, 4], [6, 10]]),
        _summary(mine, "fold", 2, level=1, first_seq=1, last_seq=30, seq_ranges=None),
        _summary(mine, "fold", 3, first_seq=31, last_seq=40),
        _summary(mine, "thread", 1),
        _summary(mine, "thread", 2, text="the newest thread summary"),
        _summary(other, "thread", 3, text="another session's"),
    ]
    with engine.db.write() as conn:
        conn.execute(insert(topics), topic_rows)
        conn.execute(insert(summaries), summary_rows)

    with engine.db.read() as conn:
        core_topics = [
            Topic.from_row(row)
            for row in conn.execute(
                select(topics).where(topics.c.session_id == mine).order_by(topics.c.first_seq)
            ).mappings()
        ]
        core_folds = [
            FoldSummary.from_row(row)
            for row in conn.execute(
                select(summaries)
                .where(summaries.c.session_id == mine, summaries.c.kind == "fold")
                .order_by(summaries.c.version)
            ).mappings()
        ]
        core_thread = Summary.from_row(
            conn.execute(
                select(summaries).where(
                    summaries.c.session_id == mine,
                    summaries.c.kind == "thread",
                    summaries.c.version == 2,
                )
            )
            .mappings()
            .one()
        )

    read_topics = engine.topics.topics("u1", mine)
    assert read_topics == core_topics
    assert [t.first_seq for t in read_topics] == [1, 11, 21]
    assert read_topics[2].keywords == ("zeta", "日本", "")
    assert read_topics[0].created_at == T0 + timedelta(minutes=1)
    assert read_topics[0].created_at.tzinfo is not None
    assert read_topics[0].source_tokens == 2_000_000_000

    assert engine.folds.folds("u1", mine) == core_folds
    assert core_folds[0].seq_ranges == ((1, 4), (6, 10))
    assert [f.summary_id for f in engine.folds.top_folds("u1", mine)] == [
        f"sum_{mine}_fold_2",  # covers version 1
        f"sum_{mine}_fold_3",
    ]

    assert engine.thread_summaries.latest("u1", mine) == core_thread
    assert core_thread.text == "the newest thread summary"
    assert engine.thread_summaries.latest("u2", mine) is None
    empty = engine.create_session(user_id="u1").id
    assert engine.topics.topics("u1", empty) == []
    assert engine.folds.folds("u1", empty) == []
    assert engine.thread_summaries.latest("u1", empty) is None
