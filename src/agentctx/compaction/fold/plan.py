"""What to fold next, computed from the stored events and folds alone (no I/O here).

The live view of a session is its events minus those covered by a fold, plus the
top-level folds. Events are grouped into *atoms*, the pieces a fold takes or leaves
whole: a tool call with its results, or one other event. An atom is kept verbatim
when any of its events is a key event, when it is a tool call still waiting for its
result, or when it belongs to the newest turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import RowMapping

from agentctx.compaction.fold.config import FoldConfig
from agentctx.context.sources import SummaryItem
from agentctx.events import EventType
from agentctx.tool_links import answered_calls

FOLD = "fold"
"""The ``kind`` of a fold summary in the ``summaries`` table."""

Ranges = tuple[tuple[int, int], ...]
"""Inclusive seq ranges, sorted and disjoint."""


def to_ranges(seqs: Iterable[int]) -> Ranges:
    """The sorted, merged inclusive ranges of ``seqs``."""
    ranges: list[tuple[int, int]] = []
    for seq in sorted(set(seqs)):
        if ranges and seq == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], seq)
        else:
            ranges.append((seq, seq))
    return tuple(ranges)


def merge_ranges(*groups: Ranges) -> Ranges:
    """The union of several range lists, merged."""
    spans = sorted(span for group in groups for span in group)
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return tuple(merged)


def range_size(ranges: Ranges) -> int:
    """How many seqs ``ranges`` holds."""
    return sum(end - start + 1 for start, end in ranges)


def in_ranges(seq: int, ranges: Ranges) -> bool:
    """Whether ``seq`` lies in ``ranges``."""
    return any(start <= seq <= end for start, end in ranges)


@dataclass(frozen=True, slots=True)
class FoldSummary:
    """One stored fold: its text, its level and exactly which events it covers.

    ``seq_ranges`` are the covered events (inclusive ranges; key events between them
    are not covered); ``first_seq``/``last_seq`` their bounds; ``source_event_count``
    the number of covered events (the size of ``seq_ranges``). ``level`` is 0 for a
    summary of events and n + 1 for a summary of level-n (or lower) summaries, which
    covers the union of theirs. ``method`` as in thread summaries: ``offline``,
    ``llm:<model>`` or ``offline (llm failed: <code>)``.
    """

    summary_id: str
    user_id: str
    session_id: str
    version: int
    level: int
    text: str
    first_seq: int
    last_seq: int
    seq_ranges: Ranges
    source_event_count: int
    token_count: int
    method: str
    created_at: datetime

    @property
    def seq(self) -> int:
        """Where the fold stands in the view: its first covered seq."""
        return self.first_seq

    def covers(self, seq: int) -> bool:
        """Whether this fold covers event ``seq``."""
        return self.first_seq <= seq <= self.last_seq and in_ranges(seq, self.seq_ranges)

    def item(self) -> SummaryItem:
        """This fold as the context builder's summary source gives it."""
        return SummaryItem(
            summary_id=self.summary_id, text=self.text, seq_ranges=self.seq_ranges, kind=FOLD
        )

    @classmethod
    def from_row(cls, row: RowMapping | Mapping[str, Any]) -> FoldSummary:
        """A fold from a ``summaries`` row (``seq_ranges`` null: the whole first..last)."""
        stored = row["seq_ranges"]
        ranges: Ranges = (
            tuple((int(a), int(b)) for a, b in stored)
            if stored
            else ((int(row["first_seq"]), int(row["last_seq"])),)
        )
        return cls(
            summary_id=row["summary_id"],
            user_id=row["user_id"],
            session_id=row["session_id"],
            version=row["version"],
            level=row["level"],
            text=row["text"],
            first_seq=int(row["first_seq"]),
            last_seq=int(row["last_seq"]),
            seq_ranges=ranges,
            source_event_count=row["source_event_count"],
            token_count=row["token_count"],
            method=row["method"],
            created_at=row["created_at"],
        )

    def row(self) -> dict[str, Any]:
        """The ``summaries`` row for this fold."""
        whole = self.seq_ranges == ((self.first_seq, self.last_seq),)
        return {
            "summary_id": self.summary_id,
            "user_id": self.user_id,
            "session_id": self.session_id,
            "kind": FOLD,
            "version": self.version,
            "level": self.level,
            "seq_ranges": None if whole else [list(span) for span in self.seq_ranges],
            "text": self.text,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "source_event_count": self.source_event_count,
            "token_count": self.token_count,
            "method": self.method,
            "created_at": self.created_at,
        }


