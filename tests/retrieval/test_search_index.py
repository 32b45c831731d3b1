"""The search index on SQLite and PostgreSQL: ranking, isolation, sync, jobs, neighbours."""

# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

import threading
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import event, func, select

from agentctx import ContextEngine, InvalidInput, Session
from agentctx.llm import HashingEmbedder
from agentctx.retrieval import RetrievalConfig, SearchIndex, SyncReport, fuse
from agentctx.retrieval import sync as sync_module
from agentctx.storage import fastsql
from agentctx.storage.schema import (
    include_name,
    include_object_on,
    metadata,
    search_codes,
    search_dense,
    search_docs,
    search_sessions,
)

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)

CONVERSATION = [
    ("user", "Please book a flight to Tokyo for next Tuesday"),
    ("assistant", "Booked JAL 123 to Tokyo, departing 09:40 from Heathrow"),
    ("user", "我想预订去北京的机票，最好是周五上午"),
    ("assistant", "好的，已经为你预订了周五上午去北京的航班 CA 938"),
    ("user", "What is the weather forecast for Paris this weekend?"),
    ("assistant", "Paris will be rainy on Saturday and sunny on Sunday"),
    ("user", "Remind me to renew my passport before the trip"),
    ("assistant", "Reminder set: renew passport by the end of April"),
]


def fill(session: Session, pairs: list[tuple[str, str]] = CONVERSATION) -> None:
    """One turn per (user, assistant) pair, an hour apart."""
    for i in range(0, len(pairs), 2):
        with session.turn() as turn:
            for offset, (role, text) in enumerate(pairs[i : i + 2]):
                turn.add_message(role, text, ts=T0 + timedelta(hours=i, minutes=offset))


@pytest.fixture
def index(engine: ContextEngine) -> SearchIndex:
    return SearchIndex(engine.db, HashingEmbedder())


def seqs(hits: list[Any]) -> list[int]:
    return [hit.seq for hit in hits]


def test_english_and_chinese_queries_find_their_events_with_dates(
    engine: ContextEngine, index: SearchIndex
) -> None:
    session = engine.create_session(user_id="u1")
    fill(session)
    assert index.dense_enabled  # sqlite-vec / pgvector are present in the test environment

    hits = index.search("u1", session.id, "when is my flight to Tokyo?", limit=3)
    assert set(seqs(hits)[:2]) == {1, 2}
    top = hits[0]
    assert top.ts == T0 + timedelta(minutes=top.seq - 1)  # the date comes with the hit
    assert top.type in ("user_input", "agent_response")
    assert top.turn_id is not None and top.event_id
    assert top.lexical_rank == 1 and top.dense_rank is not None

    chinese = index.search("u1", session.id, "北京的航班", limit=2)
    assert set(seqs(chinese)) == {3, 4}
    assert seqs(index.search("u1", session.id, "机票", limit=1)) == [3]

    passport = index.search("u1", session.id, "passports renewal", limit=2)
    assert set(seqs(passport)) == {7, 8}


def test_lexical_and_dense_rankings_can_be_used_alone(
    engine: ContextEngine, index: SearchIndex
) -> None:
    session = engine.create_session(user_id="u1")
    fill(session)
    lexical = index.search("u1", session.id, "rainy Paris", dense=False)
    assert seqs(lexical)[0] == 6 and all(h.dense_rank is None for h in lexical)
    dense = index.search("u1", session.id, "rainy Paris", lexical=False)
    assert seqs(dense)[0] == 6 and all(h.lexical_rank is None for h in dense)
    assert index.search("u1", session.id, "the and of", dense=False) == []  # stopwords only
    with pytest.raises(InvalidInput):
        index.search("u1", session.id, "paris", limit=0)


def test_exclude_from_seq_leaves_out_the_recent_window(
    engine: ContextEngine, index: SearchIndex
) -> None:
    session = engine.create_session(user_id="u1")
    fill(session)
    fill(session, [("user", "Another Tokyo question"), ("assistant", "Tokyo again")])
    everything = seqs(index.search("u1", session.id, "Tokyo"))
    assert {9, 10} <= set(everything)
    older = seqs(index.search("u1", session.id, "Tokyo", exclude_from_seq=9))
    assert older and max(older) < 9 and {1, 2} <= set(older)


