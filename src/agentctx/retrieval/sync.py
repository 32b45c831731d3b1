"""Keeping a session's index current: lexical documents first, then their vectors.

A sync step reads and analyzes (and embeds) outside any transaction, then writes
under the session's index row lock (the writer lock on SQLite, ``FOR UPDATE`` on
PostgreSQL), keeping only what is still newer than the recorded progress. Two
processes syncing one session therefore never duplicate or skip an event; at worst
both embed the same batch once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, bindparam, literal, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from agentctx.errors import ConfigError
from agentctx.events import utcnow
from agentctx.llm.embeddings import Embedder
from agentctx.retrieval import dense as dense_index
from agentctx.retrieval import lexical as lexical_index
from agentctx.retrieval.terms import document_terms
from agentctx.retrieval.text import MAX_EMBED_CHARS, stored_event_text
from agentctx.storage import fastsql
from agentctx.storage.database import Database
from agentctx.storage.schema import (
    UTCDateTime,
    events,
    search_dense,
    search_docs,
    search_embedders,
    search_sessions,
    sessions,
)


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What one sync added: events indexed lexically, and vectors stored."""

    indexed: int = 0
    embedded: int = 0


@dataclass(frozen=True, slots=True)
class IndexState:
    """Where a session's log ends and how far its index has got."""

    last_seq: int
    sid: int | None  # None: never indexed
    indexed_seq: int
    doc_count: int
    term_count: int
    embedded_seq: int
    vector_count: int


def _insert(conn: Connection, table: Any) -> Any:
    return (pg_insert if conn.dialect.name == "postgresql" else sqlite_insert)(table)


def _state_statement() -> Any:
    ss, sd = search_sessions, search_dense
    joined = sessions.outerjoin(
        ss, and_(ss.c.user_id == sessions.c.user_id, ss.c.session_id == sessions.c.session_id)
    ).outerjoin(sd, and_(sd.c.sid == ss.c.sid, sd.c.embedder_id == bindparam("embedder_id")))
    return (
        select(
            sessions.c.last_seq,
            ss.c.sid,
            ss.c.indexed_seq,
            ss.c.doc_count,
            ss.c.term_count,
            sd.c.embedded_seq,
            sd.c.vector_count,
        )
        .select_from(joined)
        .where(
            sessions.c.user_id == bindparam("user_id"),
            sessions.c.session_id == bindparam("session_id"),
        )
    )


def read_state(
    conn: Connection, user_id: str, session_id: str, embedder_id: int | None
) -> IndexState | None:
    """The session's index state in one query; None when the session does not exist.

    Read several times a window (search, neighbours, sync checks): compiled once.
    """
    rows = fastsql.statement(conn, "search_index_state", _state_statement).fetch_values(
        conn, {"user_id": user_id, "session_id": session_id, "embedder_id": embedder_id or -1}
    )
    if not rows:
        return None
    row = rows[0]
    return IndexState(
        last_seq=int(row[0]),
        sid=None if row[1] is None else int(row[1]),
        indexed_seq=int(row[2] or 0),
        doc_count=int(row[3] or 0),
        term_count=int(row[4] or 0),
        embedded_seq=int(row[5] or 0),
        vector_count=int(row[6] or 0),
    )


def register_embedder(conn: Connection, name: str, dimensions: int) -> int:
    """The id vectors of ``name`` are stored under (registered on first use)."""
    conn.execute(
        _insert(conn, search_embedders)
        .values(name=name, dimensions=dimensions, created_at=utcnow())
        .on_conflict_do_nothing()
    )
    embedder_id, stored = conn.execute(
        select(search_embedders.c.embedder_id, search_embedders.c.dimensions).where(
            search_embedders.c.name == name
        )
    ).one()
    if stored != dimensions:
        raise ConfigError(
            f"embedder {name!r} gives {dimensions} dimensions but its stored vectors have "
            f"{stored}; give the model a new name"
        )
    return int(embedder_id)


