"""Recording the window sent to the model for a turn, without writing on the call path.

A window built inside a turn is kept for the turn's repro package (one row per turn, the
last window wins). Redacting its text and upserting it takes a write transaction, which
on SQLite also waits for any writer in progress: milliseconds added to every model call.
With background work on, :class:`WindowRecorder` takes the window and returns at once; a
daemon thread writes the latest window of each turn, half a second after a window came
(the turn's later windows replace it meanwhile: an agent whose steps come fast writes
one record a turn, not one a model call). Reads of a recorded window
(``HitlService.window``, ``repro``) flush what is pending first, so this process sees its
own windows; a crash can lose at most the windows not yet written, a diagnostic record
and never part of the session's log. Without background work (``jobs`` ``inline`` or
``manual``) windows are written as they are built, as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentctx.context.window import ContextReport
from agentctx.errors import EngineClosed
from agentctx.priority import mark_background_thread
from agentctx.privacy.redactor import Redactor

log = logging.getLogger(__name__)

SETTLE_SECONDS = 0.5
"""How long the background writer waits after a window before writing what is pending
(a later window of the same turn replaces it meanwhile)."""


@dataclass(frozen=True, slots=True)
class WindowRecord:
    """One window to keep for a turn, as built."""

    user_id: str
    session_id: str
    turn_id: str | None
    query: str | None
    budget: int
    strategy: str
    messages: list[dict[str, Any]]
    tokens: int
    report: ContextReport | dict[str, Any]
    redactor: Redactor | None

    @property
    def key(self) -> tuple[str, str, str | None]:
        """The turn the record belongs to (its row)."""
        return self.user_id, self.session_id, self.turn_id


class WindowRecorder:
    """Writes :class:`WindowRecord` s with ``write``: on a thread of its own when
    ``background``, else at once. Thread-safe."""

    def __init__(
        self,
        write: Callable[[WindowRecord], None],
        *,
        background: bool,
        settle: float = SETTLE_SECONDS,
    ) -> None:
        self._write = write
        self._background = background
        self._settle = settle
        self._pending: dict[tuple[str, str, str | None], WindowRecord] = {}
        self._lock = threading.Lock()
        self._writing = threading.Lock()  # one writer at a time: the thread or a flush
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def submit(self, record: WindowRecord) -> None:
        """Keep ``record`` (replacing a pending one of the same turn)."""
        if not self._background or self._stop.is_set():
            self._write(record)
            return
        with self._lock:
            self._pending[record.key] = record
        if self._thread is None:
            self._start()
        self._wake.set()

    def flush(self) -> None:
        """Write every pending record now, on the caller's thread."""
        with self._writing:
            with self._lock:
                pending, self._pending = list(self._pending.values()), {}
            for record in pending:
                self._write_logged(record)

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread and write what is pending."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.flush()

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(
                target=self._run, name="agentctx-window-recorder", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        mark_background_thread()  # a diagnostic record waits for the agent's own writes
        while not self._stop.is_set():
            self._wake.wait()
            # The windows of one turn's next calls replace this one meanwhile: one write
            # a turn instead of one a model call, when the agent's steps come fast.
            self._stop.wait(self._settle)
            self._wake.clear()
            try:
                self.flush()
            except EngineClosed:
                return

    def _write_logged(self, record: WindowRecord) -> None:
        try:
            self._write(record)
        except EngineClosed:
            raise
        except Exception:  # a diagnostic record must never take the thread down
            log.exception("recording a window failed")
