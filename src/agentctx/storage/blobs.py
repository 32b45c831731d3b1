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


class StagedBlob:
    """Bytes written for a blob and fsynced, not yet stored under its id.

    :meth:`commit` stores them (a rename for a :class:`FileBlobStore`, ``put`` for any
    other store); :meth:`discard` removes them. Exactly one of the two is called.
    """

    def __init__(
        self,
        store: BlobStore,
        blob_id: str,
        data: bytes,
        temporary: Path | None = None,
        path: Path | None = None,
    ) -> None:
        self.blob_id = blob_id
        self._store = store
        self._data = data
        self._temporary = temporary
        self._path = path

    def commit(self) -> str:
        """Store the bytes under their id (durable when this returns); the blob id."""
        if self._temporary is None or self._path is None:
            # Nothing staged (another store, or the bytes were already there when staged,
            # and may have been collected since): put() checks and writes.
            return self._store.put(self._data)
        temporary, self._temporary = self._temporary, None
        _rename(temporary, self._path, self.blob_id)
        return self.blob_id

    def discard(self) -> None:
        """Remove the staged bytes (the blob is not stored after all)."""
        if self._temporary is not None:
            self._temporary.unlink(missing_ok=True)
            self._temporary = None


def stage_blob(store: BlobStore, data: bytes) -> StagedBlob:
    """``data`` staged in ``store``: written ahead where the store can (a
    :class:`FileBlobStore`), else held until :meth:`StagedBlob.commit` puts it."""
    if isinstance(store, FileBlobStore):
        return store.stage(data)
    return StagedBlob(store, blob_id_of(data), data)


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
        if not path.exists():
            _rename(self._write_temporary(blob_id, path, data), path, blob_id)
        return blob_id

    def stage(self, data: bytes) -> StagedBlob:
        """Write ``data`` durably under a temporary name, invisible until committed.

        The write and its fsync can then overlap other work (hashing an image) before
        it is known whether the bytes are kept at all; committing is a rename.
        """
        blob_id = blob_id_of(data)
        path = self._path(blob_id)
        if path.exists():
            return StagedBlob(self, blob_id, data)
        return StagedBlob(self, blob_id, data, self._write_temporary(blob_id, path, data), path)

    @staticmethod
    def _write_temporary(blob_id: str, path: Path, data: bytes) -> Path:
        """``data`` in a new file beside ``path``, fsynced."""
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise StorageError(f"cannot write blob {blob_id}: {exc}") from exc
        return Path(tmp)

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


def _rename(temporary: Path, path: Path, blob_id: str) -> None:
    """Move a written temporary file to its blob path (atomic); removed if that fails."""
    try:
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise StorageError(f"cannot write blob {blob_id}: {exc}") from exc
