"""``agentctx bench agentstep``: what a context engine costs an agent loop, step by step.

A tool-using session (``bench.agentstep_data``: a coding agent with real tool output of
2-40 KB and screenshots, default 200 turns) is replayed as an agent loop. Before every
model call (after the user's message, and after each tool result) the subject under test
records what is new and builds the model's input for the budget (default 8,000 tokens):

1. **agentctx, defaults**: ``ContextEngine(home=…)`` with nothing else set (the local
   embedding model when it is installed, jobs as the default says, compaction off); the
   turn is ``with session.turn()``, the window ``session.build_context(query=<the user's
   message>, budget=…)``;
2. **agentctx, compaction on**: the same with the settings ``bench compaction`` turns
   compaction on with (``compaction_overrides(True, budget)``);
3. **openai-agents** ``SQLiteSession`` and 4. **google-adk** ``DatabaseSessionService``
   (``bench.agentstep_peers``): every message stored, the session read back and trimmed
   newest-first to the budget, counted with tiktoken ``o200k_base``.

Per model call: the window's time (build_context, or the read and the trim), and the
whole step (the new events' appends and the window). Per turn: the turn's end on the
agent's thread (agentctx: leaving the ``with session.turn()`` block). The engine's start
and its first call are reported apart; so is a call during which the embedding model
finished loading (``loaded`` of the embedder, checked at every boundary), which is left
out of the window's figures. The window's own report says what it did: every field about
dense ranking or vectors it has is counted per answer, and its timings are summarized.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentctx.agents import AgentConfig
from agentctx.bench.agentstep_data import (
    SYSTEM_PROMPT,
    AgentTurn,
    generate_agent_session,
    session_fingerprint,
)
from agentctx.bench.agentstep_peers import (
    CallSample,
    SubjectRun,
    adk_version,
    load_adk,
    run_adk,
    run_sdk,
    sdk_version,
)
from agentctx.bench.compaction_engine import compaction_overrides
from agentctx.bench.machine import Machine, load_average, machine_facts
from agentctx.bench.peer import PEER_INSTALL_HINT, load_peer
from agentctx.bench.stats import Latency, percentile, summarize
from agentctx.engine import ContextEngine
from agentctx.llm.local import forget_loaded_models
from agentctx.tokens import TiktokenCounter

Progress = Callable[[str], None]
BENCH_USER = "agentstep-bench"
BENCH_AGENT = "agentstep-bench"
DEFAULT = "agentctx-default"
COMPACTION = "agentctx-compaction"
SDK = "openai-agents"
ADK = "google-adk"
LABELS = {
    DEFAULT: "agentctx, defaults",
    COMPACTION: "agentctx, compaction on",
    SDK: "openai-agents SQLiteSession + trim",
    ADK: "google-adk DatabaseSessionService + trim",
}
PEERS = (SDK, ADK)

# Targets.
WINDOW_P95_MAX_MS = 50.0
WINDOW_MAX_MS = 250.0
TURN_END_P95_MAX_MS = 20.0
STEP_OVER_SDK_MAX_MS = 10.0


class AgentStepConfig(BaseModel):
    """One ``bench agentstep`` run."""

    turns: int = Field(default=200, ge=1)
    budget: int = Field(default=8000, ge=500)
    seed: int = 0
    compaction: bool = True  # also measure agentctx with compaction on
    peers: bool = True
    workdir: Path | None = None  # where the temporary databases go
    # Settings both agentctx engines get on top of their defaults (none in a real run).
    engine_overrides: dict[str, Any] = Field(default_factory=dict)
    command: str = ""


class SessionFacts(BaseModel):
    """What the replayed session holds."""

    turns: int
    model_calls: int
    tool_calls: dict[str, int]
    screenshots: int
    output_bytes_p50: int
    output_bytes_max: int
    output_bytes_total: int
    fingerprint: str  # of everything replayed (agentstep_data.session_fingerprint)


class SubjectResult(BaseModel):
    """One subject's figures; ``measured`` False (with the reason) when it could not run."""

    key: str
    label: str
    measured: bool
    note: str = ""
    facts: dict[str, str] = Field(default_factory=dict)
    calls: int = 0
    start_ms: float | None = None  # the engine or service starting, before the first call
    first_call_ms: float | None = None
    first_step_ms: float | None = None
    model_ready_ms: float | None = None  # from the start; found at a call/append/turn end
    loading_calls_ms: list[float] = Field(default_factory=list)  # left out of window/step
    window: Latency | None = None  # from the first call on, loading calls left out
    # The same windows by what came just before: the user's message (a turn's first
    # call, whose query is new) or a tool result (WINDOW_KINDS).
    window_by_kind: dict[str, Latency] = Field(default_factory=dict)
    step_by_kind: dict[str, Latency] = Field(default_factory=dict)  # the whole steps
    step: Latency | None = None
    append: Latency | None = None
    turn_end: Latency | None = None
    tokens_mean: float = 0.0
    tokens_max: int = 0
    over_budget: int = 0
    dense: dict[str, int] = Field(default_factory=dict)  # the report's answer -> windows
    timings: dict[str, Latency] = Field(default_factory=dict)  # the report's own timings