def test_other_sessions_and_users_never_appear(engine: ContextEngine, index: SearchIndex) -> None:
    mine = engine.create_session(user_id="u1")
    fill(mine)
    other = engine.create_session(user_id="u1")
    fill(other, [("user", "Tokyo Tokyo Tokyo flight"), ("assistant", "flight to Tokyo booked")])
    theirs = engine.create_session(user_id="u2", session_id=mine.id + "-x")
    fill(theirs, [("user", "Tokyo flight for u2"), ("assistant", "Tokyo, u2")])
    stranger = engine.create_session(user_id="u2", session_id=mine.id)  # same id, other user
    fill(stranger, [("user", "Tokyo from the same session id"), ("assistant", "Tokyo")])

    hits = index.search("u1", mine.id, "Tokyo flight")
    assert hits and {h.event_id for h in hits} <= {e.event_id for e in mine.events()}
    assert set(seqs(index.search("u1", other.id, "Tokyo"))) == {1, 2}
    # Another user's view of the same session id holds only their own events.
    assert {h.event_id for h in index.search("u2", mine.id, "Tokyo")} == {
        e.event_id for e in stranger.events()
    }
    assert index.search("nobody", mine.id, "Tokyo") == []
    assert index.search("u1", "no-such-session", "Tokyo") == []


def test_sync_is_incremental_idempotent_and_cheap_when_nothing_is_new(
    engine: ContextEngine, index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = engine.create_session(user_id="u1")
    fill(session)
    with session.turn() as turn:
        turn.add_message("user", "")  # no searchable text: counted, never a document
        turn.add_message("user", "...")
    assert index.sync("u1", session.id) == SyncReport(indexed=10, embedded=8)
    assert index.sync("u1", session.id) == SyncReport()

    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(args[2])

    run_compiled = fastsql.FastStatement.execute

    def count_compiled(self: fastsql.FastStatement, conn: Any, values: Any) -> Any:
        statements.append(self.sql)  # compiled statements bypass SQLAlchemy's events
        return run_compiled(self, conn, values)

    monkeypatch.setattr(fastsql.FastStatement, "execute", count_compiled)
    event.listen(engine.db.engine, "before_cursor_execute", count)
    try:
        assert index.sync("u1", session.id) == SyncReport()
    finally:
        event.remove(engine.db.engine, "before_cursor_execute", count)
    queries = [sql.lstrip() for sql in statements if not sql.startswith("BEGIN")]
    # Nothing written: one read of how far each vector set (own, contextual) has got.
    assert len(queries) == 2 and all(q.startswith("SELECT") for q in queries)

    fill(session, [("user", "a new question about Lisbon"), ("assistant", "Lisbon answer")])
    assert index.sync("u1", session.id) == SyncReport(indexed=2, embedded=2)
    with engine.db.read() as conn:
        assert conn.execute(select(func.count()).select_from(search_docs)).scalar() == 10
        assert conn.execute(select(search_sessions.c.indexed_seq)).scalar() == 12


def test_search_syncs_first_so_results_are_never_stale(
    engine: ContextEngine, index: SearchIndex
) -> None:
    session = engine.create_session(user_id="u1")
    fill(session)
    assert seqs(index.search("u1", session.id, "Tokyo", limit=2))
    session.add_message("user", "Zanzibar holiday ideas")
    assert seqs(index.search("u1", session.id, "Zanzibar", limit=1)) == [9]


def test_search_embeds_at_most_the_inline_limit_and_the_job_does_the_rest(
    engine: ContextEngine,
) -> None:
    index = SearchIndex(
        engine.db, HashingEmbedder(), config=RetrievalConfig(inline_embed_limit=3, sync_batch=2)
    )
    session = engine.create_session(user_id="u1")
    fill(session)
    index.search("u1", session.id, "Tokyo")
    with engine.db.read() as conn:
        assert conn.execute(select(func.count()).select_from(search_docs)).scalar() == 8
        assert conn.execute(select(search_dense.c.vector_count)).scalar() == 3
    assert index.sync("u1", session.id) == SyncReport(indexed=0, embedded=5)


def test_a_sync_bounded_by_characters_embeds_a_prefix_and_resumes(
    engine: ContextEngine,
) -> None:
    """``embed_chars`` bounds the text one sync embeds of each vector kind (at least one
    event, however long); the next syncs go on where it stopped, every event embedded
    once, ranked as an unbounded sync ranks them."""
    batches: list[list[str]] = []

    class Recording(HashingEmbedder):
        def embed(self, texts: Any) -> list[list[float]]:
            batches.append(list(texts))
            return super().embed(texts)

    budget = 120
    index = SearchIndex(engine.db, Recording(), config=RetrievalConfig(embed_step_chars=budget))
    pairs = [*CONVERSATION, ("user", "A long note about the Kyoto itinerary. " * 8)]
    bounded, whole = engine.create_session(user_id="u1"), engine.create_session(user_id="u1")
    fill(bounded, pairs)
    fill(whole, pairs)
    index.sync("u1", whole.id)
    batches.clear()

    first = index.sync("u1", bounded.id, embed_chars=budget)
    assert first.indexed == len(pairs) and 1 <= first.embedded < len(pairs)
    steps = 1  # the background worker's unit: embed_step_chars of each kind
    while index.embed_step("u1", bounded.id, len(pairs)):
        steps += 1
        assert steps <= 2 * len(pairs)
    assert steps >= 4
    assert all(len(b) == 1 or sum(len(t) for t in b) <= budget for b in batches)
    assert any(len(b) == 1 and len(b[0]) > budget for b in batches)  # the long one alone
    with engine.db.read() as conn:
        counts = conn.execute(
            select(search_dense.c.vector_count).order_by(search_dense.c.sid)
        ).scalars()
        assert list(counts) == [len(pairs)] * 4  # two sessions, two vector kinds
    for query in ("flight to Tokyo", "Kyoto itinerary", "北京的航班"):
        assert seqs(index.search("u1", bounded.id, query, limit=4, lexical=False)) == seqs(
            index.search("u1", whole.id, query, limit=4, lexical=False)
        )


def test_turn_end_job_keeps_the_index_current(engine: ContextEngine, index: SearchIndex) -> None:
    engine.on_turn_end("search_index", index.on_turn_end)
    session = engine.create_session(user_id="u1")
    fill(session)
    # The jobs ran at each turn's end: a search that does not sync still finds everything.
    assert seqs(index.search("u1", session.id, "passport", limit=1, sync=False))[0] in (7, 8)
    assert index.sync("u1", session.id) == SyncReport()


def test_concurrent_syncs_neither_duplicate_nor_lose_events(
    db_url: str, home: Path, engine: ContextEngine
) -> None:
    session = engine.create_session(user_id="u1")
    for i in range(6):
        fill(session, [("user", f"question {i} about topic{i}"), ("assistant", f"answer {i}")])
    # Two engines: separate connection pools and writer locks, as two processes have.
    with ContextEngine(url=db_url, home=home) as second:
        indexes = [
            SearchIndex(db, HashingEmbedder(), config=RetrievalConfig(sync_batch=3))
            for db in (engine.db, second.db)
        ]
        barrier = threading.Barrier(2)
        reports: list[SyncReport] = []
        errors: list[BaseException] = []

        def run(index: SearchIndex) -> None:
            try:
                barrier.wait()
                reports.append(index.sync("u1", session.id))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(ix,)) for ix in indexes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors
    assert sum(r.indexed for r in reports) == 12 and sum(r.embedded for r in reports) == 12
    with engine.db.read() as conn:
        docs = conn.execute(select(search_docs.c.seq).order_by(search_docs.c.seq)).scalars()
        assert list(docs) == list(range(1, 13))
        codes = conn.execute(
            select(search_codes.c.embedder_id, search_codes.c.seq).order_by(
                search_codes.c.embedder_id, search_codes.c.seq
            )
        ).all()
        # Each event once in each vector set (its own, and embedded after the one before).
        by_set: dict[int, list[int]] = {}
        for embedder_id, seq in codes:
            by_set.setdefault(embedder_id, []).append(seq)
        assert len(by_set) == 2 and all(seqs == list(range(1, 13)) for seqs in by_set.values())
        counts = conn.execute(select(search_dense.c.vector_count)).scalars()
        assert list(counts) == [12, 12]


