"""Schema migrations: Alembic, run automatically when a database is opened.

Opening a database checks its revision first (one cheap query); only when it is
behind does it take a cross-process lock and upgrade, so many processes opening
the same database at once migrate it exactly once.
"""

from __future__ import annotations

import functools
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.exc import SQLAlchemyError

from agentctx.errors import MigrationError
from agentctx.storage.database import Database

_SCRIPTS = Path(__file__).parent / "migrations"


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    return config


@functools.cache
def head_revision() -> str:
    """The newest revision this version of agentctx knows."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(db: Database) -> str | None:
    """The revision the database is at (None for an empty database)."""
    with db.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(db: Database) -> bool:
    """Bring the database to the newest revision. Returns whether anything ran."""
    try:
        if current_revision(db) == head_revision():
            return False
        with db.exclusive("agentctx-migrate"):
            if current_revision(db) == head_revision():
                return False
            config = _config()
            with db.engine.begin() as connection:
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
            return True
    except SQLAlchemyError as exc:
        raise MigrationError(f"migration failed: {exc}") from exc