class Ratio(BaseModel):
    """An agentctx figure over a peer's, measured in the same run."""

    subject: str
    peer: str
    metric: str
    ratio: float


class StepTarget(BaseModel):
    """One target for one subject: the figure, the bound, the verdict (None: not measured)."""

    subject: str
    name: str
    figure: float | None
    bound: float
    unit: str
    passed: bool | None
    note: str = ""


class AgentStepReport(BaseModel):
    """A run's results."""

    started_at: datetime
    machine: Machine
    config: AgentStepConfig
    session: SessionFacts
    trim_counter: str
    subjects: list[SubjectResult]
    ratios: list[Ratio]
    targets: list[StepTarget]
    notes: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------- agentctx


def dense_facts(report: Any, depth: int = 2) -> str | None:
    """What a window's report says about dense ranking: each field (to ``depth`` levels)
    whose name speaks of dense ranking or vectors, as ``name=value``; None without one."""
    found: list[str] = []

    def visit(model: Any, prefix: str, level: int) -> None:
        for name in sorted(getattr(type(model), "model_fields", {})):
            value = getattr(model, name, None)
            if "dense" in name or "vector" in name:
                found.append(f"{prefix}{name}={value}")
            elif level > 1 and isinstance(value, BaseModel):
                visit(value, f"{prefix}{name}.", level - 1)

    visit(report, "", depth)
    return ", ".join(found) if found else None


class _ModelClock:
    """When the engine's embedding model became ready, checked at every boundary of the
    replay: the engine's background load (``model_warmup``) when it has one, else
    ``loaded`` on the embedder where it exposes it (the model then loads inside a call)."""

    def __init__(self, engine: ContextEngine, started: float) -> None:
        self.warmup = engine.model_warmup
        self.embedder = engine.search_index.embedder
        self.started = started
        self.ready_s: float | None = None

    def exposed(self) -> bool:
        return self.warmup is not None or isinstance(getattr(self.embedder, "loaded", None), bool)

    def _loaded(self) -> bool:
        if self.warmup is not None:
            return self.warmup.state != "loading"
        return bool(getattr(self.embedder, "loaded", False))

    def became_ready(self) -> bool:
        """True once: at the first check that finds the model loaded."""
        if self.ready_s is not None or not self._loaded():
            return False
        self.ready_s = time.perf_counter() - self.started
        return True

    def loaded_in_call(self) -> bool:
        """True for the call during which the model finished loading inside it (never
        with a background load: no call waits for it)."""
        return self.became_ready() and self.warmup is None


