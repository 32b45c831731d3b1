"""The last stage: the report of a window, counted from the messages it holds.

Every figure is taken from the window as built: a section's tokens are the cost of its
messages, its allotment what the strategy gave it (never less than it used: a section
that took room another left is allotted what it took), the included events those the
messages show, the truncations every message or line shortened, and the events left out
those considered and not shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentctx.context.assembly import Assembly
from agentctx.context.plan import Plan
from agentctx.context.pricing import Pricer
from agentctx.context.window import ContextReport, SectionReport, TruncatedEvent


def report_of(  # noqa: PLR0917 - the finished build's parts
    build: Assembly,
    plan: Plan,
    messages: list[dict[str, Any]],
    tokens: int,
    digest_ids: Sequence[str],
    stable_prefix_tokens: int | None,
) -> ContextReport:
    """The report of a finished window."""
    pricer = build.pricer
    recent_events = [e for p in plan.recent for e in p.atom.events]
    block_events = [e for c in plan.block for e in c.atom.events]
    shown = {e.event_id for e in recent_events} | {e.event_id for e in block_events}
    shown |= set(digest_ids)

    def section(name: str, parts: list[dict[str, Any]], ids: Sequence[str] = ()) -> SectionReport:
        used = pricer.cost_all(parts)
        return SectionReport(
            name=name,
            allocated=max(used, plan.allocated.get(name, used)),
            tokens=used,
            messages=len(parts),
            event_ids=tuple(ids),
        )

    recent_messages = [m for p in plan.recent for m in p.messages]
    recent_tokens = sum(p.tokens for p in plan.recent)
    sections = [
        section("system", plan.system + plan.tail),
        section("summary", plan.summary, [*plan.summary_ids, *digest_ids]),
        section("retrieved", plan.varying(), [e.event_id for e in block_events]),
        SectionReport(
            name="recent",
            allocated=max(recent_tokens, plan.allocated.get("recent", recent_tokens)),
            tokens=recent_tokens,
            messages=len(recent_messages),
            event_ids=tuple(e.event_id for e in recent_events),
        ),
    ]
    searched = build.retriever.last if build.retriever is not None else None
    notes = [*build.sources.notes, *plan.notes]
    if searched is not None and searched.dense == "loading":
        notes.append("ranked without vectors: the embedding model is still loading")
    elif searched is not None and searched.dense == "pending":
        notes.append("ranked without vectors: the query's vector is computed in the background")
    included = sorted([*recent_events, *block_events], key=lambda e: e.seq)
    considered = len(build.recent.events) if build.recent is not None else 0
    considered += len(build.reader.fetched)
    return ContextReport(
        strategy=build.request.config.strategy,
        budget=build.request.budget,
        tokens=tokens,
        tokenizer=pricer.counter.name,
        query=build.request.query,
        sections=tuple(sections),
        included_event_ids=tuple(e.event_id for e in included),
        dropped=tuple(d for _, d in sorted(pricer.dropped.items()) if d.event_id not in shown),
        truncated=tuple(_truncations(pricer, plan)),
        not_considered=max(0, build.last_seq - considered) + build.skipped,
        notes=tuple(notes),
        dense_ranking=searched.dense if searched is not None else None,
        unembedded_events=searched.unembedded if searched is not None else 0,
        timings_ms=build.timings,
        images=pricer.images.report(messages),
        stable_prefix_tokens=stable_prefix_tokens,
    )


def _truncations(pricer: Pricer, plan: Plan) -> list[TruncatedEvent]:
    """The messages shortened (those still in the window) and the block lines shortened."""
    shown = {e.event_id for p in plan.recent for e in p.atom.events}
    found = {t.event_id: t for t in pricer.truncations if t.event_id in shown}
    for candidate in plan.block:
        for line in candidate.lines:
            if line.tokens_before is not None and line.event_id not in found:
                found[line.event_id] = TruncatedEvent(
                    event_id=line.event_id,
                    seq=int(line.key),
                    tokens_before=line.tokens_before,
                    tokens_after=line.label_tokens + line.text_tokens,
                )
    return sorted(found.values(), key=lambda t: t.seq)
