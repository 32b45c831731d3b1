"""The SQL schema, as SQLAlchemy Core tables, a module per concern re-exported here.

Migrations (``storage/migrations``) create and change these tables; a test checks
that the migrated database matches this module exactly.

Every table that holds a user's data has a ``user_id`` column: ``delete_user_data``
finds them through :data:`USER_DATA_TABLES`, so a table added later is covered by
listing it there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Table

from agentctx.storage.schema.columns import (
    ID,
    NAMING,
    ONLY_ON,
    BigId,
    JsonColumn,
    UTCDateTime,
    metadata,
)
from agentctx.storage.schema.compaction import (
    profile_facts,
    reflections,
    summaries,
    topic_events,
    topics,
)
from agentctx.storage.schema.hitl import context_windows, hitl_flags
from agentctx.storage.schema.log import (
    agents,
    api_keys,
    audit,
    blob_refs,
    blobs,
    erasures,
    events,
    jobs,
    sessions,
    turns,
)
from agentctx.storage.schema.memory import (
    MEMORY_TABLES,
    memories,
    memory_history,
    memory_runs,
    memory_settings,
    memory_sources,
)
from agentctx.storage.schema.search import (
    search_codes,
    search_dense,
    search_docs,
    search_embedders,
    search_sessions,
    search_terms,
)

__all__ = [
    "ALL_TABLES",
    "BigId",
    "DERIVED_TABLE_PREFIXES",
    "ID",
    "JsonColumn",
    "MEMORY_TABLES",
    "NAMING",
    "USER_DATA_TABLES",
    "UTCDateTime",
    "agents",
    "api_keys",
    "audit",
    "blob_refs",
    "blobs",
    "context_windows",
    "erasures",
    "events",
    "hitl_flags",
    "include_name",
    "include_object_on",
    "jobs",
    "memories",
    "memory_history",
    "memory_runs",
    "memory_settings",
    "memory_sources",
    "metadata",
    "profile_facts",
    "reflections",
    "search_codes",
    "search_dense",
    "search_docs",
    "search_embedders",
    "search_sessions",
    "search_terms",
    "sessions",
    "summaries",
    "topic_events",
    "topics",
    "turns",
]

DERIVED_TABLE_PREFIXES = ("search_fts", "search_vec_", "memory_fts", "memory_vec_")
"""Tables the retrieval index creates at run time (with SQLite's FTS5 and sqlite-vec
shadow tables, which share the prefix). They are not in :data:`metadata`; schema
comparisons skip them with :func:`include_name`."""


def include_name(name: str | None, type_: str, _parent_names: Any = None) -> bool:
    """Alembic ``include_name`` hook: everything but the retrieval index's derived tables."""
    if type_ == "table" and name is not None:
        return not name.startswith(DERIVED_TABLE_PREFIXES)
    return True


def include_object_on(dialect: str) -> Callable[..., bool]:
    """Alembic ``include_object`` hook for a database of ``dialect``: leaves out what is
    created on another dialect only (:func:`~agentctx.storage.schema.columns.only_on`)."""

    def include(item: Any, *_rest: Any) -> bool:
        only = getattr(item, "info", {}).get(ONLY_ON)
        return only is None or only == dialect

    return include


# Tables deleted by delete_user_data, children before parents. The audit log is kept on
# purpose: it holds ids and outcomes, never content, and is what proves the deletion.
# ``search_sessions`` takes the rest of the retrieval index with it (ON DELETE CASCADE).
USER_DATA_TABLES: tuple[Table, ...] = (
    hitl_flags,
    context_windows,
    reflections,
    profile_facts,
    topic_events,
    topics,
    summaries,
    search_sessions,
    blob_refs,
    jobs,
    turns,
    events,
    sessions,
)

ALL_TABLES = (
    agents,
    sessions,
    events,
    turns,
    jobs,
    blobs,
    blob_refs,
    audit,
    search_sessions,
    search_docs,
    search_terms,
    search_embedders,
    search_dense,
    search_codes,
    summaries,
    topics,
    topic_events,
    profile_facts,
    reflections,
    memories,
    memory_sources,
    memory_history,
    memory_runs,
    memory_settings,
    api_keys,
    hitl_flags,
    context_windows,
    erasures,
)
