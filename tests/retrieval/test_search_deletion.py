"""Deleting a session, a user's data, or expired sessions leaves nothing in the index."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import Connection, text, update

from agentctx import ContextEngine, Session
from agentctx.llm import HashingEmbedder
from agentctx.retrieval import SearchIndex
from agentctx.storage.schema import sessions

SECRET_WORD = "zorblatfunkel"  # a term that exists in one session only

INDEX_TABLES = (
    "search_sessions",
    "search_docs",
    "search_terms",
    "search_dense",
    "search_codes",
    "search_fts",
    "search_vec_1",
    "search_vec_2",  # the contextual vectors (each event embedded after the one before)
)


def indexed_session(engine: ContextEngine, index: SearchIndex, user_id: str, word: str) -> Session:
    session = engine.create_session(user_id=user_id)
    with session.turn() as turn:
        turn.add_message("user", f"my codename is {word} and I like trains")
        call = turn.add_tool_call("lookup", {"query": f"{word} trains"})
        turn.add_tool_result(call.call_id, content=f"{word}: 3 trains found")
    index.sync(user_id, session.id)
    return session


def counts(conn: Connection) -> dict[str, int]:
    return {
        t: int(conn.execute(text(f"SELECT count(*) FROM {t}")).scalar() or 0) for t in INDEX_TABLES
    }


def derived_bytes(conn: Connection) -> bytes:
    """Every stored byte of the full-text and vector tables, shadow tables included."""
    if conn.dialect.name == "sqlite":
        names = [
            row[0]
            for row in conn.execute(
                text(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND (name LIKE 'search_fts%' OR name LIKE 'search_vec%' "
                    "OR name IN ('search_terms', 'search_codes'))"
                )
            )
        ]
    else:
        names = ["search_fts", "search_vec_1", "search_vec_2", "search_terms", "search_codes"]
    chunks = []
    for name in names:
        for row in conn.execute(text(f'SELECT * FROM "{name}"')):
            for value in row:
                chunks.append(value if isinstance(value, bytes) else str(value).encode())
    return b"".join(chunks)


def session_rows(conn: Connection, user_id: str, session_id: str) -> int:
    sid = conn.execute(
        text("SELECT sid FROM search_sessions WHERE user_id = :u AND session_id = :s"),
        {"u": user_id, "s": session_id},
    ).scalar()
    return 0 if sid is None else 1


def test_deleting_a_session_deletes_its_index_rows_everywhere(engine: ContextEngine) -> None:
    index = SearchIndex(engine.db, HashingEmbedder())
    doomed = indexed_session(engine, index, "u1", SECRET_WORD)
    kept = indexed_session(engine, index, "u1", "plainword")
    with engine.db.read() as conn:
        before = counts(conn)
        assert SECRET_WORD.encode() in derived_bytes(conn)
    assert all(before[t] > 0 for t in INDEX_TABLES)

    report = engine.delete_session(doomed.id, user_id="u1")
    assert report.extra == {"search_sessions": 1}

    with engine.db.read() as conn:
        after = counts(conn)
        assert after["search_sessions"] == 1
        for table in ("search_docs", "search_fts", "search_vec_1", "search_vec_2", "search_codes"):
            assert after[table] == before[table] // 2, table
        assert after["search_dense"] == 2  # one row per vector set of the kept session
        assert SECRET_WORD.encode() not in derived_bytes(conn)
    assert index.search("u1", doomed.id, SECRET_WORD) == []
    assert [h.seq for h in index.search("u1", kept.id, "plainword trains")]


def test_deleting_user_data_empties_the_index_of_that_user(engine: ContextEngine) -> None:
    index = SearchIndex(engine.db, HashingEmbedder())
    indexed_session(engine, index, "u1", SECRET_WORD)
    indexed_session(engine, index, "u1", SECRET_WORD + "x")
    other = indexed_session(engine, index, "u2", "plainword")
    with engine.db.read() as conn:
        before = counts(conn)

    engine.delete_user_data("u1")

    with engine.db.read() as conn:
        after = counts(conn)
        assert after["search_sessions"] == 1 and after["search_dense"] == 2
        for table in ("search_docs", "search_fts", "search_vec_1", "search_vec_2", "search_codes"):
            assert after[table] == before[table] // 3, table
        assert SECRET_WORD.encode() not in derived_bytes(conn)
        assert session_rows(conn, "u2", other.id) == 1


def test_deleting_user_data_leaves_nothing_of_it_in_the_search_index_memory(
    engine: ContextEngine,
) -> None:
    index = engine.search_index
    gone = indexed_session(engine, index, "u1", SECRET_WORD)
    kept = indexed_session(engine, index, "u2", "plainword")
    # Searches fill the caches: the sessions' authors, their vectors, the query vectors.
    for user_id, session in (("u1", gone), ("u2", kept)):
        assert index.search(user_id, session.id, f"What did Kate say about {SECRET_WORD}?")
    assert index._reader._participants.get(("u1", gone.id)) is not None
    assert index.query_vectors.queries()
    with engine.db.read() as conn:
        if conn.dialect.name == "sqlite":  # small SQLite sessions are searched in memory
            assert len(index._vector_search.vectors)

    engine.delete_user_data("u1")

    assert index._reader._participants.get(("u1", gone.id)) is None
    assert index._reader._participants.get(("u2", kept.id)) is not None  # another user's stays
    assert not any(SECRET_WORD in query for query in index.query_vectors.queries())
    assert len(index._vector_search.vectors) == 0 and len(index._vector_search.codes) == 0
    # The other user's search still works, its caches filled again.
    assert index.search("u2", kept.id, "plainword trains")


def test_the_sweep_removes_expired_sessions_from_the_index(engine: ContextEngine) -> None:
    index = SearchIndex(engine.db, HashingEmbedder())
    kept = indexed_session(engine, index, "u1", "plainword")
    doomed = engine.create_session(user_id="u1", ttl=timedelta(hours=1))
    doomed.add_message("user", f"{SECRET_WORD} expires soon")
    index.sync("u1", doomed.id)
    with engine.db.read() as conn:
        assert SECRET_WORD.encode() in derived_bytes(conn)
    with engine.db.write() as conn:  # an hour passes for this session only
        conn.execute(
            update(sessions)
            .where(sessions.c.session_id == doomed.id)
            .values(expires_at=sessions.c.created_at)
        )

    report = engine.sweep()

    assert report.expired_sessions == 1
    with engine.db.read() as conn:
        assert session_rows(conn, "u1", doomed.id) == 0
        assert session_rows(conn, "u1", kept.id) == 1
        assert SECRET_WORD.encode() not in derived_bytes(conn)
        assert counts(conn)["search_docs"] == 3


class QueryGate(HashingEmbedder):
    """Holds the embedding of one text until released: a search caught in flight."""

    def __init__(self, held: str) -> None:
        super().__init__()
        self.held = held
        self.reached = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.held in texts:
            self.reached.set()
            assert self.release.wait(10)
        return super().embed(texts)


def test_a_search_in_flight_puts_nothing_back_once_the_user_is_forgotten(
    engine: ContextEngine,
) -> None:
    query = f"What did I say about {SECRET_WORD}?"
    gate = QueryGate(query)
    index = SearchIndex(engine.db, gate)
    session = indexed_session(engine, index, "u1", SECRET_WORD)
    searching = threading.Thread(target=index.search, args=("u1", session.id, query))
    searching.start()
    assert gate.reached.wait(10)  # the search is embedding its query

    engine.delete_user_data("u1")
    forgetting = threading.Thread(target=index.forget_user, args=("u1",))
    forgetting.start()
    forgetting.join(0.3)
    assert forgetting.is_alive()  # it waits for the search in flight ...
    gate.release.set()
    searching.join(10)
    forgetting.join(10)
    assert not searching.is_alive() and not forgetting.is_alive()
    # ... which embedded and cached the query before the caches were cleared, not after.
    assert not any(SECRET_WORD in cached for cached in index.query_vectors.queries())
    assert index.search("u1", session.id, query) == []
