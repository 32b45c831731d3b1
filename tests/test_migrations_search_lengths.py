"""Migration 0014 (each indexed document's length) goes down and up on SQLite and
PostgreSQL: the lengths come back from the full-text rows, rankings are unchanged, and
deleting a session still clears its derived rows."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect, select, text

from agentctx import ContextEngine
from agentctx.retrieval.terms import document_terms
from agentctx.storage import migrate
from agentctx.storage.schema import search_docs
from migration_moves import move

TEXTS = ["goat cheese from Lyon", "cheese cheese and bread", "a walk by the river", "北京的奶酪"]


def lengths(engine: ContextEngine) -> dict[int, int | None]:
    with engine.db.read() as conn:
        return dict(conn.execute(select(search_docs.c.seq, search_docs.c.term_count)).all())


def test_document_lengths_down_and_up(db_url: str, home: Path) -> None:
    settings = {"url": db_url, "home": home, "embeddings": {"provider": "hashing"}}
    with ContextEngine(**settings) as engine:
        session = engine.create_session(user_id="u1")
        for line in TEXTS:
            session.add_message("user", line)
        before = engine.search_index.search("u1", session.id, "cheese Lyon", limit=10)
        indexed = lengths(engine)
        assert indexed == {i: len(set(document_terms(t))) for i, t in enumerate(TEXTS, start=1)}

        move(engine.db, "0013")
        columns = {c["name"] for c in inspect(engine.db.engine).get_columns("search_docs")}
        assert "term_count" not in columns

        move(engine.db, "head")
        assert migrate.current_revision(engine.db) == migrate.HEAD_REVISION
        assert lengths(engine) == indexed  # counted again from the full-text rows
        after = engine.search_index.search("u1", session.id, "cheese Lyon", limit=10)
        assert [(h.seq, round(h.score, 9)) for h in after] == [
            (h.seq, round(h.score, 9)) for h in before
        ]

        engine.delete_session(session.id, user_id="u1")
        with engine.db.read() as conn:
            assert conn.execute(text("SELECT count(*) FROM search_docs")).scalar() == 0
            assert conn.execute(text("SELECT count(*) FROM search_fts")).scalar() == 0


def test_upgrade_before_anything_was_indexed(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        move(engine.db, "0013")
        move(engine.db, "head")  # no full-text table yet: nothing to count
        session = engine.create_session(user_id="u1")
        session.add_message("user", "cheese")
        assert engine.search_index.search("u1", session.id, "cheese", limit=5)
