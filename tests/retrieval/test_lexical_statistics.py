"""BM25 from each session's own statistics: a session's lexical ranking does not move as
other sessions (of any user) are indexed, and both databases score alike."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pgserver
import pytest
from sqlalchemy import select

from agentctx import ContextEngine
from agentctx.retrieval.lexical import K1, B, LexicalHit, SessionStats, search_session
from agentctx.retrieval.sync import read_state
from agentctx.retrieval.terms import document_terms, query_terms
from agentctx.storage.schema import search_docs
from conftest import new_pg_database

MINE = [
    "the cheese shop in Lyon sells goat cheese",
    "we drove to Lyon on a rainy friday",
    "cheese cheese cheese, I could eat cheese all day long with bread and wine",
    "a long walk by the river before the cheese tasting in the old town square",
    "nothing about food here at all",
]
QUERY = "cheese in Lyon"


def lexical(engine: ContextEngine, user_id: str, session_id: str) -> list[LexicalHit]:
    engine.search_index.sync(user_id, session_id)
    with engine.db.read() as conn:
        state = read_state(conn, user_id, session_id, None)
        assert state is not None and state.sid is not None
        return search_session(
            conn,
            SessionStats(state.sid, state.doc_count, state.term_count),
            query_terms(QUERY),
            limit=10,
            before_seq=None,
            max_postings=8000,
        )


def expected_scores(texts: list[str]) -> dict[int, float]:
    """seq -> BM25 by the formula, from these texts alone (term presence, lengths in
    distinct terms)."""
    docs = [set(document_terms(t)) for t in texts]
    n = len(docs)
    mean = sum(len(d) for d in docs) / n
    scores: dict[int, float] = {}
    for seq, doc in enumerate(docs, start=1):
        matched = 0.0
        for term in query_terms(QUERY):
            df = sum(term in d for d in docs)
            if term in doc:
                matched += math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        if matched:
            scores[seq] = matched * (K1 + 1) / (1 + K1 * (1 - B + B * len(doc) / mean))
    return scores


@pytest.fixture
def hashed(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """An engine embedding with feature hashing: these tests are about the lexical side."""
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        yield engine


def test_other_sessions_do_not_move_a_sessions_ranking(hashed: ContextEngine) -> None:
    engine = hashed
    mine = engine.create_session(user_id="alice")
    for text in MINE:
        mine.add_message("user", text)
    before = lexical(engine, "alice", mine.id)

    # Another user's session, large and full of the same words at other lengths: under
    # table-wide statistics it would change every idf and the mean length.
    theirs = engine.create_session(user_id="bob")
    for i in range(150):
        theirs.add_message("user", f"cheese {i} " + "word " * (i % 40) + ("lyon" if i % 7 else ""))
    engine.search_index.sync("bob", theirs.id)
    after = lexical(engine, "alice", mine.id)

    assert [(h.seq, round(h.score, 9)) for h in after] == [
        (h.seq, round(h.score, 9)) for h in before
    ]
    want = expected_scores(MINE)
    assert {h.seq: h.score for h in after} == pytest.approx(want)
    assert [h.seq for h in after] == sorted(want, key=lambda seq: (-want[seq], -seq))


def test_documents_store_their_length(hashed: ContextEngine) -> None:
    engine = hashed
    session = engine.create_session(user_id="alice")
    for text in MINE:
        session.add_message("user", text)
    engine.search_index.sync("alice", session.id)
    with engine.db.read() as conn:
        lengths = dict(conn.execute(select(search_docs.c.seq, search_docs.c.term_count)).all())
    assert lengths == {seq: len(set(document_terms(t))) for seq, t in enumerate(MINE, start=1)}


def test_sqlite_and_postgresql_rank_alike(
    pg_server: pgserver.PostgresServer, tmp_path: Path
) -> None:
    rankings = []
    for name, url in (
        ("sqlite", f"sqlite:///{tmp_path / 'a.db'}"),
        ("postgresql", new_pg_database(pg_server)),
    ):
        with ContextEngine(
            url=url, home=tmp_path / name, embeddings={"provider": "hashing"}
        ) as engine:
            session = engine.create_session(user_id="alice")
            for text in MINE:
                session.add_message("user", text)
            rankings.append(
                [(h.seq, round(h.score, 9)) for h in lexical(engine, "alice", session.id)]
            )
    assert rankings[0] == rankings[1]
