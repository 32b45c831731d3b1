"""Engines still open when the interpreter exits are closed before it finalizes.

An engine's background threads run native code: the embedding model's forward passes,
PyTorch's libraries loading, a query embedded beside a window. A program that ends
without ``engine.close()`` (or a ``with`` block) left them running while the interpreter
finalized and the process ran the C++ libraries' static destructors under them: 14 of 20
such exits aborted or crashed during the model's load and 6 of 10 while events were
embedded, and one hung. At exit every engine still open in this process is closed, as
:meth:`~agentctx.engine.ContextEngine.close` does it (background work stopped, a load or
a batch under way given its time to end), so the process ends the way a closed engine
lets it.

The guarantee holds for an engine the program still references when it exits (an engine
nobody references may already have been collected). It does not cover a process killed
by a signal, or one that leaves through ``os._exit``: neither finalizes the interpreter.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from typing import Protocol

log = logging.getLogger(__name__)

EXIT_CLOSE_TIMEOUT = 10.0
"""Seconds each engine closed at exit gives its background work to end (``close``'s
default)."""


class Closable(Protocol):
    """What is closed at exit: an engine."""

    def close(self, *, timeout: float = ...) -> None:
        """Stop background work and release what is held."""


_lock = threading.Lock()
# id(engine) -> (the engine, weakly held; the pid that opened it)
_open: dict[int, tuple[weakref.ReferenceType[Closable], int]] = {}


def close_at_exit(engine: Closable) -> None:
    """Close ``engine`` when the interpreter exits, unless :func:`closed` said it was
    closed first. Weakly held: an engine the program dropped is not kept alive."""
    with _lock:
        _open[id(engine)] = (weakref.ref(engine), os.getpid())


def closed(engine: Closable) -> None:
    """``engine`` was closed: nothing to do for it at exit."""
    with _lock:
        _open.pop(id(engine), None)


def close_open_engines(timeout: float = EXIT_CLOSE_TIMEOUT) -> int:
    """Close every engine this process opened and did not close; returns how many. Run
    at exit; a failure to close one is logged and the others are still closed."""
    pid = os.getpid()
    with _lock:
        # A forked child inherits its parent's engines: they are the parent's to close.
        refs = [ref for ref, owner in _open.values() if owner == pid]
        _open.clear()
    count = 0
    for engine in filter(None, (ref() for ref in refs)):
        try:
            engine.close(timeout=timeout)
            count += 1
        except Exception:  # the next engine is still closed
            log.warning("closing an engine at exit failed", exc_info=True)
    return count


# Handlers run last registered first: this one, registered when agentctx is imported,
# runs after the program's own (which may still use an engine).
atexit.register(close_open_engines)
