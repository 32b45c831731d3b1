"""The tables of human-in-the-loop flags and recorded context windows (migration 0008).

``hitl_flags``: one row per session that was ever evaluated. ``status`` is ``none``
(nothing found yet), ``needed`` (waiting for a human) or ``resolved``. The row also
carries the evaluation's progress: ``checked_seq`` (every event up to it has been
looked at), ``baseline_seq`` (triggers count only events after it: the last
resolution) and ``streaks`` (the open run of failed results per tool), so each
evaluation reads only the events written since the last one.

``context_windows``: the last window built per (session, turn); ``turn_id`` is ``""``
for a window built outside any turn.

Both hang off ``sessions`` with ON DELETE CASCADE and carry ``user_id`` and
``session_id``, so ``delete_session`` and ``delete_user_data`` remove them.
"""

from __future__ import annotations

from agentctx.storage.schema import context_windows, hitl_flags

__all__ = ["context_windows", "hitl_flags"]
