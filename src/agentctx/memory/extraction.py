"""Extraction runs: from a session's ended turns to consolidated memories, each once.

An extractor (a version, the kinds it proposes, a function from events to candidates)
reads the session's events that no run of its (session, version, kind) has read yet,
up to the first turn that has not ended; consolidation merges the candidates into the
user's memories and records, in the same transaction, how far the run got. A rerun
(a retried turn-end job, a manual ``extract_session``) therefore writes nothing new.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from sqlalchemy import select

from agentctx.events import Event
from agentctx.jobs import Job
from agentctx.memory.config import MemoryConfig
from agentctx.memory.consolidate import ConsolidationReport, Consolidator
from agentctx.memory.extract import extraction_signals
from agentctx.memory.models import MemoryCandidate, MemoryKind
from agentctx.storage.database import Database
from agentctx.storage.schema import events, memory_runs, turns

Extractor = Callable[[Sequence[Event]], list[MemoryCandidate]]
"""Events in, memory candidates out (each naming the events it came from)."""
EventLoader = Callable[..., list[Event]]
"""The session service's ``events(user_id, session_id, **filters)``."""
Reindex = Callable[[str, Sequence[str]], None]
"""Index again the user's memories a run touched (ids)."""


class Extraction:
    """The extraction runs of one engine's memory service."""

    def __init__(
        self,
        db: Database,
        load_events: EventLoader,
        consolidator: Consolidator,
        *,
        config: MemoryConfig,
        extractors: Sequence[tuple[str, frozenset[MemoryKind], Extractor]],
        model: str | None,
        reindex: Reindex,
    ) -> None:
        self.db = db
        self._load = load_events
        self.consolidator = consolidator
        self.config = config
        # (extractor version, kinds it proposes, function); run in this order
        self.extractors = list(extractors)
        self.model = model
        self._reindex = reindex

    def session(self, user_id: str, session_id: str) -> ConsolidationReport:
        """Extract from the session's events not yet extracted, and consolidate
        (idempotent: see the module docstring)."""
        total = ConsolidationReport()
        for version, kinds, extract in self.extractors:
            # In a fixed order: which kind is written first decides ties later (doc ids).
            keys = {kind: _run_key(user_id, session_id, version, kind) for kind in sorted(kinds)}
            done = self._runs(list(keys.values()))
            start = min(done.get(key, 0) for key in keys.values())
            new_events = self._ended(user_id, session_id, start)
            if not new_events:
                continue
            through = new_events[-1].seq
            candidates = extract(new_events)
            for kind, key in keys.items():
                mine = [
                    c
                    for c in candidates
                    if c.kind is kind and all((s.seq or 0) > done.get(key, 0) for s in c.sources)
                ]
                report = self.consolidator.apply(
                    user_id,
                    mine,
                    run_key=key,
                    session_id=session_id,
                    through_seq=through,
                    extractor_version=version,
                    model=self.model,
                )
                total.created += report.created
                total.merged += report.merged
                total.staled += report.staled
                total.skipped += report.skipped
                total.retries += report.retries
        self._reindex(user_id, total.touched)
        return total

    def since(
        self, since: datetime, until: datetime | None = None, *, user_id: str | None = None
    ) -> dict[tuple[str, str], ConsolidationReport]:
        """Extract every session with events in [since, until) (of one user, or all)."""
        query = select(events.c.user_id, events.c.session_id).where(events.c.ts >= since)
        if until is not None:
            query = query.where(events.c.ts < until)
        if user_id is not None:
            query = query.where(events.c.user_id == user_id)
        with self.db.read() as conn:
            found = sorted(
                {(row.user_id, row.session_id) for row in conn.execute(query.distinct())}
            )
        return {key: self.session(*key) for key in found}

    def on_turn_end(self, job: Job) -> None:
        """The turn-end job: extract from the session's new events (every turn, or only
        turns with a signal when ``extract_after_each_turn`` is off)."""
        if not job.user_id or not job.session_id:
            return
        if not self.config.extract_after_each_turn:
            turn = (
                self._load(job.user_id, job.session_id, turn_id=job.turn_id) if job.turn_id else []
            )
            if not extraction_signals(turn):
                return
        self.session(job.user_id, job.session_id)

    def _ended(self, user_id: str, session_id: str, after_seq: int) -> list[Event]:
        """The session's events after ``after_seq`` up to the first turn not read whole:
        a turn is extracted whole, once it has ended (its tool path is complete)."""
        found = self._load(user_id, session_id, start_seq=after_seq + 1)
        # Only the turns of these events are asked about (by the turns' primary key), not
        # every turn of the session. A turn that ended after the events were read may have
        # events they miss: its recorded last seq tells.
        asked = sorted({e.turn_id for e in found if e.turn_id is not None})
        if not asked:
            return found
        read_to = found[-1].seq
        with self.db.read() as conn:
            rows = conn.execute(
                select(turns.c.turn_id, turns.c.status, turns.c.last_seq).where(
                    turns.c.user_id == user_id,
                    turns.c.session_id == session_id,
                    turns.c.turn_id.in_(asked),
                )
            ).all()
        partial = {
            turn_id
            for turn_id, status, last_seq in rows
            if status == "open" or last_seq is None or last_seq > read_to
        }
        for index, event in enumerate(found):
            if event.turn_id in partial:
                return found[:index]
        return found

    def _runs(self, keys: list[str]) -> dict[str, int]:
        """How far each run (by key) has read: its last seq."""
        with self.db.read() as conn:
            rows = conn.execute(
                select(memory_runs.c.run_key, memory_runs.c.through_seq).where(
                    memory_runs.c.run_key.in_(keys)
                )
            )
            return {row.run_key: int(row.through_seq) for row in rows}


def _run_key(user_id: str, session_id: str, version: str, kind: MemoryKind) -> str:
    return f"{user_id}\x1f{session_id}\x1f{version}\x1f{kind.value}"
