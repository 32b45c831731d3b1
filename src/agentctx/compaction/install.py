"""The engine's compactors, built from its settings, their turn-end jobs registered.

One chat model (the fast slot) serves every compactor, and all of them count a tool
result as what a window shows of it, when windows shorten tool output, rather than by
the raw output's size. With a worker (``jobs="background"``) thread summaries and
folds are brought up to date by turn-end jobs; otherwise a window that reads them
folds in one bounded step of what is new, so appends never pay for summaries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentctx.compaction.fold import FOLD_JOB, EventFolder
from agentctx.compaction.reflection import REFLECTION_JOB, Reflector
from agentctx.compaction.thread import THREAD_JOB, ThreadSummarizer
from agentctx.compaction.topics import TOPICS_JOB, TopicArchiver
from agentctx.compaction.visual import VISUAL_JOB, VisualCompactor, turn_has_images
from agentctx.compaction.visual.compactor import KeptFrames
from agentctx.compute import Compute, InlineCompute, shared_process_compute
from agentctx.context.sources import CombinedSummaries, SummarySource
from agentctx.events import Event
from agentctx.llm.chat import LLM, LLMFailureHook

if TYPE_CHECKING:
    from agentctx.engine import ContextEngine


@dataclass(frozen=True, slots=True)
class Compactors:
    """The compactors of one engine, and the summaries its windows read."""

    thread_summaries: ThreadSummarizer
    topics: TopicArchiver
    folds: EventFolder
    reflector: Reflector
    visual: VisualCompactor
    summaries: CombinedSummaries | None  # None when no summary source is enabled


def install_compaction(
    engine: ContextEngine,
    *,
    load_events: Callable[..., list[Event]],
    llm: LLM | None,
    on_llm_failure: LLMFailureHook,
    on_kept_frames: KeptFrames | None = None,
) -> Compactors:
    """``engine``'s compactors, configured by its settings, each enabled one's turn-end
    job registered with ``engine.on_turn_end``. ``on_kept_frames``: told of the frames
    visual compaction keeps (see ``VisualCompactor``)."""
    s = engine.settings
    background = s.jobs == "background"
    counter = engine.token_counter()
    # Summaries and topic identification compute off the agent's interpreter lock when
    # they run in the background (agentctx.compute); inline they stay on the caller's.
    compute: Compute = (
        shared_process_compute() if background and s.compaction_process else InlineCompute()
    )
    tool_result_tokens = s.tool_output.compress_over_tokens if s.tool_output.enabled else None
    thread_summaries = ThreadSummarizer(
        engine.db,
        load_events,
        counter,
        llm,
        config=s.thread_summary,
        catch_up=not background,
        on_llm_failure=on_llm_failure,
        tool_result_tokens=tool_result_tokens,
        compute=compute,
    )
    if background and s.thread_summary.enabled:
        engine.on_turn_end(THREAD_JOB, thread_summaries.on_turn_end)
    # Topic archiving: a turn-end job archives once unarchived messages pass the
    # session's agent's threshold of its context limit (seed 001).
    topics = TopicArchiver(
        engine.db,
        load_events,
        counter,
        llm,
        config=s.topics,
        on_llm_failure=on_llm_failure,
        tool_result_tokens=tool_result_tokens,
        thresholds=engine.archive_thresholds,
        compute=compute,
    )
    if s.topics.enabled:
        engine.on_turn_end(TOPICS_JOB, topics.on_turn_end)
    # Hybrid compaction: older non-key events fold into summaries (seed 003).
    folds = EventFolder(
        engine.db,
        load_events,
        counter,
        llm,
        config=s.fold,
        on_llm_failure=on_llm_failure,
        catch_up=not background,
        tool_result_tokens=tool_result_tokens,
        compute=compute,
    )
    if background and s.fold.enabled:
        engine.on_turn_end(FOLD_JOB, folds.on_turn_end)
    # Reflections on assistant messages: a turn-end job, never part of any window.
    reflector = Reflector(
        engine.db, load_events, counter, llm, config=s.reflection, on_llm_failure=on_llm_failure
    )
    if s.reflection.enabled:
        engine.on_turn_end(REFLECTION_JOB, reflector.on_turn_end)
    # Visual compaction (seed 000): when a turn ends, its images other than anchor,
    # result and error frames become placeholders in windows.
    visual = VisualCompactor(engine.db, load_events, config=s.visual, on_kept=on_kept_frames)
    if s.visual.compaction:
        engine.on_turn_end(VISUAL_JOB, visual.on_turn_end, when=turn_has_images)
    sources: list[SummarySource] = []
    if s.topics.enabled:
        sources.append(topics)
    if s.fold.enabled:
        sources.append(folds)
    if s.thread_summary.enabled:
        sources.append(thread_summaries)
    return Compactors(
        thread_summaries=thread_summaries,
        topics=topics,
        folds=folds,
        reflector=reflector,
        visual=visual,
        summaries=CombinedSummaries(tuple(sources)) if sources else None,
    )