def top_level(folds: Sequence[FoldSummary]) -> list[FoldSummary]:
    """The folds no higher-level fold covers, by first covered seq.

    A higher fold covers the union of the folds it summarizes, and folds of the same
    level never overlap, so a fold is superseded exactly when a higher one covers its
    first seq.
    """
    tops = [
        fold
        for fold in folds
        if not any(other.level > fold.level and other.covers(fold.first_seq) for other in folds)
    ]
    return sorted(tops, key=lambda fold: fold.first_seq)


@dataclass(frozen=True, slots=True)
class EventHead:
    """What planning needs of an event (no content): read for a whole session cheaply."""

    seq: int
    type: EventType
    call_id: str | None
    turn_id: str | None
    token_estimate: int


@dataclass(frozen=True, slots=True)
class Atom:
    """Events a fold takes or leaves together: a tool call and its results, or one event."""

    events: tuple[EventHead, ...]
    tokens: int
    kept: bool  # a key event, a call awaiting its result, or the newest turn

    @property
    def first_seq(self) -> int:
        return self.events[0].seq


def atoms_of(events: Sequence[EventHead], tokens: Sequence[int], config: FoldConfig) -> list[Atom]:
    """The unfolded ``events`` (seq order; ``tokens`` their live cost) grouped into atoms."""
    key_seqs = _key_seqs(events, config)
    newest_turn = _newest_turn_start(events)
    cost = dict(zip((e.seq for e in events), tokens, strict=True))
    answers = answered_calls(events)  # result seq -> call seq
    results: dict[int, list[EventHead]] = {}
    for event in events:
        call = answers.get(event.seq)
        if call is not None:
            results.setdefault(call, []).append(event)
    atoms: list[Atom] = []
    for event in events:
        if event.seq in answers:
            continue  # it travels with its call
        group = [event]
        waiting = False
        if event.type == EventType.TOOL_CALL:
            answered = results.get(event.seq, [])
            group += answered
            waiting = not answered
        seqs = [e.seq for e in group]
        kept = (
            waiting
            or any(seq in key_seqs for seq in seqs)
            or (newest_turn is not None and max(seqs) >= newest_turn)
        )
        atoms.append(Atom(tuple(group), sum(cost[s] for s in seqs), kept))
    return atoms


def _key_seqs(events: Sequence[EventHead], config: FoldConfig) -> set[int]:
    keys = [e.seq for e in events if e.type in config.key_types]
    if config.keep_key_events is not None:
        keys = keys[-config.keep_key_events :]
    return set(keys)


def _newest_turn_start(events: Sequence[EventHead]) -> int | None:
    """The first seq of the newest turn (every event of it is kept verbatim)."""
    if not events:
        return None
    last = events[-1]
    if last.turn_id is None:
        return last.seq
    return min(e.seq for e in events if e.turn_id == last.turn_id)


def choose_batch(
    atoms: Sequence[Atom], live_tokens: int, target: int, config: FoldConfig
) -> list[Atom]:
    """The oldest foldable atoms whose fold brings ``live_tokens`` down to ``target``.

    The summary is reckoned at its full ``summary_tokens``; the batch stops early at
    ``max_events_per_fold`` events (the rest is left to the next fold). An atom larger
    than that limit on its own still forms a batch by itself.
    """
    batch: list[Atom] = []
    folded = 0
    count = 0
    for atom in atoms:
        if atom.kept:
            continue
        if batch and count + len(atom.events) > config.max_events_per_fold:
            break
        batch.append(atom)
        folded += atom.tokens
        count += len(atom.events)
        if live_tokens - folded + config.summary_tokens <= target:
            break
    return batch


def merge_group(tops: Sequence[FoldSummary], config: FoldConfig) -> list[FoldSummary]:
    """The top-level folds to fold one level higher now; empty when none are due.

    Per level, more than ``fanout`` folds: the oldest ``fanout`` of the lowest such
    level. Otherwise, top-level folds counting more than ``summaries_budget`` together:
    the oldest ``fanout`` (at least two) of them, whatever their levels.
    """
    for level in sorted({fold.level for fold in tops}):
        same = [fold for fold in tops if fold.level == level]
        if len(same) > config.fanout:
            return same[: config.fanout]
    if len(tops) >= 2 and sum(fold.token_count for fold in tops) > config.summaries_budget:
        return list(tops[: config.fanout])
    return []