def _lock_session(conn: Connection, user_id: str, session_id: str) -> Any:
    """The session's index row, locked (created first if missing); None if no session."""
    ss = search_sessions
    query = (
        select(ss.c.sid, ss.c.indexed_seq)
        .where(ss.c.user_id == user_id, ss.c.session_id == session_id)
        .with_for_update()
    )
    row = conn.execute(query).first()
    if row is not None:
        return row
    source = select(
        sessions.c.user_id,
        sessions.c.session_id,
        literal(0),
        literal(0),
        literal(0),
        literal(utcnow(), UTCDateTime()),
    ).where(sessions.c.user_id == user_id, sessions.c.session_id == session_id)
    columns = ["user_id", "session_id", "indexed_seq", "doc_count", "term_count", "updated_at"]
    conn.execute(_insert(conn, ss).from_select(columns, source).on_conflict_do_nothing())
    return conn.execute(query).first()


def _lock_dense(conn: Connection, sid: int, embedder_id: int) -> int | None:
    """The session's dense progress for an embedder, locked; None if the session went."""
    sd = search_dense
    query = (
        select(sd.c.embedded_seq)
        .where(sd.c.sid == sid, sd.c.embedder_id == embedder_id)
        .with_for_update()
    )
    found = conn.execute(query).scalar()
    if found is not None:
        return int(found)
    source = select(
        search_sessions.c.sid,
        literal(embedder_id),
        literal(0),
        literal(0),
        literal(utcnow(), UTCDateTime()),
    ).where(search_sessions.c.sid == sid)
    columns = ["sid", "embedder_id", "embedded_seq", "vector_count", "updated_at"]
    conn.execute(_insert(conn, sd).from_select(columns, source).on_conflict_do_nothing())
    found = conn.execute(query).scalar()
    return None if found is None else int(found)


LEXICAL_WRITE_TERMS = 4_000
"""About the most terms one lexical write transaction stores (a document is never
split): on SQLite the agent's next append waits for whoever holds the writer, and
storing a turn's documents at once held it 13 ms at the median and up to 70. Between
writes the agent's own writes go first (:class:`agentctx.priority.ForegroundFirstLock`)."""


def sync_lexical(
    db: Database, user_id: str, session_id: str, *, after: int, batch: int, sid: int | None
) -> int:
    """Index the session's events after seq ``after``; returns how many were new.
    ``sid``: the session's index number as last read (None: never indexed)."""
    added = 0
    while True:
        with db.read() as conn:
            rows = conn.execute(
                select(events.c.seq, events.c.parts, events.c.payload, events.c.meta)
                .where(
                    events.c.user_id == user_id,
                    events.c.session_id == session_id,
                    events.c.seq > after,
                )
                .order_by(events.c.seq)
                .limit(batch)
            ).all()
        if not rows:
            return added
        documents = [
            lexical_index.Document(int(seq), document_terms(stored_event_text(part, load, meta)))
            for seq, part, load, meta in rows
        ]
        for chunk, last in _write_chunks(documents, int(rows[-1][0])):
            written = _write_lexical(db, user_id, session_id, chunk, last=last, sid=sid)
            if written is None:  # the session was deleted meanwhile
                return added
            sid, fresh, done = written
            added += fresh
            after = max(last, done)
        if len(rows) < batch:
            return added


def _within_chars(texts: list[str], budget: int) -> int:
    """How many of ``texts``, from the first, fit in ``budget`` characters (at least one)."""
    used = 0
    for count, text in enumerate(texts):
        used += len(text)
        if used > budget and count > 0:
            return count
    return len(texts)


