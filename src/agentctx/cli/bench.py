"""``agentctx bench …``: benchmarks."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console

from agentctx.bench.report import print_store_report, store_markdown
from agentctx.bench.store import StoreConfig, run_store_benchmark
from agentctx.errors import AgentCtxError

bench_app = typer.Typer(help="Benchmarks (figures go to docs/benchmarks.md).", no_args_is_help=True)


@bench_app.callback()
def _bench() -> None:
    """Benchmarks (figures go to docs/benchmarks.md)."""
    # A callback keeps ``store`` a subcommand even while it is the only one.


class BackendChoice(enum.StrEnum):
    """Which agentctx backends to measure."""

    sqlite = "sqlite"
    postgresql = "postgresql"
    all = "all"


Report = TypeVar("Report", bound=BaseModel)


def _run_and_write(
    console: Console,
    run: Callable[[Callable[[str], None]], Report],
    *,
    show: Callable[[Report, Console], None],
    markdown_of: Callable[[Report], str],
    out: Path | None,
    markdown: Path | None,
) -> None:
    """Run a benchmark with progress lines, print its report and write the files asked for.

    An agentctx error (a missing extra, bad data) is printed in red and exits with 1.
    """
    try:
        report = run(
            lambda message: console.print(f"… {message}", style="dim", markup=False),
        )
    except AgentCtxError as exc:
        console.print(str(exc), style="red", markup=False, highlight=False)
        raise typer.Exit(1) from exc
    show(report, console)
    if out is not None:
        out.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        console.print(f"results written to {out}", markup=False, highlight=False)
    if markdown is not None:
        markdown.write_text(markdown_of(report), encoding="utf-8")
        console.print(f"tables written to {markdown}", markup=False, highlight=False)


def _parse_sizes(value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        sizes = [int(part.replace("_", "").strip()) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        raise typer.BadParameter("sizes are comma-separated integers, e.g. 1000,10000") from exc
    if not sizes or min(sizes) < 1:
        raise typer.BadParameter("give at least one positive size")
    return sizes


@bench_app.command("store")
def store(  # noqa: PLR0917 - one parameter per command-line option
    backend: BackendChoice = typer.Option(
        BackendChoice.all, "--backend", help="agentctx backend(s) to measure."
    ),
    quick: bool = typer.Option(False, "--quick", help="Small sizes (seconds, noisier figures)."),
    sizes: str | None = typer.Option(
        None, "--sizes", help="History sizes for the read test, e.g. 1000,10000,100000."
    ),
    out: Path | None = typer.Option(None, "--out", help="Write the results as JSON to FILE."),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="Also write the tables as Markdown to FILE."
    ),
    peer: bool = typer.Option(
        True, "--peer/--no-peer", help="Measure the OpenAI Agents SDK's SQLiteSession too."
    ),
    pg_url: str | None = typer.Option(
        None, "--pg-url", help="PostgreSQL to use (default: start a temporary server)."
    ),
    workdir: Path | None = typer.Option(
        None, "--dir", help="Put the temporary databases under this folder."
    ),
) -> None:
    """Session store: append latency and throughput, concurrency, reads vs. history size."""
    console = Console()
    backends = ["sqlite", "postgresql"] if backend is BackendChoice.all else [backend.value]
    overrides: dict[str, object] = {"backends": backends, "peer": peer, "pg_url": pg_url}
    if workdir is not None:
        overrides["workdir"] = workdir
    parsed = _parse_sizes(sizes)
    if parsed is not None:
        overrides["sizes"] = parsed
    try:
        config = StoreConfig.quick(**overrides) if quick else StoreConfig.model_validate(overrides)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    _run_and_write(
        console,
        lambda progress: run_store_benchmark(config, progress=progress),
        show=print_store_report,
        markdown_of=store_markdown,
        out=out,
        markdown=markdown,
    )


@bench_app.command("redact")
def redact(
    seed: int = typer.Option(0, "--seed", help="Corpus seed (the same seed, the same corpus)."),
    entities: int | None = typer.Option(
        None, "--entities", min=1, help="Planted entities (default 10,000; 1,000 with --quick)."
    ),
    quick: bool = typer.Option(False, "--quick", help="Small corpus, one timing pass."),
    out: Path | None = typer.Option(None, "--out", help="Write the results as JSON to FILE."),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="Also write the tables as Markdown to FILE."
    ),
) -> None:
    """PII redaction: precision and recall per entity type, hard negatives, throughput."""
    # Imported here: the corpus needs Faker (the bench extra), other commands do not.
    from agentctx.bench.redact import RedactConfig, run_redact_benchmark  # noqa: PLC0415
    from agentctx.bench.redact_report import (  # noqa: PLC0415
        print_redact_report,
        redact_markdown,
    )

    console = Console()
    overrides: dict[str, object] = {"seed": seed}
    if entities is not None:
        overrides["entities"] = entities
    config = RedactConfig.quick(**overrides) if quick else RedactConfig.model_validate(overrides)
    _run_and_write(
        console,
        lambda progress: run_redact_benchmark(config, progress=progress),
        show=print_redact_report,
        markdown_of=redact_markdown,
        out=out,
        markdown=markdown,
    )


def _parse_budgets(value: str) -> list[int]:
    try:
        budgets = [int(part.replace("_", "").strip()) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        raise typer.BadParameter(
            "budgets are comma-separated token counts, e.g. 1000,4000"
        ) from exc
    if not budgets or min(budgets) < 1:
        raise typer.BadParameter("give at least one positive budget")
    return budgets


@bench_app.command("recall")
def recall(  # noqa: PLR0917 - one parameter per command-line option
    data: list[Path] = typer.Option(
        ...,
        "--data",
        help="A LoCoMo or REALTALK JSON file, or a folder of them (repeat for several).",
    ),
    budget: str = typer.Option(
        "1000,2000,4000,8000", "--budget", help="Token budgets, comma-separated."
    ),
    limit_questions: int | None = typer.Option(
        None, "--limit-questions", min=1, help="Ask at most N questions per conversation."
    ),
    quick: bool = typer.Option(
        False, "--quick", help="At most 10 questions of one conversation per file."
    ),
    baselines: bool = typer.Option(
        True, "--baselines/--no-baselines", help="Also measure recent, BM25 and plain hybrid."
    ),
    agentctx: bool = typer.Option(
        True, "--agentctx/--no-agentctx", help="Measure agentctx's build_context."
    ),
    strategy: str | None = typer.Option(
        None, "--strategy", help="Passed to build_context as strategy= (default: its own)."
    ),
    redaction: bool = typer.Option(
        False,
        "--redaction/--no-redaction",
        help="Redact PII in the ingested turns (off: redacted text no longer matches evidence).",
    ),
    memory: bool = typer.Option(
        False,
        "--memory/--no-memory",
        help="Long-term memory on: extracted after each ingested turn, injected in windows.",
    ),
    out: Path | None = typer.Option(None, "--out", help="Write the results as JSON to FILE."),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="Also write the tables as Markdown to FILE."
    ),
) -> None:
    """Evidence recall of build_context per token budget, against three baselines."""
    # Imported here: the baselines need rank-bm25 and sentence-transformers (extras).
    from agentctx.bench.recall import RecallConfig, run_recall_benchmark  # noqa: PLC0415
    from agentctx.bench.recall_report import (  # noqa: PLC0415
        print_recall_report,
        recall_markdown,
    )

    console = Console()
    if not (agentctx or baselines):
        raise typer.BadParameter("nothing to measure: --no-agentctx and --no-baselines")
    overrides: dict[str, object] = {
        "data": data,
        "budgets": _parse_budgets(budget),
        "agentctx": agentctx,
        "baselines": baselines,
        "strategy": strategy,
        "redaction": redaction,
        "memory": memory,
    }
    if limit_questions is not None:
        overrides["limit_questions"] = limit_questions
    config = RecallConfig.quick(**overrides) if quick else RecallConfig.model_validate(overrides)
    _run_and_write(
        console,
        lambda progress: run_recall_benchmark(config, progress=progress),
        show=print_recall_report,
        markdown_of=recall_markdown,
        out=out,
        markdown=markdown,
    )


@bench_app.command("agentloop")
def agentloop(  # noqa: PLR0917 - one parameter per command-line option
    data: Path = typer.Option(
        ...,
        "--data",
        exists=True,
        dir_okay=False,
        help="A JSON list of tool-calling conversations ({task_id, trial, traj}).",
    ),
    budget: str = typer.Option(
        "2000,4000,8000", "--budget", help="Token budgets, comma-separated."
    ),
    group: int = typer.Option(
        1, "--group", min=1, help="Conversations replayed one after another into one session."
    ),
    strategy: list[str] = typer.Option(
        [],
        "--strategy",
        help="Measure only these (repeat; 'default', full, compressed, adaptive, semantic).",
    ),
    max_conversations: int | None = typer.Option(
        None, "--max-conversations", min=1, help="Replay only the first N conversations."
    ),
    embedder: str = typer.Option(
        "auto", "--embedder", help="Embeddings provider: auto (the default), local, hashing, none."
    ),
    half: str | None = typer.Option(
        None, "--half", help="Replay one half of the data only: even or odd task ids."
    ),
    context: str | None = typer.Option(
        None,
        "--context",
        help='Context settings as JSON, e.g. \'{"adaptive": {"low_water": 0.2}}\'.',
    ),
    out: Path | None = typer.Option(None, "--out", help="Write the results as JSON to FILE."),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="Also write the tables as Markdown to FILE."
    ),
) -> None:
    """The windows of an agent loop, judged by what the model did next: argument recall,
    recent fidelity, prefix reuse, budget and latency, against the naive window."""
    from agentctx.bench.agentloop import (  # noqa: PLC0415 - loads the engine lazily
        AgentLoopConfig,
        run_agentloop_benchmark,
    )
    from agentctx.bench.agentloop_report import (  # noqa: PLC0415
        agentloop_markdown,
        print_agentloop_report,
    )

    values: dict[str, object] = {
        "data": data,
        "budgets": _parse_budgets(budget),
        "group": group,
        "max_conversations": max_conversations,
        "embeddings": embedder,
        "half": half,
    }
    if context:
        try:
            values["context"] = json.loads(context)
        except ValueError as exc:
            raise typer.BadParameter(f"--context is not JSON: {exc}") from exc
    if strategy:
        values["strategies"] = strategy
    try:
        config = AgentLoopConfig.model_validate(values)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    _run_and_write(
        Console(),
        lambda progress: run_agentloop_benchmark(config, progress=progress),
        show=print_agentloop_report,
        markdown_of=agentloop_markdown,
        out=out,
        markdown=markdown,
    )


@bench_app.command("context")
def context(  # noqa: PLR0917 - one parameter per command-line option
    sizes: str | None = typer.Option(
        None, "--sizes", help="History sizes, e.g. 1000,10000,100000 (the default)."
    ),
    budget: int = typer.Option(4000, "--budget", min=50, help="Token budget of each window."),
    queries: int = typer.Option(50, "--queries", min=1, help="Windows timed per size."),
    strategy: str | None = typer.Option(None, "--strategy", help="Strategy to use."),
    embedder: str = typer.Option(
        "auto",
        "--embedder",
        help="Embeddings provider: auto, local, hashing or none (hashing fills 100k fast).",
    ),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="Also write the tables as Markdown to FILE."
    ),
) -> None:
    """build_context latency as a session's history grows (1k, 10k, 100k events)."""
    from agentctx.bench.context import (  # noqa: PLC0415 - loads the engine lazily
        ContextBenchConfig,
        context_tables,
        run_context_benchmark,
    )
    from agentctx.bench.report import print_tables, tables_markdown  # noqa: PLC0415

    console = Console()
    config = ContextBenchConfig(
        sizes=_parse_sizes(sizes) or [1_000, 10_000, 100_000],
        budget=budget,
        queries=queries,
        strategy=strategy,
        embedder=embedder,
    )
    try:
        report = run_context_benchmark(
            config, progress=lambda msg: console.print(f"… {msg}", style="dim")
        )
    except AgentCtxError as exc:
        console.print(f"error: {exc}", style="red")
        raise typer.Exit(2) from exc
    specs = context_tables(report)
    print_tables([], specs, console)
    if markdown is not None:
        markdown.write_text("\n".join(tables_markdown(specs)) + "\n", encoding="utf-8")
        console.print(f"tables written to {markdown}")


