"""How much of a window repeats the previous window of the same session from its start:
what a provider's prompt cache can reuse (``ContextReport.stable_prefix_tokens``).

Each builder remembers, per session, a fingerprint and the cost of every message of the
last window it built (a bounded number of sessions, least recently built first out). A
window is compared with the previous one message by message from the start; the report
counts the tokens of the messages that are the same.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Any

from agentctx.cache.bounded import Lru
from agentctx.jsonvalue import canonical_json

REMEMBERED_SESSIONS = 10_000
"""Sessions whose last window a builder remembers."""

Fingerprints = tuple[tuple[bytes, int], ...]


def fingerprints(messages: Sequence[dict[str, Any]], costs: Sequence[int]) -> Fingerprints:
    """Each message's digest (of its canonical JSON) with its cost."""
    return tuple(
        (hashlib.blake2b(canonical_json(message), digest_size=16).digest(), cost)
        for message, cost in zip(messages, costs, strict=True)
    )


def shared_prefix(previous: Fingerprints | None, current: Fingerprints) -> int | None:
    """The tokens of the messages ``current`` shares with ``previous`` from the start (None
    when there is no previous window)."""
    if previous is None:
        return None
    shared = 0
    for (digest, cost), (before, _) in zip(current, previous, strict=False):
        if digest != before:
            break
        shared += cost
    return shared


class PrefixMemory:
    """The last window's fingerprints of each session a builder built for; thread-safe."""

    def __init__(self, size: int = REMEMBERED_SESSIONS) -> None:
        self._windows: Lru[tuple[str, str], Fingerprints] = Lru(size)
        self._lock = threading.Lock()

    def exchange(self, key: tuple[str, str], current: Fingerprints) -> Fingerprints | None:
        """Remember ``current`` as the session's last window; return the one before."""
        with self._lock:
            previous = self._windows.get(key)
            self._windows.put(key, current)
            return previous

    def forget(self, user_id: str | None, session_id: str | None = None) -> None:
        """Forget a session's window (every session of the user without ``session_id``,
        every window with neither)."""
        with self._lock:
            if user_id is None:
                self._windows.clear()
                return
            self._windows.discard(
                lambda key: key[0] == user_id and (session_id is None or key[1] == session_id)
            )
