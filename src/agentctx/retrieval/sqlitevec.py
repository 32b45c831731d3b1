"""sqlite-vec on agentctx's SQLite connections, when the package is installed.

Python's ``sqlite3`` module loads extensions only when it was built with
``--enable-loadable-sqlite-extensions``; many builds (pyenv's and python.org's
defaults among them) were not, and lack ``enable_load_extension``. For those,
sqlite-vec is registered with SQLite's own ``sqlite3_auto_extension`` (the same
SQLite library the ``sqlite3`` module uses, found through that module's shared
object), which runs its entry point on every connection opened afterwards. So
:func:`prepare` must run before a database's first connection opens, and
:func:`load` runs on each new connection. Where neither works the index simply
has no vectors on SQLite; :func:`available` tells.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import logging
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_lock = threading.Lock()
_prepared = False
_libraries: list[ctypes.CDLL] = []  # kept loaded for the life of the process


def installed() -> bool:
    """Whether the sqlite-vec package is installed."""
    return importlib.util.find_spec("sqlite_vec") is not None


def _sqlite_vec() -> Any:
    return importlib.import_module("sqlite_vec")


def _loadable_library() -> Path | None:
    base = Path(_sqlite_vec().loadable_path())
    for candidate in sorted(base.parent.glob(base.name + ".*")):
        if candidate.suffix in (".so", ".dylib", ".dll"):
            return candidate
    return None


def _register_auto_extension() -> None:
    import _sqlite3  # noqa: PLC0415 - the C module whose SQLite library we must reach

    library = _loadable_library()
    if library is None:
        return
    # dlsym on the module's handle searches its dependencies: the very libsqlite3 it uses.
    sqlite = ctypes.CDLL(_sqlite3.__file__)
    register = sqlite.sqlite3_auto_extension
    register.argtypes = [ctypes.c_void_p]
    register.restype = ctypes.c_int
    extension = ctypes.CDLL(str(library))
    entry = ctypes.cast(extension.sqlite3_vec_init, ctypes.c_void_p)
    if register(entry) == 0:
        _libraries.extend((sqlite, extension))


def prepare() -> None:
    """Once per process, before connections open: register sqlite-vec where the ``sqlite3``
    module cannot load extensions itself. Harmless when already done or not installed."""
    global _prepared  # noqa: PLW0603 - process-wide, like the registration itself
    if _prepared:
        return
    with _lock:
        if _prepared:
            return
        _prepared = True
        import sqlite3  # noqa: PLC0415

        if not installed() or hasattr(sqlite3.Connection, "enable_load_extension"):
            return
        try:
            _register_auto_extension()
        except (OSError, AttributeError, ImportError) as exc:
            log.info("sqlite-vec cannot be registered with this SQLite: %s", exc)


def load(dbapi_connection: Any) -> None:
    """Load sqlite-vec into a new connection (a no-op where :func:`prepare` registered it)."""
    if not hasattr(dbapi_connection, "enable_load_extension") or not installed():
        return
    try:
        dbapi_connection.enable_load_extension(True)
        try:
            _sqlite_vec().load(dbapi_connection)
        finally:
            dbapi_connection.enable_load_extension(False)
    except Exception as exc:  # any failure only means no vectors on SQLite
        log.info("sqlite-vec could not be loaded: %s", exc)


def available(dbapi_connection: Any) -> bool:
    """Whether sqlite-vec's functions work on this connection."""
    try:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("SELECT vec_version()")
            cursor.fetchone()
        finally:
            cursor.close()
    except Exception:  # sqlite3.OperationalError: no such function
        return False
    return True
