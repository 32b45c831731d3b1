"""Shared pieces of the benchmarks: latency summaries, the message corpus, thread harness."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Sequence

from pydantic import BaseModel

# Pieces of realistic chat traffic; combined per index so every message is distinct
# and about 200 characters long, like a typical user or assistant turn.
_GREETINGS = (
    "Hi there, quick one:",
    "Good morning!",
    "Hey, when you get a chance:",
    "Hello again, one more thing.",
    "Sorry to bother you again.",
)
_OPENERS = (
    "Can you check the status of order",
    "Please summarize the thread about ticket",
    "I need the cheapest flight for booking",
    "Draft a polite reply to the customer on case",
    "What did we decide in the meeting about project",
    "Look up the invoice and compare totals for account",
    "Remind me what the error log said for deploy",
    "Find the hotel options near the venue for trip",
)
_MIDDLES = (
    "and tell me whether anything is still blocked on our side",
    "keeping the tone friendly but short, the client is already annoyed",
    "because the numbers in the spreadsheet do not match the dashboard",
    "and list the three most important follow-ups with their owners",
    "since the last update was two days ago and nobody has replied",
    "making sure the dates line up with the calendar invite I sent",
)
_CLOSERS = (
    "Thanks, and please keep it under five bullet points.",
    "If something is unclear, ask me before doing anything irreversible.",
    "Use the newest data you have and mention where it came from.",
    "A short answer is fine, I will read the details later tonight.",
    "Flag anything that looks like a duplicate charge or a refund.",
)


def chat_message(index: int) -> str:
    """The ``index``-th message of the benchmark corpus (deterministic, ~200 characters)."""
    greeting = _GREETINGS[(index // 3) % len(_GREETINGS)]
    opener = _OPENERS[index % len(_OPENERS)]
    middle = _MIDDLES[(index // len(_OPENERS)) % len(_MIDDLES)]
    closer = _CLOSERS[(index // 7) % len(_CLOSERS)]
    return f"{greeting} {opener} #{index:07d} {middle}. {closer}"


def chat_messages(start: int, count: int) -> list[str]:
    """Messages ``start`` .. ``start + count - 1`` of the corpus."""
    return [chat_message(i) for i in range(start, start + count)]


class Latency(BaseModel):
    """A latency distribution in milliseconds."""

    count: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    if not sorted_values:
        raise ValueError("no samples")
    rank = max(1, math.ceil(pct / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summarize(samples_s: Sequence[float]) -> Latency:
    """Summarize per-call durations given in seconds."""
    ordered = sorted(samples_s)
    ms = 1000.0
    return Latency(
        count=len(ordered),
        p50_ms=percentile(ordered, 50) * ms,
        p95_ms=percentile(ordered, 95) * ms,
        p99_ms=percentile(ordered, 99) * ms,
        mean_ms=sum(ordered) / len(ordered) * ms,
        max_ms=ordered[-1] * ms,
    )


Worker = Callable[[threading.Barrier], list[float]]


def run_concurrently(
    workers: Sequence[Worker], timeout_s: float = 600.0
) -> tuple[float, list[float]]:
    """Run each worker in its own thread; time from a common start to the last one's end.

    A worker warms up, waits on the barrier it is given, then does the measured work and
    returns its per-call durations. Returns (elapsed seconds, all durations).
    """
    barrier = threading.Barrier(len(workers) + 1, timeout=timeout_s)
    results: list[list[float]] = [[] for _ in workers]
    errors: list[BaseException] = []

    def run(index: int, worker: Worker) -> None:
        try:
            results[index] = worker(barrier)
        except BaseException as exc:  # surfaced in the caller's thread below
            errors.append(exc)
            barrier.abort()

    threads = [
        threading.Thread(target=run, args=(i, w), name=f"bench-writer-{i}", daemon=True)
        for i, w in enumerate(workers)
    ]
    for thread in threads:
        thread.start()
    # A broken barrier means a worker failed during warm-up; its error is raised below.
    with contextlib.suppress(threading.BrokenBarrierError):
        barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise errors[0]
    return elapsed, [d for durations in results for d in durations]