@bench_app.command("compaction")
def compaction(  # noqa: PLR0917 - one parameter per command-line option
    data: Path = typer.Option(
        ...,
        "--data",
        exists=True,
        dir_okay=False,
        help="A LoCoMo or REALTALK JSON file; its first conversation gives the session's words.",
    ),
    turns: int = typer.Option(200, "--turns", min=2, help="Turns in the generated session."),
    budget: int = typer.Option(
        8000, "--budget", min=200, help="Token budget of each compacted model call."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the synthetic tool calls."),
    tool_rate: float = typer.Option(
        0.4, "--tool-rate", min=0.0, max=1.0, help="Share of turns that call tools."
    ),
    llm_server: bool = typer.Option(
        False,
        "--llm-server",
        help="Summaries by a local OpenAI-compatible server the bench starts (default: offline).",
    ),
    embedder: str = typer.Option(
        "auto", "--embedder", help="Embeddings provider: auto, local, hashing or none."
    ),
    recall_data: list[Path] | None = typer.Option(
        None,
        "--recall-data",
        help="LoCoMo/REALTALK file or folder for the recall comparison (default: --data).",
    ),
    recall_budget: str = typer.Option(
        "1000,2000,4000,8000", "--recall-budget", help="Recall budgets, comma-separated."
    ),
    recall_limit: int | None = typer.Option(
        None, "--recall-limit", min=1, help="Ask at most N questions per conversation."
    ),
    recall: bool = typer.Option(
        True, "--recall/--no-recall", help="Compare evidence recall with compaction off and on."
    ),
    out: Path | None = typer.Option(None, "--out", help="Write the results as JSON to FILE."),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="Also write the tables as Markdown to FILE."
    ),
) -> None:
    """Compaction: tokens per model call over a long tool-using session, its latency, recall."""
    from agentctx.bench.compaction import (  # noqa: PLC0415 - loads the engine lazily
        CompactionConfig,
        run_compaction_benchmark,
    )
    from agentctx.bench.compaction_report import (  # noqa: PLC0415
        compaction_markdown,
        print_compaction_report,
    )

    config = CompactionConfig(
        data=data,
        turns=turns,
        budget=budget,
        seed=seed,
        tool_rate=tool_rate,
        llm_server=llm_server,
        embedder=embedder,
        recall=recall,
        recall_data=recall_data or None,
        recall_budgets=_parse_budgets(recall_budget),
        recall_limit=recall_limit,
    )
    _run_and_write(
        Console(),
        lambda progress: run_compaction_benchmark(config, progress=progress),
        show=print_compaction_report,
        markdown_of=compaction_markdown,
        out=out,
        markdown=markdown,
    )


