"""The schema's shared parts: the metadata every table registers on (with its naming
convention), the JSON and id column types, and timestamps stored as UTC everywhere."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Dialect,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeEngine

ONLY_ON = "agentctx_only_on"
"""``info`` key of a schema object created on one dialect only (see :func:`only_on`)."""


_OneDialect = TypeVar("_OneDialect", Index, UniqueConstraint)


def only_on(dialect: str, item: _OneDialect) -> _OneDialect:
    """``item`` (an index or a unique constraint), created on ``dialect`` only, and marked
    so (``info[ONLY_ON]``) for the schema comparison, which does not read ``ddl_if``."""
    item.info[ONLY_ON] = dialect
    return item.ddl_if(dialect=dialect)


NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = MetaData(naming_convention=NAMING)

JsonColumn = JSON().with_variant(JSONB(), "postgresql")
# SQLite only autoincrements INTEGER PRIMARY KEY columns.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend.

    PostgreSQL stores ``timestamptz``. SQLite has no date type: values are stored
    as naive UTC text, ``YYYY-MM-DD HH:MM:SS.ffffff`` (the format SQLAlchemy's own
    SQLite DATETIME uses), which sorts and compares correctly as text and parses
    with the C ``datetime.fromisoformat``.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(26))
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
        return value

    def fast_bind_processor(self, dialect: Dialect) -> Callable[[datetime], Any]:
        """One-step bind conversion for the hot write path (same values as below)."""
        return lambda value: self.process_bind_param(value, dialect)

    def fast_result_processor(self, dialect: Dialect) -> Callable[[Any], datetime] | None:
        """One-step result conversion for the hot read path (same values as below)."""
        if dialect.name == "sqlite":
            return lambda value: datetime.fromisoformat(value).replace(tzinfo=UTC)
        return lambda value: value.astimezone(UTC)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            return datetime.fromisoformat(value).replace(tzinfo=UTC)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)  # type: ignore[no-any-return]
        return value.astimezone(UTC)  # type: ignore[no-any-return]


ID = 128  # length of user-visible identifiers


def session_foreign_key() -> ForeignKeyConstraint:
    """A row's link to the session it belongs to, by (user_id, session_id): deleting the
    session deletes the row. A new constraint each call, as each table needs its own."""
    return ForeignKeyConstraint(
        ["user_id", "session_id"],
        ["sessions.user_id", "sessions.session_id"],
        ondelete="CASCADE",
    )
