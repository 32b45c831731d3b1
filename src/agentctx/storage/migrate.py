"""Schema migrations: Alembic, run automatically when a database is opened.

Opening a database reads its revision first (one cheap query, no Alembic
import); only when it is behind does it take a cross-process lock and upgrade,
so many processes opening the same database at once migrate it exactly once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.exc import SQLAlchemyError

from agentctx.errors import MigrationError
from agentctx.storage.database import Database

if TYPE_CHECKING:
    from alembic.config import Config

_SCRIPTS = Path(__file__).parent / "migrations"

HEAD_REVISION = "0019"
"""The newest revision in ``migrations/versions`` (a test checks it against Alembic's view).

Kept as a constant so opening an up-to-date database never imports Alembic.
"""


def _config() -> Config:
    from alembic.config import Config  # noqa: PLC0415 - kept off the startup path

    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    return config


def head_revision() -> str:
    """The newest revision this version of agentctx knows."""
    return HEAD_REVISION


def scripted_head() -> str | None:
    """The head according to Alembic's scan of the migration scripts."""
    from alembic.script import ScriptDirectory  # noqa: PLC0415 - kept off the startup path

    return ScriptDirectory.from_config(_config()).get_current_head()


def current_revision(db: Database) -> str | None:
    """The revision the database is at (None for an empty database)."""
    with db.engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def upgrade(db: Database) -> bool:
    """Bring the database to the newest revision. Returns whether anything ran."""
    try:
        if current_revision(db) == HEAD_REVISION:
            return False
        with db.exclusive("agentctx-migrate"):
            if current_revision(db) == HEAD_REVISION:
                return False
            from alembic import command  # noqa: PLC0415 - only when an upgrade runs

            config = _config()
            with db.engine.begin() as connection:
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
            return True
    except SQLAlchemyError as exc:
        raise MigrationError(f"migration failed: {exc}") from exc