def _write_chunks(
    documents: list[lexical_index.Document], last: int
) -> list[tuple[list[lexical_index.Document], int]]:
    """``documents`` cut into runs of about :data:`LEXICAL_WRITE_TERMS` terms, each with
    the seq its write records as indexed (the last run: ``last``, the batch's end, which
    may be an event without terms)."""
    chunks: list[tuple[list[lexical_index.Document], int]] = []
    run: list[lexical_index.Document] = []
    terms = 0
    for document in documents:
        run.append(document)
        terms += len(document.terms)
        if terms >= LEXICAL_WRITE_TERMS:
            chunks.append((run, document.seq))
            run, terms = [], 0
    if run or not chunks:
        chunks.append((run, last))
    else:
        chunks[-1] = (chunks[-1][0], last)
    return chunks


def _write_lexical(
    db: Database,
    user_id: str,
    session_id: str,
    documents: list[lexical_index.Document],
    *,
    last: int,
    sid: int | None,
) -> tuple[int, int, int] | None:
    """Store ``documents`` (newer than the recorded progress only) and record the index
    as reaching ``last``: (the session's index number, documents added, the progress
    found). None when the session is gone."""
    # The rows are made before the write lock is taken (the session's number does not
    # change once given); only a first sync of the session makes them inside.
    prepared = (
        lexical_index.prepare_documents(sid, documents, db.dialect) if sid is not None else None
    )
    with db.write(durable=False) as conn:  # derived: rebuilt from the log
        head = _lock_session(conn, user_id, session_id)
        if head is None:
            return None
        sid, done = int(head[0]), int(head[1])  # (a first sync creates the number)
        if last <= done:
            return sid, 0, done
        fresh = [d for d in documents if d.seq > done]
        if prepared is None or prepared.sid != sid or len(fresh) < len(documents):
            prepared = lexical_index.prepare_documents(sid, fresh, db.dialect)
        docs, terms = lexical_index.insert_prepared(conn, prepared)
        ss = search_sessions
        conn.execute(
            update(ss)
            .where(ss.c.sid == sid)
            .values(
                indexed_seq=last,
                doc_count=ss.c.doc_count + docs,
                term_count=ss.c.term_count + terms,
                updated_at=utcnow(),
            )
        )
        return sid, len(fresh), done


def sync_dense(
    db: Database,
    embedder: Embedder,
    user_id: str,
    session_id: str,
    *,
    embedder_id: int,
    batch: int,
    limit: int | None,
    context_chars: int = 0,
    max_chars: int | None = None,
) -> int:
    """Embed the session's indexed documents that have no vector yet (at most ``limit``).

    ``context_chars`` > 0 embeds each document after the last that many characters of
    the document before it (the contextual vectors of :mod:`agentctx.retrieval.index`).
    ``max_chars``: stop once about this many characters were embedded (at least one
    document): the model's time grows with the text, not with the documents.
    """
    added = 0
    chars_left = max_chars
    while (limit is None or added < limit) and (chars_left is None or chars_left > 0):
        take = batch if limit is None else min(batch, limit - added)
        with db.read() as conn:
            state = read_state(conn, user_id, session_id, embedder_id)
            if state is None or state.sid is None or state.embedded_seq >= state.indexed_seq:
                return added
            sid = state.sid
            rows, full = _documents_to_embed(conn, user_id, session_id, state, take)
        texts = [stored_event_text(p, pl, m)[:MAX_EMBED_CHARS] for _, _, p, pl, m in rows]
        if context_chars and texts:
            with db.read() as conn:
                before = _previous_text(conn, user_id, session_id, sid, int(rows[0][1]))
            texts = with_context([before, *texts[:-1]], texts, context_chars)
        cut = False
        if chars_left is not None:
            kept = _within_chars(texts, chars_left)
            cut = kept < len(texts)
            rows, texts = rows[:kept], texts[:kept]
            # After a cut the budget is spent: the next document would not fit either.
            chars_left = 0 if cut else chars_left - sum(len(text) for text in texts)
        vectors = embedder.embed(texts) if texts else []
        # Read in the same snapshot as indexed_seq: a short batch covers every document.
        covered = int(rows[-1][1]) if cut else (full if full is not None else state.indexed_seq)
        with db.write(durable=False) as conn:  # derived: rebuilt from the log
            done = _lock_dense(conn, sid, embedder_id)
            if done is None:  # deleted meanwhile
                return added
            if covered > done:
                # A zero vector (nothing the model could read) is near nothing: not stored.
                fresh = [
                    (int(row[0]), int(row[1]), vector)
                    for row, vector in zip(rows, vectors, strict=True)
                    if int(row[1]) > done and any(vector)
                ]
                dense_index.insert_vectors(conn, embedder_id, sid, fresh)
                sd = search_dense
                conn.execute(
                    update(sd)
                    .where(sd.c.sid == sid, sd.c.embedder_id == embedder_id)
                    .values(
                        embedded_seq=covered,
                        vector_count=sd.c.vector_count + len(fresh),
                        updated_at=utcnow(),
                    )
                )
                added += len(fresh)
        if full is None and not cut:
            return added
    return added