def run_agentctx(
    turns: Sequence[AgentTurn],
    *,
    budget: int,
    home: Path,
    overrides: dict[str, Any],
    say: Progress,
) -> SubjectRun:
    """Replay ``turns`` into an engine with ``overrides`` on its defaults."""
    home.mkdir(parents=True, exist_ok=True)
    # Each engine loads its model as in a process of its own: one loaded by the engine
    # replayed before would make this one's first calls look ready from the start.
    forget_loaded_models()
    started = time.perf_counter()
    # An explicit URL (the default's own path): an AGENTCTX_URL in the environment must
    # not receive bench data.
    engine = ContextEngine(url=f"sqlite:///{home / 'agentctx.db'}", home=home, **overrides)
    run = SubjectRun(start_s=time.perf_counter() - started)
    clock = _ModelClock(engine, started)
    try:
        engine.register_agent(AgentConfig(agent_id=BENCH_AGENT, system_prompt=SYSTEM_PROMPT))
        session = engine.create_session(BENCH_USER, BENCH_AGENT)

        def append(write: Callable[..., object], *args: Any, **kwargs: Any) -> None:
            began = time.perf_counter()
            write(*args, **kwargs)
            run.appends_s.append(time.perf_counter() - began)
            clock.became_ready()

        def call(turn: AgentTurn, step_started: float) -> None:
            began = time.perf_counter()
            window = session.build_context(query=turn.user, budget=budget)
            ended = time.perf_counter()
            run.calls.append(
                CallSample(
                    turn=turn.index,
                    window_s=ended - began,
                    step_s=ended - step_started,
                    tokens=window.tokens,
                    loading=clock.loaded_in_call(),
                    dense=dense_facts(window.report),
                    timings_ms=dict(window.report.timings_ms),
                )
            )

        for turn in turns:
            step_started = time.perf_counter()
            with session.turn() as recorder:
                append(recorder.add_message, "user", turn.user)
                call(turn, step_started)
                for step in turn.steps:
                    step_started = time.perf_counter()
                    append(recorder.add_tool_call, step.name, step.arguments, call_id=step.call_id)
                    append(
                        recorder.add_tool_result,
                        step.call_id,
                        content=step.text,
                        data=step.data,
                        images=[step.image] if step.image is not None else None,
                    )
                    call(turn, step_started)
                append(recorder.add_message, "assistant", turn.answer)
                closing = time.perf_counter()
            run.turn_ends_s.append(time.perf_counter() - closing)
            clock.became_ready()
            if (turn.index + 1) % 10 == 0:
                say(f"turn {turn.index + 1}/{len(turns)}")
        embedder = engine.search_index.embedder
        run.facts = {
            "embedder": str(getattr(embedder, "name", "none")),
            "model precision": str(getattr(embedder, "precision", None) or "-"),  # a local model
            "tokenizer": engine.token_counter().name,
            "jobs": engine.settings.jobs,
            "redaction": str(engine.settings.redaction.enabled),
            "model readiness": "exposed" if clock.exposed() else "not exposed",
        }
    finally:
        engine.close()
    run.model_ready_s = clock.ready_s
    return run


# ---------------------------------------------------------------- figures


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


WINDOW_KINDS = ("after the user's message", "after a tool result")
"""What a window follows: a turn's first call, or a call after the agent's tool ran."""


def _by_kind(calls: Sequence[CallSample], *, step: bool = False) -> dict[str, Latency]:
    """The counted windows' latency (``step``: the whole steps') by
    :data:`WINDOW_KINDS` (a call whose turn is not the previous call's is the turn's
    first)."""
    grouped: dict[str, list[float]] = {kind: [] for kind in WINDOW_KINDS}
    for index, call in enumerate(calls):
        first = index == 0 or calls[index - 1].turn != call.turn
        if not call.loading:
            kind = WINDOW_KINDS[0] if first else WINDOW_KINDS[1]
            grouped[kind].append(call.step_s if step else call.window_s)
    return {kind: summarize(times) for kind, times in grouped.items() if times}


