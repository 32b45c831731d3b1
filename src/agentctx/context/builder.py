"""``build_context``: the window an agent sends before every model call, as a pipeline.

1. **gather** (:mod:`~agentctx.context.gather`): the system prompt and the session's own
   system events, summaries, what is folded or retracted, the active task, memories;
2. **allocate and fit**, by the strategy: ``adaptive`` (:mod:`~agentctx.context.adaptive`,
   the default, for agent loops), ``semantic`` (:mod:`~agentctx.context.semantic`, for
   questions about a long past), ``full`` and ``compressed``
   (:mod:`~agentctx.context.sequential`), each filling a :class:`~agentctx.context.plan.Plan`;
3. **render**: the plan's messages in their final order, counted with the configured
   tokenizer and trimmed until they fit (:func:`~agentctx.context.plan.finish`);
4. **report** (:mod:`~agentctx.context.report`): what each section cost, which events the
   window shows, what was left out and why, and how much of it repeats the previous
   window (:mod:`~agentctx.context.prefix`).

Nothing on this path waits for a model: it reads what compaction, the search index and
memory extraction prepared. The same inputs give the same bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from agentctx.cache.bounded import Lru
from agentctx.context import adaptive, semantic, sequential
from agentctx.context.assembly import Assembly, RecordingRetriever
from agentctx.context.config import ContextConfig
from agentctx.context.counting import LongCounts, long_counts
from agentctx.context.gather import Request, gather
from agentctx.context.images import LOW_DETAIL_SIDE, RenderedImageCache
from agentctx.context.ledger import forget_values
from agentctx.context.pieces import BlockKey, CompactBlock, KeptLines, LinesKey
from agentctx.context.plan import Plan, finish
from agentctx.context.prefix import PrefixMemory, fingerprints, shared_prefix
from agentctx.context.pricing import Pricer
from agentctx.context.reader import LogReader
from agentctx.context.report import report_of
from agentctx.context.request import MIN_BUDGET
from agentctx.context.sources import (
    ImageStates,
    LogHead,
    LogOpener,
    MemorySource,
    Retriever,
    SummarySource,
    ToolOutput,
)
from agentctx.context.window import ContextWindow
from agentctx.context.window_images import ImageAccess
from agentctx.errors import AgentCtxError, InvalidInput
from agentctx.events import ImagePart
from agentctx.tokens import TokenCounter

__all__ = ["MIN_BUDGET", "STRATEGIES", "ContextBuilder"]

KEPT_BLOCKS = 256
"""Compact blocks kept between builds, per tokenizer (a few kilobytes each)."""

KEPT_LINES = 4096
"""Atoms' block lines kept between builds, per tokenizer (a line is at most an eighth
of a budget, most a few hundred bytes)."""

WINDOWED_SESSIONS = 4096
"""How many sessions a builder remembers having built windows for (least recently built
first out): a new image of one of them is rendered ahead for its next window."""

T = TypeVar("T")

STRATEGIES: dict[str, Callable[[Assembly], Plan]] = {
    "adaptive": adaptive.assemble,
    "semantic": semantic.assemble,
    "full": sequential.assemble_full,
    "compressed": sequential.assemble_compressed,
}


class ContextBuilder:
    """Assembles windows for one engine. Keeps only caches between calls (images
    rendered, token counts of short texts, each session's last window's fingerprints);
    thread-safe."""

    def __init__(
        self,
        *,
        open_log: LogOpener,
        counter_for: Callable[[str], TokenCounter],
        image_bytes: Callable[[str, ImagePart], bytes] | None = None,
        retriever: Retriever | None = None,
        summaries: SummarySource | None = None,
        memories: MemorySource | None = None,
        tool_output: ToolOutput | None = None,
        archived_through: Callable[[str, str], int | None] | None = None,
        image_states: ImageStates | None = None,
    ) -> None:
        self._open_log = open_log
        self._counter_for = counter_for
        self.retriever = retriever
        self.summaries = summaries
        self.memories = memories
        self.tool_output = tool_output
        # Topic archiving: events up to this seq are stood for by topic summaries, and
        # the history begins after them (seed 001: topics + unarchived messages).
        self.archived_through = archived_through
        # Visual compaction: the frame state of each image of ended turns; and the
        # downscaled copies of the images windows show.
        self.rendered_images = RenderedImageCache()
        # The sessions windows were built for: an agent loop's. A session only recorded
        # (an import, a recorder that never asks for windows) has no image rendered ahead.
        self._windowed: Lru[tuple[str, str], bool] = Lru(WINDOWED_SESSIONS)
        self._images = ImageAccess(image_bytes, image_states, self.rendered_images)
        # Token counts of short texts, per tokenizer spec (see RememberingCounter).
        self._known_counts: dict[str, dict[str, int]] = {}
        self._known_long_counts: dict[str, LongCounts] = {}
        # Compact blocks (digests, compacted parts of turns), per tokenizer spec.
        self._known_blocks: dict[str, Lru[BlockKey, CompactBlock]] = {}
        # Block lines of older events measured for a query, per tokenizer spec.
        self._known_lines: dict[str, Lru[LinesKey, KeptLines]] = {}
        self.prefixes = PrefixMemory()

    def forget_texts(self) -> None:
        """Drop what is kept between builds by text rather than by user (token counts,
        downscaled images, the values ledgers list): after a user's erasure."""
        for known in list(self._known_counts.values()):
            known.clear()
        for long_known in list(self._known_long_counts.values()):
            long_known.clear()
        for blocks in list(self._known_blocks.values()):
            blocks.clear()
        for lines in list(self._known_lines.values()):
            lines.clear()
        self.rendered_images.clear()
        forget_values()

    def render_ahead(
        self, user_id: str, session_id: str, part: ImagePart, data: bytes, config: ContextConfig
    ) -> None:
        """Start the copy of a newly appended image that the session's next window shows
        (:meth:`RenderedImageCache.render_ahead`), if windows are built for the session
        here and ``config`` sends images inline."""
        if config.images == "inline" and self._windowed.get((user_id, session_id)):
            self.rendered_images.render_ahead(data, part, config.image_max_width)

    def render_history_ahead(
        self, user_id: str, session_id: str, parts: Sequence[ImagePart], config: ContextConfig
    ) -> None:
        """Start the low-detail copies of the images a compacted turn kept (its anchor,
        result or error frames), which the session's windows show once newer turns hold
        the full ones (``history_image_detail="low"``): rendered on the agent's thread,
        each had cost a window about 16 ms (a decode and a resize of a screenshot). A
        frame whose bytes cannot be read is left to the window."""
        load = self._images.load
        if (
            load is None
            or config.images != "inline"
            or config.history_image_detail != "low"
            or not self._windowed.get((user_id, session_id))
        ):
            return
        for part in parts:
            try:
                data = load(user_id, part)
            except (AgentCtxError, OSError):
                continue
            self.rendered_images.render_ahead(data, part, LOW_DETAIL_SIDE, LOW_DETAIL_SIDE)

    def build(
        self,
        *,
        user_id: str,
        session_id: str,
        agent_id: str,
        state: Mapping[str, Any],
        config: ContextConfig,
        query: str | None,
        budget: int,
        system_prompt: str | None,
        head: LogHead | None = None,
    ) -> ContextWindow:
        """The window for one model call (see the module docstring)."""
        if budget < MIN_BUDGET:
            raise InvalidInput(f"budget must be at least {MIN_BUDGET} tokens, got {budget}")
        self._windowed.put((user_id, session_id), True)
        started = time.perf_counter()
        request = Request(
            user_id=user_id,
            session_id=session_id,
            agent_id=agent_id,
            state=state,
            config=config,
            query=query,
            budget=budget,
            system_prompt=system_prompt,
            head=head or LogHead(),
        )
        window_budget = budget
        if config.strategy == "full" and config.full.max_tokens is not None:
            window_budget = min(budget, config.full.max_tokens)
        pricer = Pricer(
            self._counter_for(config.tokenizer),
            config=config,
            user_id=user_id,
            session_id=session_id,
            budget=window_budget,
            images=self._images,
            tool_output=self.tool_output,
            known_counts=self._known_counts.setdefault(config.tokenizer, {}),
            known_long_counts=_kept_for(self._known_long_counts, config.tokenizer, long_counts),
            blocks=_kept_for(self._known_blocks, config.tokenizer, lambda: Lru(KEPT_BLOCKS)),
            lines=_kept_for(self._known_lines, config.tokenizer, lambda: Lru(KEPT_LINES)),
        )
        if query and self.retriever is not None and config.sections.retrieved:
            # The query's embedding runs beside what follows.
            self.retriever.prefetch(user_id, session_id, query)
        reader = LogReader(self._open_log(user_id, session_id, request.head), user_id, session_id)
        gathered = gather(request, reader, self.summaries, self.memories, self.archived_through)
        build = Assembly(
            request=request,
            sources=gathered,
            reader=reader,
            pricer=pricer,
            retriever=RecordingRetriever(self.retriever) if self.retriever is not None else None,
            memory_max_tokens=self.memories.max_tokens if self.memories is not None else None,
            timings={"search_ms": 0.0, "retrieve_ms": 0.0, **gathered.timings},
        )
        plan = STRATEGIES[config.strategy](build)
        if window_budget < budget:
            plan.notes.append(f"full.max_tokens caps the window at {window_budget} tokens")
        messages, tokens = finish(plan, pricer)
        current = fingerprints(messages, [pricer.cost(m) for m in messages])
        previous = self.prefixes.exchange((user_id, session_id), current)
        stable = shared_prefix(previous, current)
        if stable is not None and previous == current:
            stable = tokens  # the same request again, reply priming and all
        build.time("total_ms", started)
        report = report_of(
            build,
            plan,
            messages,
            tokens,
            _digest_ids(plan, build),
            stable,
        )
        return ContextWindow(messages, tokens, report)


def _kept_for(known: dict[str, T], tokenizer: str, make: Callable[[], T]) -> T:
    """What builds with ``tokenizer`` keep in ``known``, made on first use (two threads
    building at once get the same one)."""
    found = known.get(tokenizer)
    if found is None:
        found = known.setdefault(tokenizer, make())
    return found


def _digest_ids(plan: Plan, build: Assembly) -> list[str]:
    """The events the digest shows, if the window still has it."""
    if build.digest is None or not any(m is build.digest for m in plan.summary):
        return []
    return list(build.digest_ids)
