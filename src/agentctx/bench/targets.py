"""The store targets the project states, checked against a run's figures.

* single-append p50 within 1.5x the peer's;
* batched-append throughput of at least 50,000 events/s, every guarantee on (redaction,
  hash chain, seq, idempotency, audit);
* newest-100 read p95 of at most 1 ms on a 100k-event session;
* PostgreSQL within 2x of SQLite measured in the same run: single-append p50, and the
  newest-100 read p95 on the 100k-event session;
* vectors of a short session on disk within 2x their raw size plus 4 KiB
  (``agentctx.bench.store_disk``).

A target is judged per agentctx backend. When a run lacks what a target needs (no peer,
no 100k-event session, no SQLite) the target is reported as not measured, never as passed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

if TYPE_CHECKING:
    from agentctx.bench.store import StoreReport

SINGLE_P50_MAX_RATIO = 1.5
BATCH_MIN_EVENTS_PER_S = 50_000.0
READ_P95_MAX_MS = 1.0
READ_TARGET_SIZE = 100_000
READ_TARGET_LIMIT = 100
DISK_VECTOR_MAX_RATIO = 2.0
"""Vectors may take at most this many times their raw size (dimensions x 4 bytes) on disk."""
DISK_VECTOR_SLACK_BYTES = 4096
"""Plus at most this much per session (one SQLite page): the bound's small constant."""
POSTGRES_MAX_RATIO = 2.0
"""PostgreSQL's single-append p50 and newest-100 read p95, at most this many times SQLite's."""

Metric = Literal["single", "batched", "read", "single_vs_sqlite", "read_vs_sqlite", "disk"]


class Target(BaseModel):
    """One target for one system: the figure, the bound, and the verdict."""

    metric: Metric
    name: str
    system: str
    figure: float | None
    bound: float
    unit: str
    direction: Literal["<=", ">="]
    passed: bool | None  # None: not measured in this run
    note: str = ""


def _judge(
    *,
    metric: Metric,
    name: str,
    system: str,
    figure: float | None,
    bound: float,
    unit: str,
    direction: Literal["<=", ">="],
    missing: str,
) -> Target:
    if figure is None:
        return Target(
            metric=metric,
            name=name,
            system=system,
            figure=None,
            bound=bound,
            unit=unit,
            direction=direction,
            passed=None,
            note=missing,
        )
    passed = figure <= bound if direction == "<=" else figure >= bound
    return Target(
        metric=metric,
        name=name,
        system=system,
        figure=figure,
        bound=bound,
        unit=unit,
        direction=direction,
        passed=passed,
    )


def evaluate_targets(report: StoreReport) -> list[Target]:
    """Judge every target for every agentctx backend of ``report``."""
    ours = [key for key in report.systems if key != report.peer_key]
    single = {r.system: r.latency.p50_ms for r in report.single}
    batched = {r.system: r.events_per_s for r in report.batched}
    reads = {
        r.system: r.latency.p95_ms
        for r in report.reads
        if r.size == READ_TARGET_SIZE and r.limit == READ_TARGET_LIMIT
    }
    disks = {r.system: r for r in report.disk}
    peer_p50 = single.get(report.peer_key) if report.peer_key else None
    targets = []
    for key in ours:
        ratio = single[key] / peer_p50 if key in single and peer_p50 else None
        targets.append(
            _judge(
                metric="single",
                name=f"single-append p50 <= {SINGLE_P50_MAX_RATIO}x the peer's",
                system=key,
                figure=ratio,
                bound=SINGLE_P50_MAX_RATIO,
                unit="x peer",
                direction="<=",
                missing="the peer was not measured",
            )
        )
        targets.append(
            _judge(
                metric="batched",
                name=f"batched append >= {BATCH_MIN_EVENTS_PER_S:,.0f} events/s",
                system=key,
                figure=batched.get(key),
                bound=BATCH_MIN_EVENTS_PER_S,
                unit="events/s",
                direction=">=",
                missing="not measured",
            )
        )
        targets.append(
            _judge(
                metric="read",
                name=(
                    f"newest-{READ_TARGET_LIMIT} read p95 <= {READ_P95_MAX_MS:g} ms "
                    f"at {READ_TARGET_SIZE:,} events"
                ),
                system=key,
                figure=reads.get(key),
                bound=READ_P95_MAX_MS,
                unit="ms",
                direction="<=",
                missing=f"no {READ_TARGET_SIZE:,}-event session in this run",
            )
        )
        disk = disks.get(key)
        targets.append(
            _judge(
                metric="disk",
                name=(
                    f"vector bytes a short session <= {DISK_VECTOR_MAX_RATIO:g}x raw "
                    f"+ {DISK_VECTOR_SLACK_BYTES:,} B"
                ),
                system=key,
                figure=disk.vector_bytes_per_session if disk else None,
                bound=disk.vector_bound if disk else DISK_VECTOR_SLACK_BYTES,
                unit="bytes",
                direction="<=",
                missing="disk per session not measured",
            )
        )
        if key == POSTGRES_KEY:
            targets.extend(_against_sqlite(key, single, reads))
    return targets


POSTGRES_KEY = "agentctx-postgresql"
SQLITE_KEY = "agentctx-sqlite"


def _ratio(figures: dict[str, float], key: str) -> float | None:
    ours, sqlite = figures.get(key), figures.get(SQLITE_KEY)
    return ours / sqlite if ours is not None and sqlite else None


def _against_sqlite(key: str, single: dict[str, float], reads: dict[str, float]) -> list[Target]:
    """PostgreSQL's figures as multiples of SQLite's in the same run."""
    bound = POSTGRES_MAX_RATIO
    return [
        _judge(
            metric="single_vs_sqlite",
            name=f"single-append p50 <= {bound:g}x SQLite's",
            system=key,
            figure=_ratio(single, key),
            bound=bound,
            unit="x sqlite",
            direction="<=",
            missing="SQLite was not measured",
        ),
        _judge(
            metric="read_vs_sqlite",
            name=(
                f"newest-{READ_TARGET_LIMIT} read p95 <= {bound:g}x SQLite's "
                f"at {READ_TARGET_SIZE:,} events"
            ),
            system=key,
            figure=_ratio(reads, key),
            bound=bound,
            unit="x sqlite",
            direction="<=",
            missing=f"no {READ_TARGET_SIZE:,}-event session on both backends in this run",
        ),
    ]