@bench_app.command("visual")
def visual(
    turns: int = typer.Option(50, "--turns", min=1, help="Turns of the simulated desktop task."),
    seed: int = typer.Option(
        0, "--seed", help="Seed of the task (the same seed, the same frames)."
    ),
    out: Path | None = typer.Option(None, "--out", help="Write the results as JSON to FILE."),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="Also write the tables as Markdown to FILE."
    ),
) -> None:
    """Visual compaction: history image tokens, kept frames, restores, dedup, latency."""
    import sys  # noqa: PLC0415

    from agentctx.bench.visual import (  # noqa: PLC0415 - loads the engine lazily
        VisualBenchConfig,
        run_visual_benchmark,
    )
    from agentctx.bench.visual_report import (  # noqa: PLC0415
        print_visual_report,
        visual_markdown,
    )

    config = VisualBenchConfig(
        turns=turns, seed=seed, command=" ".join(["agentctx", *sys.argv[1:]])
    )
    _run_and_write(
        Console(),
        lambda progress: run_visual_benchmark(config, progress=progress),
        show=print_visual_report,
        markdown_of=visual_markdown,
        out=out,
        markdown=markdown,
    )


@bench_app.command("memory")
def memory(  # noqa: PLR0917 - one parameter per command-line option
    data: Path = typer.Option(
        ...,
        "--data",
        exists=True,
        dir_okay=False,
        help="A REALTALK (or LoCoMo) JSON chat file: its sessions, turns and questions.",
    ),
    limit_questions: int | None = typer.Option(
        None, "--limit-questions", min=1, help="Ask at most N questions per conversation."
    ),
    embedder: str = typer.Option(
        "auto", "--embedder", help="Embeddings provider: auto, local, hashing or none."
    ),
    sizes: str = typer.Option(
        "10000,100000", "--sizes", help="Memories per user for the SQLite search latency."
    ),
    no_latency: bool = typer.Option(
        False, "--no-latency", help="Skip the search latency (part 2) on SQLite."
    ),
    pg: bool = typer.Option(False, "--pg", help="Also measure search latency on PostgreSQL."),
    pg_sizes: str = typer.Option(
        "10000,100000", "--pg-sizes", help="Memories per user on PostgreSQL (1000000 opt-in)."
    ),
    pg_url: str | None = typer.Option(
        None, "--pg-url", help="An empty PostgreSQL database (default: a temporary server)."
    ),
    queries: int = typer.Option(200, "--queries", min=1, help="Searches timed per size."),
    llm_url: str | None = typer.Option(
        None, "--llm-url", help="An OpenAI-compatible endpoint: also extract with its model."
    ),
    llm_model: str = typer.Option("default", "--llm-model", help="The model at --llm-url."),
    out: Path | None = typer.Option(None, "--out", help="Write the results as JSON to FILE."),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="Also write the tables as Markdown to FILE."
    ),
) -> None:
    """Long-term memory: recall vs raw turns, extraction cost, search latency."""
    import sys  # noqa: PLC0415

    from agentctx.bench.memory import run_memory_benchmark  # noqa: PLC0415 - loads the engine
    from agentctx.bench.memory_models import MemoryBenchConfig  # noqa: PLC0415
    from agentctx.bench.memory_report import (  # noqa: PLC0415
        memory_markdown,
        print_memory_report,
    )

    config = MemoryBenchConfig(
        data=data,
        limit_questions=limit_questions,
        embedder=embedder,
        sizes=[] if no_latency else (_parse_sizes(sizes) or []),
        pg=pg,
        pg_sizes=_parse_sizes(pg_sizes) or [],
        pg_url=pg_url,
        queries=queries,
        llm_url=llm_url,
        llm_model=llm_model,
        command=" ".join(["agentctx", *sys.argv[1:]]),
    )
    _run_and_write(
        Console(),
        lambda progress: run_memory_benchmark(config, progress=progress),
        show=print_memory_report,
        markdown_of=memory_markdown,
        out=out,
        markdown=markdown,
    )


