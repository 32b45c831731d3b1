"""Writing a summary version once, however many workers try.

Thread summaries and folds are ``summaries`` rows whose (user, session, kind, version)
is unique. A worker computes a version, then inserts it in one short transaction;
when a racing worker (or an earlier run of the same job) stored that version first,
the insert fails on the constraint and the stored row is what counts.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, RowMapping, Select, bindparam, select
from sqlalchemy.exc import IntegrityError

from agentctx.storage.database import Database
from agentctx.storage.schema import summaries


def write_version_once(
    db: Database,
    write: Callable[[Connection], None],
    *,
    user_id: str,
    session_id: str,
    kind: str,
    version: int,
) -> tuple[bool, RowMapping | None]:
    """Run ``write`` (the insert) in one write transaction.

    Returns ``(True, None)`` when it committed; otherwise ``(False, row)`` with the
    version stored by whoever got there first (None when there is none: the session
    was deleted meanwhile).
    """
    try:
        with db.write() as conn:
            write(conn)
        return True, None
    except IntegrityError:
        pass  # the version exists (or the session was deleted meanwhile)
    query = select(summaries).where(
        summaries.c.user_id == user_id,
        summaries.c.session_id == session_id,
        summaries.c.kind == kind,
        summaries.c.version == version,
    )
    with db.read() as conn:
        return False, conn.execute(query).mappings().first()


def of_session(kind: str) -> Select[tuple[object, ...]]:
    """Every ``summaries`` row of ``kind`` of the session bound as ``user_id`` and
    ``session_id``: the start of a statement compiled once (``storage.fastsql``), which
    the caller orders."""
    return select(summaries).where(
        summaries.c.user_id == bindparam("user_id"),
        summaries.c.session_id == bindparam("session_id"),
        summaries.c.kind == kind,
    )
