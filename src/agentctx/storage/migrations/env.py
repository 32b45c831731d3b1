"""Alembic environment: migrations run on the connection agentctx hands in."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from agentctx.storage.schema import include_name, include_object_on, metadata

connection = context.config.attributes.get("connection")


def _run(conn: object) -> None:
    context.configure(
        connection=conn,  # type: ignore[arg-type]
        target_metadata=metadata,
        render_as_batch=True,
        compare_type=True,
        include_name=include_name,  # the search index's run-time tables are not migrated
        include_object=include_object_on(conn.dialect.name),  # type: ignore[attr-defined]
    )
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    _run(connection)
else:  # plain `alembic` command line use, with sqlalchemy.url set in the config
    engine = create_engine(context.config.get_main_option("sqlalchemy.url") or "")
    with engine.begin() as conn:
        _run(conn)
