"""The one error hierarchy of agentctx.

Every error agentctx raises on purpose is an :class:`AgentCtxError`. Each class
carries a stable machine-readable ``code`` (used by the REST API and the audit
log) so callers can branch on the kind of failure without parsing messages.

``AgentCtxError``
    ``NotFound`` (``SessionNotFound``, ``BlobNotFound`` (``ImageExpired``), ``TurnNotFound``,
    ``MemoryNotFound``)
    ``Conflict`` (``StaleSession``, ``StaleMemory``, ``IdempotencyConflict``, ``SessionExists``,
    ``OptedOut``)
    ``InvalidInput`` (``InvalidEvent``, ``BlobTooLarge`` (``ImageTooLarge``)), also a
    ``ValueError``
    ``RedactionRequired``
    ``TurnError``
    ``ConfigError``
    ``MissingExtra``, also an ``ImportError``
    ``StorageError`` (``MigrationError``)
    ``EngineClosed``

A session of another user is reported exactly like a missing one
(``SessionNotFound`` with the same message), so an error never reveals that
somebody else's data exists.
"""

from __future__ import annotations

from datetime import datetime


class AgentCtxError(Exception):
    """Base class of every error agentctx raises deliberately."""

    code: str = "agentctx_error"


class NotFound(AgentCtxError):
    """The named object does not exist for this caller."""

    code = "not_found"


class SessionNotFound(NotFound):
    """No session with this id exists for this user (or it expired)."""

    code = "session_not_found"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} not found")
        self.session_id = session_id


class BlobNotFound(NotFound):
    """No blob or image with this id is reachable for this user."""

    code = "blob_not_found"

    def __init__(self, blob_id: str) -> None:
        super().__init__(f"blob {blob_id!r} not found")
        self.blob_id = blob_id


class ImageExpired(BlobNotFound):
    """The image existed, but cold-storage retention has removed its bytes."""

    code = "image_expired"

    def __init__(self, image_id: str, expired_at: datetime) -> None:
        NotFound.__init__(
            self,
            f"image {image_id!r} has expired: cold-storage retention removed its bytes on "
            f"{expired_at:%Y-%m-%d %H:%M} UTC; only its metadata remains",
        )
        self.blob_id = image_id
        self.expired_at = expired_at


class TurnNotFound(NotFound):
    """No turn with this id exists in the session."""

    code = "turn_not_found"


class Conflict(AgentCtxError):
    """The write conflicts with the current state; nothing was changed."""

    code = "conflict"


class StaleSession(Conflict):
    """A compare-and-set write named a version or last seq that is no longer current."""

    code = "stale_session"

    def __init__(self, message: str, *, expected: int, actual: int) -> None:
        super().__init__(message)
        self.expected = expected
        self.actual = actual


class StaleMemory(Conflict):
    """A compare-and-set memory write named a version that is no longer current."""

    code = "stale_memory"

    def __init__(self, memory_id: str, *, expected: int, actual: int) -> None:
        super().__init__(
            f"memory {memory_id!r} is at version {actual}, not {expected}: reload and retry"
        )
        self.memory_id = memory_id
        self.expected = expected
        self.actual = actual


class MemoryNotFound(NotFound):
    """No memory with this id exists for this user."""

    code = "memory_not_found"

    def __init__(self, memory_id: str) -> None:
        super().__init__(f"memory {memory_id!r} not found")
        self.memory_id = memory_id


class IdempotencyConflict(Conflict):
    """An idempotency key or event id was reused for a different event."""

    code = "idempotency_conflict"


class OptedOut(Conflict):
    """The user opted out of what the write would store (declarative memory)."""

    code = "opted_out"


class SessionExists(Conflict):
    """A session with this id already exists for this user."""

    code = "session_exists"


class InvalidInput(AgentCtxError, ValueError):
    """The input is malformed; nothing was stored."""

    code = "invalid_input"


class InvalidEvent(InvalidInput):
    """An event failed validation (type, content, links, timestamps)."""

    code = "invalid_event"


class BlobTooLarge(InvalidInput):
    """A blob exceeds the configured maximum blob size."""

    code = "blob_too_large"


class ImageTooLarge(BlobTooLarge):
    """An image has more pixels than the configured ``max_image_pixels``."""

    code = "image_too_large"


class RedactionRequired(AgentCtxError):
    """The store refused to persist data that did not pass the redaction gate."""

    code = "redaction_required"


class TurnError(AgentCtxError):
    """A turn was used wrongly: nested on the same session, used after it ended, …"""

    code = "turn_error"


class ConfigError(AgentCtxError):
    """The configuration is invalid."""

    code = "config_error"


class MissingExtra(AgentCtxError, ImportError):
    """An optional dependency is not installed; the message has the pip line."""

    code = "missing_extra"

    def __init__(self, extra: str, package: str) -> None:
        super().__init__(f"{package} is required for this feature: pip install 'agentctx[{extra}]'")
        self.extra = extra
        self.package = package


class StorageError(AgentCtxError):
    """The database or blob store failed in a way the caller cannot fix."""

    code = "storage_error"


class EngineClosed(AgentCtxError):
    """The engine was closed: nothing reads or writes through it any more (open a new
    one). Not a ``StorageError``: retrying on the same engine never succeeds."""

    code = "engine_closed"

    def __init__(self, message: str = "the engine is closed") -> None:
        super().__init__(message)


class MigrationError(StorageError):
    """The schema could not be migrated."""

    code = "migration_error"
