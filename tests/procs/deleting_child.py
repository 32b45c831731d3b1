"""A process that deletes a user's data (or one session) and is killed on the way.

``python deleting_child.py URL HOME WHAT ID POINT``: WHAT is ``user`` (ID a user id) or
``session`` (ID ``user_id/session_id``). POINT says where the process kills itself
with SIGKILL: ``inside`` the deletion's transaction, once the user's memories are
deleted and before it commits (``user`` only), or once it ``committed``, before its
erasure row is stamped. It never exits normally.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from agentctx import ContextEngine
from agentctx.memory import store
from agentctx.sessions.erasures import ErasureFeed


def die(*_: Any) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> int:
    url, home, what, ident, point = argv
    if point == "inside":
        purge = store.purge_user

        def purge_then_die(conn: Any, user_id: str) -> dict[str, int]:
            purge(conn, user_id)
            die()
            raise AssertionError("not killed")

        store.purge_user = purge_then_die
    elif point == "committed":
        ErasureFeed.stamp = die  # type: ignore[assignment,method-assign]
    else:
        raise SystemExit(f"unknown point {point!r}")
    with ContextEngine(
        url=url, home=home, embeddings={"provider": "hashing"}, erasure_poll=None
    ) as engine:
        if what == "user":
            engine.delete_user_data(ident)
        else:
            user_id, session_id = ident.split("/")
            engine.delete_session(session_id, user_id=user_id)
    return 1  # reached only if the kill did not happen


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
