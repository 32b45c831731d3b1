"""The lexical index's document frequencies, read with one compiled statement for any
number of terms (``storage.where.in_bound_list``): the same counts as a plain
``IN`` list, for any term text, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import bindparam, select

from agentctx import ContextEngine
from agentctx.retrieval.lexical import document_frequencies
from agentctx.retrieval.sync import read_state
from agentctx.storage.schema import search_terms

TEXTS = [
    "Café naïve flights to 北京 booked",
    "the flight was late, 北京 was cold",
    "a third line about nothing else",
]


def test_document_frequencies_match_a_plain_in_list(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    for text in TEXTS:
        session.add_message("user", text)
    engine.search_index.sync("u1", session.id)
    with engine.db.read() as conn:
        state = read_state(conn, "u1", session.id, None)
        assert state is not None and state.sid is not None
        stored = [
            str(term)
            for term in conn.execute(
                select(search_terms.c.term).where(search_terms.c.sid == state.sid)
            ).scalars()
        ]
        odd = ['we"ird', "back\\slash", "it's", "[1,2]", "", "ünï", "北京"]
        terms = [*stored, *odd, *(f"missing{i}" for i in range(500))]
        plain = {
            str(term): int(df)
            for term, df in conn.execute(
                select(search_terms.c.term, search_terms.c.df).where(
                    search_terms.c.sid == state.sid,
                    search_terms.c.term.in_(bindparam("terms", expanding=True)),
                ),
                {"terms": terms},
            )
        }
        found = document_frequencies(conn, state.sid, terms)
        assert document_frequencies(conn, state.sid, []) == {}
        assert document_frequencies(conn, state.sid + 1, stored) == {}
    assert found == plain
    assert set(found) == set(stored)
    assert found["flight"] == 2 and found["北京"] == 2 and found["cafe"] == 1
