"""Moving a test database to a migration revision, down or up (Alembic's commands on
the database's own connection)."""

from __future__ import annotations

from alembic import command

from agentctx.storage import migrate
from agentctx.storage.database import Database


def move(db: Database, target: str) -> None:
    """Upgrade ``db`` to ``"head"``, or downgrade it to revision ``target``."""
    config = migrate._config()
    with db.engine.begin() as conn:
        config.attributes["connection"] = conn
        if target == "head":
            command.upgrade(config, target)
        else:
            command.downgrade(config, target)
