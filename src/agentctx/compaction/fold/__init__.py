"""Hybrid compaction of the event log: old events fold into summaries, recursively.

Seed 003 (8.3, A.2.4, A.3.1). A session's *live tokens* are what its folded view
counts: every event no fold covers (rendered text, by the engine's counter) plus the
top-level fold summaries. Once they pass ``high_tokens`` (default 8,000), the oldest
foldable events are folded into a summary (a ``summaries`` row of kind ``fold``,
level 0) until the live tokens are at most ``low_tokens`` (default 4,000). The gap
between the two thresholds keeps the view stable over many turns, so provider prompt
caches keep hitting.

What is never folded:

* key events (``key_types``: user input, tool results, final answers, errors, HITL),
  or, with ``keep_key_events = N``, the newest N of them;
* a tool call whose result is key (it stays with its result), and a tool call still
  waiting for its result. A call and its results are always kept or folded together,
  so a fold may cover several seq ranges: it records them exactly (``seq_ranges``),
  never a time range, and ``source_event_count`` is their size;
* the newest turn.

Recursion: when more than ``fanout`` top-level folds of one level exist, the oldest
``fanout`` are folded into one summary a level higher; and while the top-level folds
together count more than ``summaries_tokens`` (default half of ``low_tokens``), the
oldest are folded higher too. A higher fold covers the union of what its parts
covered, and supersedes them: the view shows only top-level folds. So the view of a
very long session stays near ``low_tokens`` plus its key events.

Raw events are never deleted or rewritten; folding only changes what enters the
window (:meth:`EventFolder.view`). Summaries are written by the configured chat model
(JSON schema), else by the offline extractive method; when the model fails the
offline method stands in, ``method`` records ``offline (llm failed: <code>)`` and
``on_llm_failure`` is told.

Guarantees: each fold is computed first and written in one short transaction under a
per-session version, unique in the table. A rerun, or a second worker racing the
first, finds the version taken and plans its next fold from what is stored, so every
event is folded at most once at each level and a job run twice writes one set of
folds. A worker killed before or during a write leaves nothing of that fold; folds it
wrote earlier are complete, and the rerun carries on from them.
"""

from agentctx.compaction.fold.config import DEFAULT_KEY_TYPES, FoldConfig
from agentctx.compaction.fold.folder import FOLD_JOB, EventFolder, FoldDraft, ViewItem
from agentctx.compaction.fold.plan import FOLD, FoldSummary

__all__ = [
    "DEFAULT_KEY_TYPES",
    "FOLD",
    "FOLD_JOB",
    "EventFolder",
    "FoldConfig",
    "FoldDraft",
    "FoldSummary",
    "ViewItem",
]
