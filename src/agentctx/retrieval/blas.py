"""One BLAS thread for the small products of a search.

A search multiplies a few thousand vectors by one query: well under a millisecond of
work, bound by memory, which a second thread does not speed up. OpenBLAS still splits
such a product across its threads, and each of them then spins for a while (about a
tenth of a second) waiting for more work: on a two-core machine a context build kept
the second core busy for no gain, and a server's concurrent requests lost it.
:func:`one_blas_thread` keeps these products on the calling thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_controller: Any = None  # the BLAS libraries loaded when first asked; None: not yet
_inside = 0  # threads inside a one_blas_thread block
_limiter: Any = None  # the limit those threads share; restores the count when they leave


def _blas() -> Any:
    global _controller  # noqa: PLW0603 - one inspection of the loaded libraries per process
    if _controller is None:
        from threadpoolctl import ThreadpoolController  # noqa: PLC0415 - inspects .so files

        _controller = ThreadpoolController().select(user_api="blas")
    return _controller


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with the BLAS libraries limited to one thread each.

    The limit is the process's (BLAS has no per-thread setting), so it is shared: the
    first thread in sets it, the last one out restores the count from before (a limit
    per block would let a block leaving first restore the count under the others, and
    the last to leave restore the limit for good). A product another thread runs
    meanwhile also gets one thread: that changes its speed, never its result.
    """
    global _inside, _limiter  # noqa: PLW0603 - the one process-wide limit
    with _lock:
        if _inside == 0:
            _limiter = _blas().limit(limits=1)
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                _limiter.restore_original_limits()
                _limiter = None