def result_of(key: str, run: SubjectRun, budget: int) -> SubjectResult:
    """A subject's figures from its replay."""
    calls = run.calls
    counted = [c for c in calls if not c.loading]
    dense: dict[str, int] = {}
    for sample in calls:
        answer = sample.dense if sample.dense is not None else "(no such field in the report)"
        dense[answer] = dense.get(answer, 0) + 1
    timing_keys = sorted({k for c in counted for k in c.timings_ms})
    return SubjectResult(
        key=key,
        label=LABELS[key],
        measured=True,
        facts=run.facts,
        calls=len(calls),
        start_ms=_ms(run.start_s),
        first_call_ms=_ms(calls[0].window_s) if calls else None,
        first_step_ms=_ms(calls[0].step_s) if calls else None,
        model_ready_ms=_ms(run.model_ready_s),
        loading_calls_ms=[c.window_s * 1e3 for c in calls if c.loading],
        window=summarize([c.window_s for c in counted]) if counted else None,
        window_by_kind=_by_kind(calls),
        step_by_kind=_by_kind(calls, step=True),
        step=summarize([c.step_s for c in counted]) if counted else None,
        append=summarize(run.appends_s) if run.appends_s else None,
        turn_end=summarize(run.turn_ends_s) if run.turn_ends_s else None,
        tokens_mean=sum(c.tokens for c in calls) / len(calls) if calls else 0.0,
        tokens_max=max((c.tokens for c in calls), default=0),
        over_budget=sum(c.tokens > budget for c in calls),
        dense=dense if key not in PEERS else {},
        timings={
            k: summarize([c.timings_ms[k] / 1e3 for c in counted if k in c.timings_ms])
            for k in timing_keys
        },
    )


def ratios_of(results: Sequence[SubjectResult]) -> list[Ratio]:
    """Each agentctx subject's window and step p50/p95 over each peer's."""
    measured = {r.key: r for r in results if r.measured}
    ratios: list[Ratio] = []
    for ours in (r for r in results if r.measured and r.key not in PEERS):
        for peer in (measured[k] for k in PEERS if k in measured):
            for name in ("window", "step"):
                mine, theirs = getattr(ours, name), getattr(peer, name)
                if mine is None or theirs is None:
                    continue
                for pct in ("p50", "p95"):
                    bottom = getattr(theirs, f"{pct}_ms")
                    if bottom > 0:
                        ratio = getattr(mine, f"{pct}_ms") / bottom
                        ratios.append(
                            Ratio(
                                subject=ours.key, peer=peer.key, metric=f"{name} {pct}", ratio=ratio
                            )
                        )
    return ratios


def step_over_sdk(ours: SubjectRun, sdk: SubjectRun) -> float | None:
    """p95 over model calls of (our step - our window - the SDK's step) in ms: what
    agentctx's appends cost beyond the SDK session's whole step, call by call."""
    pairs = [
        (mine, theirs)
        for mine, theirs in zip(ours.calls, sdk.calls, strict=False)
        if not mine.loading
    ]
    if not pairs:
        return None
    extra = sorted(m.step_s - m.window_s - t.step_s for m, t in pairs)
    return percentile(extra, 95) * 1e3


def _target(
    subject: str, name: str, figure: float | None, bound: float, note: str = ""
) -> StepTarget:
    return StepTarget(
        subject=subject,
        name=name,
        figure=figure,
        bound=bound,
        unit="ms",
        passed=None if figure is None else figure <= bound,
        note=note if figure is None else "",
    )


def judge(results: Sequence[SubjectResult], runs: dict[str, SubjectRun]) -> list[StepTarget]:
    """The targets, for each agentctx subject measured."""
    targets: list[StepTarget] = []
    sdk = runs.get(SDK)
    for result in results:
        if not result.measured or result.key in PEERS:
            continue
        window, turn_end = result.window, result.turn_end
        targets += [
            _target(
                result.key,
                f"build_context p95 <= {WINDOW_P95_MAX_MS:g} ms (model load left out)",
                window.p95_ms if window else None,
                WINDOW_P95_MAX_MS,
            ),
            _target(
                result.key,
                f"build_context max <= {WINDOW_MAX_MS:g} ms (model load left out)",
                window.max_ms if window else None,
                WINDOW_MAX_MS,
            ),
            _target(
                result.key,
                f"turn end p95 <= {TURN_END_P95_MAX_MS:g} ms on the agent's thread",
                turn_end.p95_ms if turn_end else None,
                TURN_END_P95_MAX_MS,
            ),
            _target(
                result.key,
                f"step - window - SDK step, p95 per call <= {STEP_OVER_SDK_MAX_MS:g} ms",
                step_over_sdk(runs[result.key], sdk) if sdk is not None else None,
                STEP_OVER_SDK_MAX_MS,
                note="the SDK session was not measured",
            ),
        ]
    return targets


