"""PyTorch's native libraries loaded with the interpreter lock free.

``import torch`` loads ``libtorch_cpu.so`` (hundreds of megabytes) and runs its static
initializers (every operator's registration) inside one C call that holds the
interpreter lock: on a 2-core machine no other thread ran Python for 600 ms, and an
agent's window built meanwhile took that long. The model loads on a background thread
as the engine starts (:mod:`agentctx.llm.warmup`), so that thread loads the libraries
first through the C library's own ``dlopen``, called by ``ctypes``, which releases the
lock around a foreign call: the initializers run beside the agent's calls, and the
import then finds the libraries loaded (the longest pause it left measured 60 ms).

Linux only, and only the libraries with no Python in them (``libtorch_python`` is left
to the import). They are loaded ``RTLD_LOCAL``, as the import itself loads them, so no
symbol becomes visible to other libraries. Any failure leaves the loading to the import.

With the lock released, the interpreter could finalize while ``dlopen`` ran the
libraries' initializers on another thread, and the process then aborted, crashed or hung
at exit (14 of 20 programs that ended during a load). The interpreter waits at exit for a
preload under way to end (at most :data:`EXIT_WAIT` seconds).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

TORCH_LIBRARIES = ("libc10.so", "libtorch_cpu.so")
"""The libraries preloaded, in dependency order (``libtorch_cpu`` needs ``libc10``)."""

EXIT_WAIT = 60.0
"""The longest the interpreter waits at exit for a preload under way (seconds)."""

_loaded: list[int] = []  # the handles: never closed, as the import would keep them
_loading = threading.Lock()  # held while dlopen runs: exit waits for it
_exiting = False  # set at exit, under _loading: no preload starts after it


def torch_library_folder() -> Path | None:
    """Where the installed ``torch`` keeps its native libraries (found without
    importing it), or None without torch."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "lib"
    return folder if folder.is_dir() else None


def preload_torch() -> list[str]:
    """Load :data:`TORCH_LIBRARIES` with the interpreter lock released, unless torch is
    imported already; returns the names loaded (none off Linux, without torch, or when
    ``dlopen`` refuses one: the import then loads it, holding the lock)."""
    if not sys.platform.startswith("linux") or "torch" in sys.modules:
        return []
    folder = torch_library_folder()
    if folder is None:
        return []
    try:
        libc = ctypes.CDLL(None)
        dlopen = libc.dlopen
    except (OSError, AttributeError):
        return []
    dlopen.restype = ctypes.c_void_p
    dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
    with _loading:
        if _exiting:
            return []  # the interpreter is finalizing: the import (if any) loads them
        return _dlopen_all(dlopen, folder)


def _dlopen_all(dlopen: Any, folder: Path) -> list[str]:
    loaded: list[str] = []
    for name in TORCH_LIBRARIES:
        path = folder / name
        if not path.is_file():
            break
        with contextlib.suppress(OSError, ValueError):
            handle = dlopen(os.fsencode(path), os.RTLD_NOW | os.RTLD_LOCAL)
            if handle:
                _loaded.append(handle)
                loaded.append(name)
                continue
        log.debug("could not preload %s; the import of torch loads it", path)
        break
    return loaded


def _wait_for_preload() -> None:
    """At exit: let a preload under way end before the interpreter finalizes, and start
    no other."""
    global _exiting  # noqa: PLW0603 - the process's one flag
    if _loading.acquire(timeout=EXIT_WAIT):
        _exiting = True
        _loading.release()


atexit.register(_wait_for_preload)