def test_large_sessions_rank_through_sign_codes_like_the_exact_search(
    engine: ContextEngine,
) -> None:
    session = engine.create_session(user_id="u1")
    topics = ["tokyo flight", "paris weather", "passport renewal", "tax return", "dog walking"]
    pairs = [("user", f"note {i}: {topics[i % 5]} item{i}") for i in range(60)]
    with session.turn() as turn:
        for role, text in pairs:
            turn.add_message(role, text)
    # Own vectors only: a contextual vector would also find the note after each match.
    exact = SearchIndex(
        engine.db,
        HashingEmbedder(),
        config=RetrievalConfig(code_cache_vectors=0, context_chars=0),
    )
    coded = SearchIndex(
        engine.db,
        HashingEmbedder(),
        config=RetrievalConfig(exact_vector_limit=0, rescore_candidates=40, context_chars=0),
    )
    query = "passport renewal"
    by_exact = exact.search("u1", session.id, query, lexical=False, limit=12)
    by_codes = coded.search("u1", session.id, query, lexical=False, limit=12)
    assert {h.seq for h in by_exact} == {h.seq for h in by_codes} == {3 + 5 * k for k in range(12)}
    limited = coded.search("u1", session.id, query, lexical=False, exclude_from_seq=20)
    assert {h.seq for h in limited} == {3, 8, 13, 18}
    # The session grows: the codes held in memory are extended with the new ones.
    with session.turn() as turn:
        for i in range(60, 75):
            turn.add_message("user", f"note {i}: {topics[i % 5]} item{i}")
    by_exact = exact.search("u1", session.id, query, lexical=False, limit=15)
    by_codes = coded.search("u1", session.id, query, lexical=False, limit=15)
    assert {h.seq for h in by_exact} == {h.seq for h in by_codes} == {3 + 5 * k for k in range(15)}


