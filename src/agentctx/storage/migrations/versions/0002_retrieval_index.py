"""The retrieval index's bookkeeping: indexed sessions, documents, term counts, embedders,
dense progress and vector sign codes.

The lexical and vector indexes themselves (``search_fts``, ``search_vec_<id>``) are
created by ``agentctx.retrieval`` on first use; downgrading drops them too.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentctx.storage.schema import BigId, UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

ID = 128


def upgrade() -> None:
    op.create_table(
        "search_sessions",
        sa.Column("sid", BigId, nullable=False, autoincrement=True),
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("indexed_seq", sa.BigInteger, nullable=False),
        sa.Column("doc_count", sa.BigInteger, nullable=False),
        sa.Column("term_count", sa.BigInteger, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("sid", name="pk_search_sessions"),
        sa.UniqueConstraint("user_id", "session_id", name="uq_search_sessions_user_id_session_id"),
        sa.ForeignKeyConstraint(
            ["user_id", "session_id"],
            ["sessions.user_id", "sessions.session_id"],
            name="fk_search_sessions_sessions",
            ondelete="CASCADE",
        ),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "search_docs",
        sa.Column("doc_id", BigId, nullable=False, autoincrement=True),
        sa.Column("sid", sa.BigInteger, nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("doc_id", name="pk_search_docs"),
        sa.UniqueConstraint("sid", "seq", name="uq_search_docs_sid_seq"),
        sa.ForeignKeyConstraint(
            ["sid"],
            ["search_sessions.sid"],
            name="fk_search_docs_search_sessions",
            ondelete="CASCADE",
        ),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "search_terms",
        sa.Column("sid", sa.BigInteger, nullable=False),
        sa.Column("term", sa.String(64), nullable=False),
        sa.Column("df", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("sid", "term", name="pk_search_terms"),
        sa.ForeignKeyConstraint(
            ["sid"],
            ["search_sessions.sid"],
            name="fk_search_terms_search_sessions",
            ondelete="CASCADE",
        ),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "search_embedders",
        sa.Column("embedder_id", sa.Integer, nullable=False, autoincrement=True),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("dimensions", sa.Integer, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("embedder_id", name="pk_search_embedders"),
        sa.UniqueConstraint("name", name="uq_search_embedders_name"),
    )
    op.create_table(
        "search_dense",
        sa.Column("sid", sa.BigInteger, nullable=False),
        sa.Column("embedder_id", sa.Integer, nullable=False),
        sa.Column("embedded_seq", sa.BigInteger, nullable=False),
        sa.Column("vector_count", sa.BigInteger, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("sid", "embedder_id", name="pk_search_dense"),
        sa.ForeignKeyConstraint(
            ["sid"],
            ["search_sessions.sid"],
            name="fk_search_dense_search_sessions",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["embedder_id"],
            ["search_embedders.embedder_id"],
            name="fk_search_dense_search_embedders",
            ondelete="CASCADE",
        ),
    )
    op.create_table(
        "search_codes",
        sa.Column("sid", sa.BigInteger, nullable=False),
        sa.Column("embedder_id", sa.Integer, nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("doc_id", sa.BigInteger, nullable=False),
        sa.Column("code", sa.LargeBinary, nullable=False),
        sa.Column("quantized", sa.LargeBinary, nullable=False),
        sa.PrimaryKeyConstraint("sid", "embedder_id", "seq", name="pk_search_codes"),
        sa.ForeignKeyConstraint(
            ["sid"],
            ["search_sessions.sid"],
            name="fk_search_codes_search_sessions",
            ondelete="CASCADE",
        ),
        sqlite_with_rowid=False,
    )


def _drop_derived() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        # Virtual tables take their shadow tables with them; a vec0 table needs sqlite-vec
        # loaded to be dropped, which agentctx's connections have when it is installed.
        names = bind.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND sql LIKE 'CREATE VIRTUAL TABLE%' AND name LIKE 'search\\_%' ESCAPE '\\'"
        ).scalars()
        for name in list(names):
            op.execute(f'DROP TABLE IF EXISTS "{name}"')
        return
    names = bind.exec_driver_sql(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
        "AND (tablename = 'search_fts' OR tablename LIKE 'search\\_vec\\_%')"
    ).scalars()
    for name in list(names):
        op.execute(f'DROP TABLE IF EXISTS "{name}" CASCADE')


def downgrade() -> None:
    _drop_derived()
    for table in (
        "search_codes",
        "search_dense",
        "search_embedders",
        "search_terms",
        "search_docs",
        "search_sessions",
    ):
        op.drop_table(table)
