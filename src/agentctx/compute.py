"""Where CPU-bound pure functions run: on the calling thread, or in a worker process.

Background threads share one interpreter lock with the agent's thread. Between the
points where they step aside (:mod:`agentctx.priority`), a background thread that holds
the lock keeps it for up to the interpreter's switch interval (5 ms) each time the
agent's thread gives it up, for every database read or file read of a window. With
compaction on, the offline summaries and topic identification of the jobs thread made
the slowest windows wait about 30 ms that way. Those are pure functions of texts, so
:class:`ProcessCompute` runs them in a worker process of their own, with an interpreter
lock of their own, at a lower CPU priority.

What a caller can rely on:

* **The function's own result.** The worker runs the same function (named by module and
  qualified name) on the same arguments (pickled); only functions of ``agentctx``
  modules are run there.
* **Nothing fails because of the worker.** When it cannot start (no Python executable,
  as under some embedded servers), dies, does not answer within :data:`CALL_TIMEOUT`,
  cannot pickle the call or its result, or the function raises in it, the call runs on
  the calling thread instead: the caller gets what an in-process call gives, the
  function's exception included. After :data:`MAX_FAILURES` failed starts, every call
  runs in-process.
* **One call at a time** per worker; callers queue on a lock.
* **Nothing logged holds data.** The worker's output is discarded (an exception message
  may quote a text); the log says only that the worker failed.
* The worker exits when its parent does (its standard input closes), and is started
  again in a forked child.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import os
import pickle
import selectors
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO, Any, Protocol, TypeVar

log = logging.getLogger(__name__)

_R = TypeVar("_R")

WORKER_NICE = 10
"""How much lower the worker's CPU priority is (``os.nice``): on a busy machine the
agent's own process gets the cores first."""

START_TIMEOUT = 60.0
"""Seconds a new worker has to import what it runs and say it is ready."""

CALL_TIMEOUT = 300.0
"""Seconds one call may take in the worker before it is stopped and the call runs here."""

MAX_FAILURES = 3
"""Starts that may fail before every call runs in the calling thread."""

_HEADER = struct.Struct(">4sQ")  # a mark, then the length of the pickled frame that follows
_MARK = b"actx"
MAX_FRAME = 1 << 30
"""The largest frame read (bytes): a length past it is no frame of ours."""
_READY = "ready"
# What a worker that failed raises here: a broken pipe, a garbled or missing frame, silence.
_WORKER_FAILURES = (OSError, ValueError, EOFError, pickle.UnpicklingError, TimeoutError)


class Compute(Protocol):
    """Runs a pure function and returns its result (or raises its exception)."""

    def run(self, function: Callable[..., _R], /, *args: Any, **kwargs: Any) -> _R:
        """``function(*args, **kwargs)``, wherever this runner runs it."""
        ...


class InlineCompute:
    """Runs every function on the calling thread."""

    def run(self, function: Callable[..., _R], /, *args: Any, **kwargs: Any) -> _R:
        """``function(*args, **kwargs)``, here."""
        return function(*args, **kwargs)