def test_neighbours_stay_inside_the_turn(engine: ContextEngine, index: SearchIndex) -> None:
    session = engine.create_session(user_id="u1")
    fill(session)
    assert index.neighbours("u1", session.id, [3]) == [4]  # seq 2 is the previous turn
    assert index.neighbours("u1", session.id, [3], same_turn=False) == [2, 4]
    assert index.neighbours("u1", session.id, [3, 4], radius=2, same_turn=False) == [1, 2, 5, 6]
    assert index.neighbours("u2", session.id, [3]) == []


def test_fusion_rewards_agreement_and_respects_weights() -> None:
    fused = fuse([([1, 2, 3], 1.0), ([2, 4, 1], 1.0)], k=60)
    assert [seq for seq, _, _ in fused] == [2, 1, 4, 3]
    assert fused[0][2] == [2, 1] and fused[3][2] == [3, None]
    assert fuse([([1], 0.0), ([2], 1.0)], k=60)[0][0] == 2


def test_retriever_protocol_of_the_context_builder(
    engine: ContextEngine, index: SearchIndex
) -> None:
    from agentctx.context.sources import Retriever

    session = engine.create_session(user_id="u1")
    fill(session)
    assert isinstance(index, Retriever)
    hits = index.retrieve("u1", session.id, "Paris weather", limit=2, before_seq=6).hits
    assert hits[0].seq == 5 and all(h.seq < 6 for h in hits) and hits[0].score > 0


def test_index_tables_are_the_migrated_schema_plus_derived_tables(
    engine: ContextEngine, index: SearchIndex
) -> None:
    session = engine.create_session(user_id="u1")
    fill(session)
    index.sync("u1", session.id)
    with engine.db.engine.connect() as conn:
        on_this = include_object_on(conn.dialect.name)
        hooks = {"include_name": include_name, "include_object": on_this}
        context = MigrationContext.configure(conn, opts=hooks)
        assert compare_metadata(context, metadata) == []
        unfiltered = MigrationContext.configure(conn, opts={"include_object": on_this})
        with warnings.catch_warnings():  # SQLAlchemy does not know pgvector's type
            warnings.simplefilter("ignore")
            derived = {diff[1].name for diff in compare_metadata(unfiltered, metadata)}
    assert {"search_fts", "search_vec_1"} <= derived
    assert all(name.startswith(("search_fts", "search_vec_")) for name in derived)


def test_terms_over_the_postings_budget_give_way_to_rarer_ones_or_recent_documents(
    engine: ContextEngine,
) -> None:
    session = engine.create_session(user_id="u1")
    with session.turn() as turn:
        for i in range(300):
            rare = " zanzibar" if i in (10, 20) else ""
            turn.add_message("user", f"common word number {i}{rare}")
    index = SearchIndex(engine.db, None, config=RetrievalConfig(max_postings=100))
    # "common" (300 postings) is dropped in favour of the rare term.
    assert {h.seq for h in index.search("u1", session.id, "common zanzibar")} == {11, 21}
    # Alone, it is looked up among the newest documents only (about 100 of them).
    recent = seqs(index.search("u1", session.id, "common", limit=300))
    assert recent and min(recent) >= 190 and max(recent) == 300
    older = seqs(index.search("u1", session.id, "common", limit=300, exclude_from_seq=101))
    assert older and min(older) >= 1 and max(older) == 100