def session_facts(turns: Sequence[AgentTurn]) -> SessionFacts:
    """What the generated session holds."""
    steps = [s for t in turns for s in t.steps]
    sizes = sorted(len(s.output().encode()) for s in steps if s.image is None)
    tools: dict[str, int] = {}
    for step in steps:
        tools[step.name] = tools.get(step.name, 0) + 1
    return SessionFacts(
        turns=len(turns),
        model_calls=len(turns) + len(steps),
        tool_calls=dict(sorted(tools.items())),
        screenshots=sum(s.image is not None for s in steps),
        output_bytes_p50=int(percentile(sizes, 50)) if sizes else 0,
        output_bytes_max=sizes[-1] if sizes else 0,
        output_bytes_total=sum(sizes),
        fingerprint=session_fingerprint(turns),
    )


# ---------------------------------------------------------------- the run


def _missing(key: str, package: str) -> SubjectResult:
    return SubjectResult(
        key=key,
        label=LABELS[key],
        measured=False,
        note=f"{package} is not installed: {PEER_INSTALL_HINT}",
    )


def run_agentstep_benchmark(
    config: AgentStepConfig, *, progress: Progress | None = None
) -> AgentStepReport:
    """Generate the session and replay it through every subject (module docstring)."""
    say = progress or (lambda _message: None)
    say(f"generating a {config.turns}-turn session (seed {config.seed})")
    turns = generate_agent_session(config.turns, config.seed)
    facts = session_facts(turns)
    started = datetime.now(UTC)
    counter = TiktokenCounter("o200k_base")
    subjects: list[tuple[str, dict[str, Any]]] = [(DEFAULT, dict(config.engine_overrides))]
    if config.compaction:
        on = {**config.engine_overrides, **compaction_overrides(True, config.budget)}
        subjects.append((COMPACTION, on))
    runs: dict[str, SubjectRun] = {}
    results: list[SubjectResult] = []
    if config.workdir is not None:
        config.workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="agentctx-agentstep-", dir=config.workdir) as tmp:
        root = Path(tmp)
        machine = machine_facts(root)
        for key, overrides in subjects:
            say(f"{LABELS[key]}: {facts.model_calls} model calls")
            runs[key] = run_agentctx(
                turns, budget=config.budget, home=root / key, overrides=overrides, say=say
            )
        if config.peers:
            if load_peer() is None:
                results.append(_missing(SDK, "openai-agents"))
            else:
                say(f"{LABELS[SDK]}: {facts.model_calls} model calls")
                runs[SDK] = run_sdk(
                    turns, budget=config.budget, db_path=root / "sdk.db", counter=counter
                )
            if load_adk() is None:
                results.append(_missing(ADK, "google-adk"))
            else:
                say(f"{LABELS[ADK]}: {facts.model_calls} model calls")
                runs[ADK] = run_adk(
                    turns, budget=config.budget, db_path=root / "adk.db", counter=counter
                )
    machine.load_average_end = load_average()
    machine.peer = f"openai-agents {sdk_version()}, google-adk {adk_version()}"
    measured = [result_of(key, run, config.budget) for key, run in runs.items()]
    order = [DEFAULT, COMPACTION, *PEERS]
    results = sorted([*measured, *results], key=lambda r: order.index(r.key))
    default = runs[DEFAULT].facts
    machine.agentctx_settings = {
        "budget": str(config.budget),
        "embedder": default.get("embedder", "?"),
        "tokenizer": default.get("tokenizer", "?"),
        "jobs": default.get("jobs", "?"),
        "overrides": str(config.engine_overrides or "none"),
    }
    return AgentStepReport(
        started_at=started,
        machine=machine,
        config=config,
        session=facts,
        trim_counter=counter.name,
        subjects=results,
        ratios=ratios_of(results),
        targets=judge(results, runs),
        notes=[
            "window: agentctx build_context(query=<the user's message>, budget); a peer's "
            "read of its whole session and the newest-first trim",
            "step: the appends of what is new since the previous model call, and the window",
            "a call during which the embedding model finished loading is left out of the "
            "window and step figures and listed apart",
            "the peers have no turn end: their turn is over when the answer is stored",
        ],
    )