class ProcessCompute:
    """Runs functions of ``agentctx`` modules in one worker process (module docstring).

    ``command`` starts the worker (default: this Python running ``agentctx.compute``).
    """

    def __init__(self, command: list[str] | None = None) -> None:
        self._command = command or [sys.executable, "-m", "agentctx.compute"]
        self._lock = threading.Lock()
        self._worker: subprocess.Popen[bytes] | None = None
        self._pid = os.getpid()  # the process the worker belongs to
        self.failures = 0  # failed starts and lost workers
        self.served = 0  # calls the worker answered
        self.local = 0  # calls run on the calling thread instead

    @property
    def worker_pid(self) -> int | None:
        """The running worker's process id, if one runs."""
        worker = self._worker
        return worker.pid if worker is not None and worker.poll() is None else None

    def run(self, function: Callable[..., _R], /, *args: Any, **kwargs: Any) -> _R:
        """``function(*args, **kwargs)`` in the worker, or here when it cannot be."""
        module, name = function.__module__, function.__qualname__
        if module.split(".")[0] != "agentctx" or "<" in name:
            raise ValueError(f"{module}.{name} is not a module-level agentctx function")
        try:
            request = pickle.dumps((module, name, args, kwargs), pickle.HIGHEST_PROTOCOL)
        except Exception:  # an argument that does not pickle: run it here
            return self._here(function, args, kwargs)
        with self._lock:
            answer = self._ask(request)
        if answer is None or not answer[0]:
            return self._here(function, args, kwargs)
        self.served += 1
        result: _R = answer[1]
        return result

    def close(self) -> None:
        """Stop the worker (a later call starts a new one)."""
        with self._lock:
            self._stop()

    # ------------------------------------------------------------------ internals

    def _here(self, function: Callable[..., _R], args: Any, kwargs: Any) -> _R:
        self.local += 1
        return function(*args, **kwargs)

    def _ask(self, request: bytes) -> tuple[bool, Any] | None:
        """The worker's answer to ``request``: (True, result), (False, None) when the
        function raised there; None when the worker failed (it is stopped then)."""
        worker = self._running()
        if worker is None:
            return None
        assert worker.stdin is not None and worker.stdout is not None
        try:
            _send(worker.stdin, request)
            answer = _read_frame(worker.stdout, CALL_TIMEOUT)
        except _WORKER_FAILURES as exc:
            log.warning("compute worker failed (%s); running the call here", type(exc).__name__)
            self.failures += 1
            self._stop()
            return None
        if not isinstance(answer, tuple) or len(answer) != 2:
            self.failures += 1
            self._stop()
            return None
        return answer

    def _running(self) -> subprocess.Popen[bytes] | None:
        """The worker, started if need be; None when it cannot run."""
        if os.getpid() != self._pid:  # a forked child: the worker is its parent's
            self._pid, self._worker = os.getpid(), None
        worker = self._worker
        if worker is not None and worker.poll() is None:
            return worker
        if worker is not None:
            self.failures += 1  # it died since the last call
            self._stop()
        if self.failures >= MAX_FAILURES:
            return None
        try:
            worker = subprocess.Popen(
                self._command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,  # an exception message may quote a text
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
                close_fds=True,
            )
            assert worker.stdout is not None
            if _read_frame(worker.stdout, START_TIMEOUT) != _READY:
                raise ValueError("the worker did not say it was ready")
        except _WORKER_FAILURES as exc:
            log.warning("compute worker did not start (%s); running calls here", exc)
            self.failures += 1
            if worker is not None:
                self._worker = worker
                self._stop()
            return None
        self._worker = worker
        return worker

    def _stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is None:
            return
        for stream in (worker.stdin, worker.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            worker.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def _read_frame(stream: IO[bytes], timeout: float) -> Any:
    """One length-prefixed pickled frame from ``stream``, waiting at most ``timeout``
    seconds for it to begin (``TimeoutError``); ``EOFError`` when the stream ends."""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise TimeoutError(f"no answer within {timeout:g} s")
    return pickle.loads(_read_exactly(stream, _frame_length(_read_exactly(stream, _HEADER.size))))


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if data is None or len(data) != size:
        raise EOFError("the stream ended")
    return data


def _frame_length(header: bytes) -> int:
    mark, length = _HEADER.unpack(header)
    if mark != _MARK or length > MAX_FRAME:
        raise ValueError("not a frame of the compute protocol")
    return int(length)


def _send(stream: IO[bytes], frame: bytes) -> None:
    """Write one pickled ``frame``, length-prefixed, and flush it."""
    stream.write(_HEADER.pack(_MARK, len(frame)) + frame)
    stream.flush()


_shared: ProcessCompute | None = None
_shared_lock = threading.Lock()


def shared_process_compute() -> ProcessCompute:
    """The process's worker, shared by every engine in it (made on first use; its
    process starts on the first call)."""
    global _shared  # noqa: PLW0603 - one worker per process
    with _shared_lock:
        if _shared is None:
            _shared = ProcessCompute()
            atexit.register(_shared.close)  # the worker ends with its parent, not after
        return _shared


def _serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """The worker's loop: answer each request until the parent closes the pipe."""
    _send(answers, pickle.dumps(_READY, pickle.HIGHEST_PROTOCOL))
    while True:
        header = requests.read(_HEADER.size)
        if len(header) != _HEADER.size:
            return  # the parent closed the pipe (or exited)
        request = _read_exactly(requests, _frame_length(header))
        try:
            module, name, args, kwargs = pickle.loads(request)
            function: Any = importlib.import_module(module)
            for part in name.split("."):
                function = getattr(function, part)
            answer: tuple[bool, Any] = (True, function(*args, **kwargs))
            data = pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)
        except Exception:  # the parent runs the call itself and sees the exception there
            data = pickle.dumps((False, None), pickle.HIGHEST_PROTOCOL)
        _send(answers, data)


def _main() -> None:
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(WORKER_NICE)
    # Import what the calls need before saying ready: the first call pays no import.
    importlib.import_module("agentctx.compaction.topics.identify")
    importlib.import_module("agentctx.compaction.offline.summarize")
    _serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    _main()
