"""``fastsql.insert_plain_rows``: many rows in one statement on SQLite, the same rows as
Core's executemany everywhere."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from agentctx import ContextEngine
from agentctx.events import utcnow
from agentctx.storage import fastsql
from agentctx.storage.schema import topic_events, topics

TOPIC_IDS = ['top_"quoted"', "top_'single'", "top_日本", "top_\\n", "top_big"]


def test_rows_are_stored_exactly_plain_or_not(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    now = utcnow()
    # Not plain (a JSON list, a timestamp): through Core, converted as everywhere else.
    topic_rows: list[dict[str, Any]] = [
        {
            "topic_id": topic_id,
            "user_id": "u1",
            "session_id": session.id,
            "title": topic_id,
            "summary": "s",
            "keywords": ["k", None],
            "message_count": 1,
            "status": "archived",
            "first_seq": number,
            "last_seq": number,
            "token_count": 1,
            "source_tokens": 1,
            "method": "offline",
            "created_at": now,
        }
        for number, topic_id in enumerate(TOPIC_IDS, 1)
    ]
    # Plain: one statement on SQLite (odd characters and a 64-bit seq included).
    links = [
        {"user_id": "u1", "session_id": session.id, "seq": seq, "topic_id": topic_id}
        for seq, topic_id in zip([1, 2, 3, 4, 10_000_000_000], TOPIC_IDS, strict=True)
    ]
    with engine.db.write() as conn:
        fastsql.insert_plain_rows(conn, topics, topic_rows)
        fastsql.insert_plain_rows(conn, topic_events, links)
        fastsql.insert_plain_rows(conn, topic_events, [])  # nothing to do
    with engine.db.read() as conn:
        stored = conn.execute(
            select(topic_events.c.seq, topic_events.c.topic_id).order_by(topic_events.c.seq)
        ).all()
        kept = conn.execute(
            select(topics.c.keywords, topics.c.created_at).order_by(topics.c.first_seq)
        ).all()
    assert [tuple(r) for r in stored] == [(r["seq"], r["topic_id"]) for r in links]
    assert [tuple(r) for r in kept] == [(["k", None], now)] * len(TOPIC_IDS)