def test_a_short_answer_is_found_through_the_question_before_it(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    fill(
        session,
        [
            ("user", "We adopted a grey cat from the shelter, we call him Moon"),
            ("assistant", "Lovely! How old is Moon?"),
            ("user", "They said six"),
            ("assistant", "A calm age for a cat"),
            ("user", "The weather in Lisbon was sunny all week"),
            ("assistant", "Sounds like a good trip"),
        ],
    )
    query = "How old is the cat Moon?"
    own_only = SearchIndex(engine.db, HashingEmbedder(), config=RetrievalConfig(context_chars=0))
    with_context = SearchIndex(engine.db, HashingEmbedder())
    answer = 3
    own = [h.seq for h in own_only.search("u1", session.id, query, lexical=False, limit=4)]
    contextual = [
        h.seq for h in with_context.search("u1", session.id, query, lexical=False, limit=4)
    ]
    # Alone, "They said six" shares nothing with the question; embedded after "How old
    # is Moon?" it is among the nearest.
    assert answer not in own
    assert answer in contextual


def _index_rows(engine: ContextEngine, session_id: str) -> tuple[Any, ...]:
    with engine.db.read() as conn:
        head = conn.execute(
            select(
                search_sessions.c.sid,
                search_sessions.c.indexed_seq,
                search_sessions.c.doc_count,
                search_sessions.c.term_count,
            ).where(search_sessions.c.session_id == session_id)
        ).one()
        docs = conn.execute(
            select(search_docs.c.seq, search_docs.c.term_count)
            .where(search_docs.c.sid == head.sid)
            .order_by(search_docs.c.seq)
        ).all()
    return tuple(head)[1:], [tuple(d) for d in docs]


def test_a_long_backlog_is_indexed_in_bounded_writes_with_the_same_result(
    engine: ContextEngine, index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's append waits for SQLite's writer: a sync stores a backlog in several
    short transactions, each about ``LEXICAL_WRITE_TERMS`` terms (a document is never
    split), and the index is the one a single transaction makes."""
    pairs = [
        (role, f"{text} (note {i}: topic{i} detail{i * 7})")
        for i in range(6)
        for role, text in CONVERSATION
    ]
    whole, cut = engine.create_session(user_id="u1"), engine.create_session(user_id="u1")
    fill(whole, pairs)
    fill(cut, pairs)
    index.sync("u1", whole.id)

    stored: list[int] = []
    insert = sync_module.lexical_index.insert_prepared

    def counting(conn: Any, prepared: Any) -> tuple[int, int]:
        # SQLite stores a document's terms as one text, PostgreSQL as a list.
        stored.append(sum(len(t.split() if isinstance(t, str) else t) for t in prepared.stored))
        return insert(conn, prepared)

    monkeypatch.setattr(sync_module, "LEXICAL_WRITE_TERMS", 40)
    monkeypatch.setattr(sync_module.lexical_index, "insert_prepared", counting)
    assert index.sync("u1", cut.id).indexed == len(pairs)
    longest = max(len(text.split()) for _, text in pairs) * 3  # generous: terms per word
    assert len(stored) > 5 and all(n < 40 + longest for n in stored)
    assert _index_rows(engine, cut.id) == _index_rows(engine, whole.id)
    for query in ("Tokyo passport", "topic3 detail21", "北京 航班"):
        assert seqs(index.search("u1", cut.id, query, limit=5)) == seqs(
            index.search("u1", whole.id, query, limit=5)
        )


def test_a_sync_cut_off_between_writes_resumes_without_duplicates(
    engine: ContextEngine, index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = engine.create_session(user_id="u1")
    pairs = [(role, f"{text} (round {i})") for i in range(4) for role, text in CONVERSATION]
    fill(session, pairs)
    insert = sync_module.lexical_index.insert_prepared
    calls: list[int] = []

    def failing_third(conn: Any, prepared: Any) -> tuple[int, int]:
        calls.append(len(prepared.seqs))
        if len(calls) == 3:
            raise RuntimeError("the process died here")
        return insert(conn, prepared)

    monkeypatch.setattr(sync_module, "LEXICAL_WRITE_TERMS", 30)
    monkeypatch.setattr(sync_module.lexical_index, "insert_prepared", failing_third)
    with pytest.raises(RuntimeError):
        index.sync("u1", session.id)
    (indexed_seq, doc_count, _), docs = _index_rows(engine, session.id)
    # The first two writes stand, whole: progress at the end of the second.
    assert doc_count == len(docs) == calls[0] + calls[1]
    assert indexed_seq == docs[-1][0]
    monkeypatch.setattr(sync_module.lexical_index, "insert_prepared", insert)
    assert index.sync("u1", session.id).indexed == len(pairs) - len(docs)
    (indexed_seq, doc_count, _), docs = _index_rows(engine, session.id)
    assert [seq for seq, _ in docs] == list(range(1, len(pairs) + 1))
    assert doc_count == len(pairs) and indexed_seq == len(pairs)
