"""Content-addressed blob storage: screenshots, offloaded tool output, large payloads.

Bytes live outside the database (the database keeps only index metadata: size,
media type, image dimensions, and which events reference a blob). A blob's id
is the sha256 of its bytes, so the same content is stored once.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Protocol, runtime_checkable

from agentctx.errors import BlobNotFound, StorageError


def blob_id_of(data: bytes) -> str:
    """The content address of ``data``."""
    return hashlib.sha256(data).hexdigest()


@runtime_checkable
class BlobStore(Protocol):
    """Where blob bytes live. Implementations must make ``put`` durable before returning."""

    def put(self, data: bytes) -> str:
        """Store ``data`` (idempotent) and return its blob id."""
        ...

    def get(self, blob_id: str) -> bytes:
        """The bytes of ``blob_id``; raises BlobNotFound."""
        ...

    def exists(self, blob_id: str) -> bool:
        """Whether the bytes of ``blob_id`` are stored."""
        ...

    def delete(self, blob_id: str) -> bool:
        """Remove the bytes; returns whether anything was removed."""
        ...


class FileBlobStore:
    """Blobs as files under ``root/ab/cd/<sha256>``, written atomically and fsynced."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser()
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, blob_id: str) -> Path:
        if len(blob_id) != 64 or any(c not in "0123456789abcdef" for c in blob_id):
            raise BlobNotFound(blob_id)
        return self.root / blob_id[:2] / blob_id[2:4] / blob_id

    def put(self, data: bytes) -> str:
        blob_id = blob_id_of(data)
        path = self._path(blob_id)
        if path.exists():
            return blob_id
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise StorageError(f"cannot write blob {blob_id}: {exc}") from exc
        return blob_id

    def get(self, blob_id: str) -> bytes:
        path = self._path(blob_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError as exc:
            raise BlobNotFound(blob_id) from exc
        if blob_id_of(data) != blob_id:
            raise StorageError(f"blob {blob_id} is corrupt: its content does not match its hash")
        return data

    def exists(self, blob_id: str) -> bool:
        try:
            return self._path(blob_id).exists()
        except BlobNotFound:
            return False

    def delete(self, blob_id: str) -> bool:
        try:
            self._path(blob_id).unlink()
        except (FileNotFoundError, BlobNotFound):
            return False
        return True
