"""The engines ``agentctx bench compaction`` compares: compaction settings and timed jobs.

:func:`compaction_overrides` is the one place that says what "compaction on" means;
:func:`open_engine` opens one side of a comparison, with the turn-end work registered
as jobs the bench runs and times (:class:`JobTimer`) after every turn.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentctx.compaction.fold import FOLD_JOB
from agentctx.compaction.thread import THREAD_JOB
from agentctx.compaction.topics import TOPICS_JOB
from agentctx.engine import TURN_END_PREFIX, ContextEngine
from agentctx.jobs import Job


def compaction_overrides(enabled: bool, context_limit: int | None = None) -> dict[str, Any]:
    """The engine settings that switch compaction on or off: the one place they are named.

    Both engines of a run get everything else alike. ``tool_output`` compresses and
    offloads tool results in windows; ``thread_summary`` keeps a running summary of
    the session; ``topics`` archives old messages into topics once they pass 70% of
    ``context_limit`` (the model call's budget: the turn-end job then archives before
    the next window needs it; default the engine's); ``fold`` folds old events into
    summaries between the engine's default low/high thresholds.
    """
    topics: dict[str, Any] = {"enabled": enabled}
    if context_limit is not None:
        topics["context_limit"] = context_limit
    return {
        "thread_summary": {"enabled": enabled},
        "tool_output": {"enabled": enabled},
        "topics": topics,
        "fold": {"enabled": enabled},
    }


class JobTimer:
    """Seconds spent per turn-end job kind (``thread_summary``, ``topics``), summed."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def wrap(self, name: str, handler: Callable[[Job], None]) -> Callable[[Job], None]:
        """``handler``, timed under ``name``."""

        def timed(job: Job) -> None:
            started = time.perf_counter()
            try:
                handler(job)
            finally:
                elapsed = time.perf_counter() - started
                self.seconds[name] = self.seconds.get(name, 0.0) + elapsed

        return timed

    def take(self) -> dict[str, float]:
        """The seconds so far, per kind; starts over."""
        taken, self.seconds = self.seconds, {}
        return taken


# Compaction kept current by a turn-end job with a background worker and by a window's
# catch-up otherwise: engine attribute -> job name (the engine's own names for them).
_CATCH_UP_JOBS: dict[str, str] = {"thread_summaries": THREAD_JOB, "folds": FOLD_JOB}
# Compaction the engine always runs as turn-end jobs: engine attribute -> job name.
_TURN_END_JOBS: dict[str, str] = {"topics": TOPICS_JOB}
INDEX_JOB = "search_index"
"""The turn-end job that indexes and embeds a turn's events (not compaction)."""


def register_compaction_jobs(engine: ContextEngine, timer: JobTimer | None = None) -> None:
    """Queue the engine's compaction work at every turn end, timed per kind by ``timer``.

    Thread summaries and folds run as turn-end jobs only with a background worker;
    with ``jobs="manual"`` the benchmark registers the same handlers, so the work runs
    in ``run_pending`` after the turn, where it is timed, and not inside a later
    ``build_context`` (whose catch-up is switched off, as with a worker). Topic
    archiving the engine registers itself; its handler is registered again wrapped in
    the timer. Any other turn-end job runs too, in the total only.
    """
    timer = timer or JobTimer()
    settings = {"thread_summaries": "thread_summary", "folds": "fold", "topics": "topics"}
    for attribute, job in (_CATCH_UP_JOBS | _TURN_END_JOBS).items():
        component = getattr(engine, attribute, None)
        config = getattr(engine.settings, settings[attribute], None)
        if component is None or not getattr(config, "enabled", False):
            continue
        if attribute in _TURN_END_JOBS and f"{TURN_END_PREFIX}{job}" not in engine.jobs.kinds:
            continue  # the engine does not run it after turns; neither does the bench
        engine.on_turn_end(job, timer.wrap(job, component.on_turn_end))
        if attribute in _CATCH_UP_JOBS:
            # As with a background worker: windows read what is stored and do not fold
            # new events in themselves, so this is turn-end work only.
            component.catch_up = False
    if f"{TURN_END_PREFIX}{INDEX_JOB}" not in engine.jobs.kinds:
        # As with a background worker, the turn's events are indexed and embedded after
        # the turn, not by the next window's search; timed apart from compaction.
        engine.on_turn_end(INDEX_JOB, timer.wrap(INDEX_JOB, engine.search_index.on_turn_end))


def open_engine(
    home: Path,
    *,
    compaction: bool,
    embedder: str,
    llm: Mapping[str, Any] | None,
    timer: JobTimer | None = None,
    context_limit: int | None = None,
) -> ContextEngine:
    """An engine for one side of the comparison (its own SQLite file under ``home``)."""
    home.mkdir(parents=True, exist_ok=True)
    # An explicit URL: an AGENTCTX_URL in the environment must not receive bench data.
    engine = ContextEngine(
        url=f"sqlite:///{home / 'agentctx.db'}",
        home=home,
        redaction={"enabled": False},
        embeddings={"provider": embedder},
        llm=dict(llm) if llm is not None else {"provider": "none"},
        jobs="manual",
        **compaction_overrides(compaction, context_limit),
    )
    register_compaction_jobs(engine, timer)
    return engine
