"""``agentctx db …``: the schema of the store."""

from __future__ import annotations

from pathlib import Path

import typer
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from agentctx.cli._common import expected_errors, load, one_shot, out, safe_url
from agentctx.engine import ContextEngine
from agentctx.errors import ConfigError, StorageError
from agentctx.storage import migrate as migrations
from agentctx.storage.database import Database, normalize_url

db_app = typer.Typer(help="The database schema.", no_args_is_help=True)


def _current(url: str) -> str | None:
    """The database's revision; None when it is empty or (SQLite) does not exist yet."""
    try:
        parsed = make_url(normalize_url(url))
    except ArgumentError as exc:
        raise ConfigError(f"not a database URL: {url!r}") from exc
    path = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if path not in (None, "", ":memory:") and not Path(str(path)).expanduser().exists():
        return None  # looking must not create the file
    db = Database(url)
    try:
        return migrations.current_revision(db)
    except SQLAlchemyError as exc:
        raise StorageError(f"cannot read the schema revision: {exc}") from exc
    finally:
        db.dispose()


@db_app.command("migrate")
def migrate(ctx: typer.Context) -> None:
    """Bring the database schema to the newest revision (a no-op when it is current)."""
    settings = load(ctx)
    url = settings.database_url()
    with expected_errors():
        before = _current(url)
        # Opening an engine migrates: the same path every process takes, under the same lock.
        with ContextEngine(settings=one_shot(settings)) as engine:
            after = migrations.current_revision(engine.db)
        head = migrations.head_revision()
    console = out()
    console.print(f"database  {safe_url(url)}")
    if before == after:
        console.print(f"revision  {after} (up to date; head {head})")
    else:
        console.print(f"revision  {before or 'empty'} -> {after} (head {head})")


@db_app.command("status")
def status(ctx: typer.Context) -> None:
    """Show the database's schema revision without changing anything."""
    settings = load(ctx)
    url = settings.database_url()
    with expected_errors():
        current = _current(url)
        head = migrations.head_revision()
    console = out()
    console.print(f"database  {safe_url(url)}")
    state = "up to date" if current == head else "behind: run `agentctx db migrate`"
    console.print(f"revision  {current or 'empty'} (head {head}, {state})")