def _documents_to_embed(
    conn: Connection, user_id: str, session_id: str, state: IndexState, take: int
) -> tuple[list[tuple[int, int, Any, Any, Any]], int | None]:
    """(doc_id, seq, parts, payload, meta) of the next ``take`` documents waiting for a
    vector, in seq order, and the seq of the last document read when there were
    ``take`` of them (None: these are all). The documents are read first, then their
    events as one range of the primary key: as a join, PostgreSQL, estimating a new
    session at a row, read the batch's events again for each document (32,640 rows for
    a batch of 256)."""
    assert state.sid is not None
    docs = conn.execute(
        select(search_docs.c.doc_id, search_docs.c.seq)
        .where(
            search_docs.c.sid == state.sid,
            search_docs.c.seq > state.embedded_seq,
            search_docs.c.seq <= state.indexed_seq,
        )
        .order_by(search_docs.c.seq)
        .limit(take)
    ).all()
    if not docs:
        return [], None
    stored = {
        int(row[0]): row
        for row in conn.execute(
            select(events.c.seq, events.c.parts, events.c.payload, events.c.meta).where(
                events.c.user_id == user_id,
                events.c.session_id == session_id,
                events.c.seq >= docs[0][1],
                events.c.seq <= docs[-1][1],
            )
        )
    }
    rows = [
        (int(doc_id), int(seq), stored[seq][1], stored[seq][2], stored[seq][3])
        for doc_id, seq in docs
        if seq in stored
    ]
    return rows, int(docs[-1][1]) if len(docs) == take else None


def with_context(previous: list[str], texts: list[str], chars: int) -> list[str]:
    """Each text after the last ``chars`` characters of the one before it."""
    out = []
    for before, text in zip(previous, texts, strict=True):
        tail = before[-chars:].strip() if before else ""
        out.append(f"{tail}\n{text}" if tail else text)
    return out


def _previous_text(conn: Connection, user_id: str, session_id: str, sid: int, seq: int) -> str:
    """The searchable text of the session's last document before ``seq`` ("" if none)."""
    # The document's seq first, then its event by key: as a join, PostgreSQL may read
    # every document of a session it has no statistics for.
    # Newest first with a LIMIT, not max(): PostgreSQL may compute max() over every
    # earlier document of a session it estimates at a row.
    last = (
        select(search_docs.c.seq)
        .where(search_docs.c.sid == sid, search_docs.c.seq < seq)
        .order_by(search_docs.c.seq.desc())
        .limit(1)
        .scalar_subquery()
    )
    row = conn.execute(
        select(events.c.parts, events.c.payload, events.c.meta).where(
            events.c.user_id == user_id,
            events.c.session_id == session_id,
            events.c.seq == last,
        )
    ).first()
    return "" if row is None else stored_event_text(row[0], row[1], row[2])
