"""``agentctx bench context``: does ``build_context`` stay fast as history grows?

For each size (default 1k, 10k and 100k events) one session is filled with distinct
chat messages (~200 characters each, a dated timestamp per message; each user message
and its answer appended together, so each exchange is a turn). Its search index is
brought up to date (lexical terms and embeddings, as a background worker would), then
``build_context(query, budget)`` is timed for a set of queries that name things said
anywhere in the history. Reported per size: p50/p95/p99 latency, the CPU time of the
building thread (p50/p95: what the build itself costs, less sensitive than wall time to
other work on a shared machine) and the tokens used.
The claims checked: latency does not grow with history beyond the index lookup (the
p95 of each window's time outside the retriever's search, at the largest size, within
2x the smallest), the same bound on the whole latency's p95 (the lookup included), and
the 50 ms p95 target.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel

from agentctx.bench.report import TableSpec
from agentctx.bench.stats import Latency, chat_messages, summarize
from agentctx.engine import ContextEngine
from agentctx.events import EventDraft, EventType, TextPart

Progress = Callable[[str], None]
GROWTH_LIMIT = 2.0
P95_TARGET_MS = 50.0
_FILL_BATCH = 2  # one exchange (a user message and its answer) per append: one turn each
_T0 = datetime(2024, 1, 1, tzinfo=UTC)


class ContextBenchConfig(BaseModel):
    """What ``bench context`` measures."""

    sizes: list[int] = [1_000, 10_000, 100_000]
    budget: int = 4000
    queries: int = 50
    strategy: str | None = None
    embedder: str = "auto"  # the engine's embeddings provider: auto, local, hashing, none


class SizeResult(BaseModel):
    """build_context on one history size."""

    events: int
    fill_s: float
    index_s: float
    latency: Latency
    cpu: Latency | None = None  # CPU time of the building thread per window
    # Each window's latency less its index lookup (the retriever's search, as the
    # window's report times it): what the claim "no growth beyond the lookup" is about.
    outside_search: Latency | None = None
    tokens_mean: float


class ContextBenchReport(BaseModel):
    """Every size, and the verdicts."""

    budget: int
    embedder: str
    tokenizer: str
    results: list[SizeResult]
    growth: float
    outside_growth: float | None = None
    verdicts: list[str]


def _queries(size: int, count: int) -> list[str]:
    """Questions about messages spread over the whole history."""
    step = max(1, size // count)
    texts = chat_messages(0, size)
    return [f"What did I say about: {texts[i][:80]}?" for i in range(0, size, step)][:count]


def run_context_benchmark(
    config: ContextBenchConfig, *, home: Path | None = None, progress: Progress | None = None
) -> ContextBenchReport:
    """Fill, index and time; one engine (SQLite, defaults) per run in a temporary home."""
    say = progress or (lambda _msg: None)
    results: list[SizeResult] = []
    with tempfile.TemporaryDirectory(dir=home) as tmp:
        engine = ContextEngine(
            url=f"sqlite:///{tmp}/bench.db",
            home=tmp,
            redaction={"enabled": False},
            embeddings={"provider": config.embedder},
            # Vectors synced before each timed build (bench agentstep times the defaults,
            # with embedding in the background).
            jobs="inline",
        )
        try:
            embedder_name = getattr(engine.search_index.embedder, "name", "none")
            for size in config.sizes:
                say(f"filling a {size:,}-event session")
                session = engine.create_session(user_id="bench", agent_id="bench")
                started = time.perf_counter()
                texts = chat_messages(0, size)
                for start in range(0, size, _FILL_BATCH):
                    session.append(
                        *(
                            EventDraft(
                                type=EventType.USER_INPUT
                                if i % 2 == 0
                                else EventType.AGENT_RESPONSE,
                                parts=(TextPart(text=texts[i]),),
                                ts=_T0 + timedelta(minutes=i),
                            )
                            for i in range(start, min(size, start + _FILL_BATCH))
                        )
                    )
                fill_s = time.perf_counter() - started
                say(f"indexing {size:,} events")
                started = time.perf_counter()
                engine.search_index.sync("bench", session.id)
                index_s = time.perf_counter() - started
                queries = _queries(size, config.queries)
                session.build_context(query=queries[0], budget=config.budget)  # warm-up
                samples: list[float] = []
                cpu: list[float] = []
                outside: list[float] = []
                tokens: list[int] = []
                say(f"timing {len(queries)} windows at {size:,} events")
                for query in queries:
                    cpu_started = time.thread_time()
                    started = time.perf_counter()
                    window = session.build_context(
                        query=query, budget=config.budget, strategy=config.strategy
                    )
                    samples.append(time.perf_counter() - started)
                    cpu.append(time.thread_time() - cpu_started)
                    search_s = window.report.timings_ms.get("search_ms", 0.0) / 1e3
                    outside.append(max(0.0, samples[-1] - search_s))
                    tokens.append(window.tokens)
                results.append(
                    SizeResult(
                        events=size,
                        fill_s=round(fill_s, 2),
                        index_s=round(index_s, 2),
                        latency=summarize(samples),
                        cpu=summarize(cpu),
                        outside_search=summarize(outside),
                        tokens_mean=sum(tokens) / len(tokens),
                    )
                )
            tokenizer = engine.token_counter().name
        finally:
            engine.close()
    first, last = results[0], results[-1]
    growth = last.latency.p95_ms / max(first.latency.p95_ms, 1e-9)
    assert first.outside_search is not None and last.outside_search is not None
    outside_growth = last.outside_search.p95_ms / max(first.outside_search.p95_ms, 1e-9)
    verdicts = [
        f"{'PASS' if outside_growth <= GROWTH_LIMIT else 'FAIL'} (outside the index lookup: "
        f"p95 at {last.events:,} events = {outside_growth:.2f}x the p95 at {first.events:,}; "
        f"limit {GROWTH_LIMIT:.1f}x)",
        f"{'PASS' if growth <= GROWTH_LIMIT else 'FAIL'} (whole latency, lookup included: "
        f"p95 at {last.events:,} events = {growth:.2f}x the p95 at {first.events:,}; "
        f"limit {GROWTH_LIMIT:.1f}x)",
        *(
            f"{'PASS' if r.latency.p95_ms <= P95_TARGET_MS else 'FAIL'} (p95 "
            f"{r.latency.p95_ms:.1f} ms <= {P95_TARGET_MS:.0f} ms at {r.events:,} events)"
            for r in results
        ),
    ]
    return ContextBenchReport(
        budget=config.budget,
        embedder=embedder_name,
        tokenizer=tokenizer,
        results=results,
        growth=growth,
        outside_growth=outside_growth,
        verdicts=verdicts,
    )


def context_tables(report: ContextBenchReport) -> Sequence[TableSpec]:
    """The report as tables (Rich and Markdown share them)."""
    latency = TableSpec(
        title=f"build_context latency, budget {report.budget:,} tokens",
        columns=[
            "events",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "cpu p50 / p95 ms",
            "outside lookup p50 / p95 ms",
            "tokens (mean)",
            "fill s",
            "index s",
        ],
        notes=[f"embedder: {report.embedder}; tokenizer: {report.tokenizer}"],
    )
    for r in report.results:
        latency.rows.append(
            [
                f"{r.events:,}",
                f"{r.latency.p50_ms:.1f}",
                f"{r.latency.p95_ms:.1f}",
                f"{r.latency.p99_ms:.1f}",
                f"{r.cpu.p50_ms:.1f} / {r.cpu.p95_ms:.1f}" if r.cpu is not None else "-",
                f"{r.outside_search.p50_ms:.1f} / {r.outside_search.p95_ms:.1f}"
                if r.outside_search is not None
                else "-",
                f"{r.tokens_mean:,.0f}",
                f"{r.fill_s:.1f}",
                f"{r.index_s:.1f}",
            ]
        )
    verdicts = TableSpec(title="Targets", columns=["verdict"], rows=[[v] for v in report.verdicts])
    return [latency, verdicts]
