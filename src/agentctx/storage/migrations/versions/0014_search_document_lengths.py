"""Each indexed document's length (its distinct terms), so BM25 on SQLite can be scored
from the session's own statistics rather than FTS5's, which cover every session.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_BATCH = 2000


def upgrade() -> None:
    # A plain ADD COLUMN on both databases: rebuilding search_docs (a batch operation)
    # would drop the trigger that clears the derived full-text and vector rows.
    op.add_column("search_docs", sa.Column("term_count", sa.Integer, nullable=True))
    conn = op.get_bind()
    if not sa.inspect(conn).has_table("search_fts"):
        return  # nothing indexed yet (the full-text table is made on first use)
    if conn.dialect.name == "postgresql":
        op.execute(
            "UPDATE search_docs AS d SET term_count = length(f.terms) "
            "FROM search_fts AS f WHERE f.doc_id = d.doc_id"
        )
        return
    # SQLite keeps each document's terms as text: count the distinct ones, in batches.
    last = 0
    while True:
        rows = conn.exec_driver_sql(
            "SELECT d.doc_id, f.terms FROM search_docs AS d JOIN search_fts AS f "
            "ON f.rowid = d.doc_id WHERE d.doc_id > ? ORDER BY d.doc_id LIMIT ?",
            (last, _BATCH),
        ).all()
        if not rows:
            return
        conn.exec_driver_sql(
            "UPDATE search_docs SET term_count = ? WHERE doc_id = ?",
            [(len(set(str(terms).split())), doc_id) for doc_id, terms in rows],
        )
        last = int(rows[-1][0])


def downgrade() -> None:
    op.drop_column("search_docs", "term_count")