@bench_app.command("server")
def server(  # noqa: PLR0917 - one parameter per command-line option
    clients: int = typer.Option(64, "--clients", min=1, help="Concurrent clients, a user each."),
    seconds: float = typer.Option(60.0, "--seconds", min=0.1, help="Timed window per backend."),
    replicas: int = typer.Option(
        2, "--replicas", min=1, help="Server processes on PostgreSQL (SQLite runs one)."
    ),
    backend: str = typer.Option("both", "--backend", help="postgres, sqlite or both."),
    embedder: str = typer.Option(
        "auto", "--embedder", help="The replicas' embeddings provider: auto, local, hashing, none."
    ),
    pg_url: str | None = typer.Option(
        None, "--pg-url", help="PostgreSQL to use (default: start a temporary server)."
    ),
    workdir: Path | None = typer.Option(
        None, "--dir", help="Put the databases, blobs and replica logs under this folder."
    ),
    out: Path | None = typer.Option(None, "--out", help="Write the results as JSON to FILE."),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="Also write the tables as Markdown to FILE."
    ),
) -> None:
    """Server replicas under concurrent clients: requests/s, latency per route, then the
    log audited (no event lost or duplicated, every session verified, no foreign read).

    Exits with 1 when an invariant is broken."""
    import sys  # noqa: PLC0415

    from agentctx.bench.server import (  # noqa: PLC0415 - loads the engine lazily
        ServerBackend,
        ServerBenchConfig,
        ServerBenchReport,
        run_server_benchmark,
    )
    from agentctx.bench.server_report import (  # noqa: PLC0415
        print_server_report,
        server_markdown,
    )

    try:
        chosen = ServerBackend(backend)
    except ValueError as exc:
        raise typer.BadParameter("--backend is postgres, sqlite or both") from exc
    config = ServerBenchConfig(
        clients=clients,
        seconds=seconds,
        replicas=replicas,
        backends=chosen.backends(),
        embedder=embedder,
        pg_url=pg_url,
        workdir=workdir,
        command=" ".join(["agentctx", *sys.argv[1:]]),
    )
    finished: list[ServerBenchReport] = []

    def run(progress: Callable[[str], None]) -> ServerBenchReport:
        report = run_server_benchmark(config, progress=progress)
        finished.append(report)
        return report

    _run_and_write(
        Console(),
        run,
        show=print_server_report,
        markdown_of=server_markdown,
        out=out,
        markdown=markdown,
    )
    if not finished[0].passed:
        raise typer.Exit(1)
