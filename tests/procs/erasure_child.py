"""A server-like process that holds a user's data in memory while another deletes it.

``python erasure_child.py URL HOME USER_ID SESSION_ID WORD``: opens its own engine on
the database (the erasure feed read every 0.2 s), reads and searches the user's session
and memories so that its caches hold them, prints ``holding``, then prints what it
holds of the user (``held <comma-separated places>`` or ``held nothing``) every 0.1 s
until its standard input closes.
"""

from __future__ import annotations

import sys
import threading
import time
from datetime import timedelta

from agentctx import ContextEngine
from agentctx.memory.index_tables import user_partition


def held(engine: ContextEngine, user_id: str, word: str) -> list[str]:
    """Where this process's memory still holds something of ``user_id``."""
    places = []
    index = engine.search_index
    if any(key[0] == user_id for key in index._reader._participants._known):
        places.append("authors")
    if any(word in query for query in index.query_vectors.queries()):
        places.append("queries")
    if len(index._vector_search.vectors) or len(index._vector_search.codes):
        places.append("vectors")
    if any(scope.user_id == user_id for scope in engine.cache._sessions):  # type: ignore[attr-defined]
        places.append("events")
    memory_index = engine.memory.index
    assert memory_index is not None
    uid = user_partition(user_id)
    if any(key[0] == uid for key in memory_index._codes.held()):
        places.append("memory codes")
    return places


def main(argv: list[str]) -> int:
    url, home, user_id, session_id, word = argv
    with ContextEngine(
        url=url,
        home=home,
        embeddings={"provider": "hashing"},
        retrieval={"exact_vector_limit": 0},
        erasure_poll=timedelta(seconds=0.2),
    ) as engine:
        assert engine.memory.index is not None
        engine.memory.index.exact_vector_limit = 0  # every user's codes kept in memory
        session = engine.get_session(session_id, user_id=user_id)
        list(session.events())
        assert engine.search_index.search(user_id, session_id, f"What did Kate say of {word}?")
        assert engine.memory.search(user_id, word)
        print("holding", flush=True)
        done = threading.Event()
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
        while not done.is_set():
            places = held(engine, user_id, word)
            print("held " + (",".join(places) if places else "nothing"), flush=True)
            time.sleep(0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
