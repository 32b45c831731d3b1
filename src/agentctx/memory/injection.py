"""The injection decision: which of a user's memories a window shows, and why each other
one found is withheld, decided within the retrieval timeout and audited off the window's
thread."""

from __future__ import annotations

import builtins
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Sequence

from agentctx.context.sources import MemoryItem
from agentctx.memory.audit import AuditSink, injection_record
from agentctx.memory.config import MemoryConfig
from agentctx.memory.items import memory_item
from agentctx.memory.models import MemoryHit
from agentctx.sessions.audit import AuditRecord

log = logging.getLogger(__name__)

Hits = list[MemoryHit]
Search = Callable[..., Hits]

# Searches that must give up after the retrieval timeout run here, so the window's
# thread can stop waiting (a timed-out search finishes in the background).
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="agentctx-memory")


class MemoryTimeout(TimeoutError):
    """Memory retrieval took longer than its timeout; the window is built without it."""


class Injection:
    """Decides what a window injects, over ``search`` (the memory search), and audits each
    decision to ``audit``."""

    def __init__(self, config: MemoryConfig, search: Search, audit: AuditSink | None) -> None:
        self.config = config
        self.search = search
        self.audit = audit
        self._audits: set[concurrent.futures.Future[None]] = set()
        self._audits_lock = threading.Lock()

    def decide(
        self, user_id: str, agent_id: str | None, query: str | None, *, limit: int
    ) -> tuple[Hits, dict[str, str]]:
        """The injection decision: the memories to inject, and why each other one found
        is withheld. Superseded and contested memories are never found (not active)."""
        injected: Hits = []
        withheld: dict[str, str] = {}
        for hit in self.search(user_id, query, limit=max(limit * 4, 20)):
            memory = hit.memory
            reason = (
                "tainted"
                if memory.tainted
                else "support"
                if memory.support_count < self.config.min_support_sessions
                else "confidence"
                if memory.confidence < self.config.min_confidence
                else "agent"
                if memory.agent_id is not None
                and agent_id is not None
                and memory.agent_id != agent_id
                else "limit"
                if len(injected) >= limit
                else None
            )
            if reason is None:
                injected.append(hit)
            else:
                withheld[memory.memory_id] = reason
        return injected, withheld

    def memories(
        self, user_id: str, agent_id: str, query: str | None, *, limit: int
    ) -> Sequence[MemoryItem]:
        """The window's memory source: verified memories, within the retrieval timeout
        (MemoryTimeout past it). The decision is audited off the window's thread."""
        limit = min(limit, self.config.inject_limit)
        future = _POOL.submit(self.decide, user_id, agent_id, query, limit=limit)
        try:
            hits, withheld = future.result(timeout=self.config.retrieval_timeout_ms / 1000)
        except concurrent.futures.TimeoutError as exc:
            raise MemoryTimeout(
                f"memory retrieval took over {self.config.retrieval_timeout_ms:g} ms"
            ) from exc
        if self.audit is not None:
            record = injection_record(
                user_id,
                agent_id,
                injected=[hit.memory.memory_id for hit in hits],
                withheld=withheld,
            )
            pending = _POOL.submit(self._record, record)
            with self._audits_lock:
                self._audits.add(pending)
            pending.add_done_callback(self._audited)
        return [memory_item(hit.memory) for hit in hits]

    def _audited(self, done: concurrent.futures.Future[None]) -> None:
        with self._audits_lock:
            self._audits.discard(done)

    def flush_audit(self, timeout: float = 10.0) -> None:
        """Wait until the injection decisions made so far are in the audit log."""
        with self._audits_lock:
            pending = builtins.list(self._audits)
        concurrent.futures.wait(pending, timeout=timeout)

    def _record(self, record: AuditRecord) -> None:
        """Store and emit an audit record outside any other transaction (a failure to
        audit an injection is logged, never raised into a window)."""
        assert self.audit is not None
        try:
            self.audit.write(record)
            self.audit.emit(record)
        except Exception:
            log.exception("could not audit a memory injection")


__all__ = ["Injection", "MemoryTimeout"]
