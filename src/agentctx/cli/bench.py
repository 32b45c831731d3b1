"""``agentctx bench …``: benchmarks (those of context windows in ``bench_windows``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer
from rich.console import Console

from agentctx.bench.report import print_store_report, store_markdown
from agentctx.bench.store import StoreConfig, run_store_benchmark
from agentctx.cli import bench_windows  # noqa: F401 - registers its commands on bench_app
from agentctx.cli.bench_common import (
    BackendChoice,
    bench_app,
    parse_budgets,
    parse_sizes,
    run_and_write,
)
from agentctx.errors import AgentCtxError


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
    disk_sessions: int | None = typer.Option(
        None, "--disk-sessions", min=0, help="Short sessions for disk per session (0 skips)."
    ),
    disk_data: Path | None = typer.Option(
        None,
        "--disk-data",
        exists=True,
        dir_okay=False,
        help="Conversations (JSON, as bench agentloop reads) to replay for disk per session.",
    ),
) -> None:
    """Session store: append latency and throughput, concurrency, reads vs. history size,
    disk per session."""
    console = Console()
    backends = ["sqlite", "postgresql"] if backend is BackendChoice.all else [backend.value]
    overrides: dict[str, object] = {"backends": backends, "peer": peer, "pg_url": pg_url}
    if workdir is not None:
        overrides["workdir"] = workdir
    if disk_sessions is not None:
        overrides["disk_sessions"] = disk_sessions
    if disk_data is not None:
        overrides["disk_data"] = disk_data
    parsed = parse_sizes(sizes)
    if parsed is not None:
        overrides["sizes"] = parsed
    try:
        config = StoreConfig.quick(**overrides) if quick else StoreConfig.model_validate(overrides)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    run_and_write(
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
    run_and_write(
        console,
        lambda progress: run_redact_benchmark(config, progress=progress),
        show=print_redact_report,
        markdown_of=redact_markdown,
        out=out,
        markdown=markdown,
    )


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
        recall_budgets=parse_budgets(recall_budget),
        recall_limit=recall_limit,
    )
    run_and_write(
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
    run_and_write(
        Console(),
        lambda progress: run_visual_benchmark(config, progress=progress),
        show=print_visual_report,
        markdown_of=visual_markdown,
        out=out,
        markdown=markdown,
    )


@bench_app.command("memory")
def memory(  # noqa: PLR0917 - one parameter per command-line option
    data: Path | None = typer.Option(
        None,
        "--data",
        exists=True,
        dir_okay=False,
        help="A REALTALK (or LoCoMo) JSON chat file: its sessions, turns and questions.",
    ),
    timelines: Path | None = typer.Option(
        None,
        "--timelines",
        exists=True,
        help="Fact timelines instead (a folder with dev/ and heldout/ halves of YAML "
        "cases, e.g. tests/data/memory_timelines): latest truth, stale injections, "
        "paraphrase recall and extraction per category.",
    ),
    calibrate: bool = typer.Option(
        False,
        "--calibrate",
        help="With --timelines: also calibrate the dense threshold on the dev half.",
    ),
    calibrate_with: list[Path] = typer.Option(
        [],
        "--calibrate-with",
        exists=True,
        dir_okay=False,
        help="With --calibrate: a REALTALK-format chat whose questions and evidence "
        "turns join the dev half's labelled pairs (repeat for more; keep apart the "
        "chats the figures are reported on).",
    ),
    show_heldout_misses: bool = typer.Option(
        False,
        "--show-heldout-misses",
        help="With --timelines: also list the heldout half's misses (only the dev "
        "half's by default: what is read of the heldout half is no longer held out).",
    ),
    no_redaction: bool = typer.Option(
        False,
        "--no-redaction",
        help="With --timelines: the redaction gate off (names the user gives are kept).",
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
    """Long-term memory: recall vs raw turns, extraction cost, search latency; or, with
    --timelines, whether memory stays true as facts change."""
    import sys  # noqa: PLC0415

    if (data is None) == (timelines is None):
        Console().print("give --data FILE or --timelines DIR (one of them)", style="red")
        raise typer.Exit(2)
    if timelines is not None:
        _memory_timelines(
            timelines,
            embedder,
            calibrate=calibrate,
            calibrate_with=calibrate_with,
            show_heldout_misses=show_heldout_misses,
            redaction=not no_redaction,
            out=out,
            markdown=markdown,
        )
        return
    assert data is not None

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
        sizes=[] if no_latency else (parse_sizes(sizes) or []),
        pg=pg,
        pg_sizes=parse_sizes(pg_sizes) or [],
        pg_url=pg_url,
        queries=queries,
        llm_url=llm_url,
        llm_model=llm_model,
        command=" ".join(["agentctx", *sys.argv[1:]]),
    )
    run_and_write(
        Console(),
        lambda progress: run_memory_benchmark(config, progress=progress),
        show=print_memory_report,
        markdown_of=memory_markdown,
        out=out,
        markdown=markdown,
    )


def _memory_timelines(
    root: Path,
    embedder: str,
    *,
    calibrate: bool,
    calibrate_with: list[Path],
    show_heldout_misses: bool,
    redaction: bool,
    out: Path | None,
    markdown: Path | None,
) -> None:
    import json  # noqa: PLC0415

    from agentctx.bench.memory_facts import run_fact_timelines  # noqa: PLC0415
    from agentctx.bench.memory_facts_report import (  # noqa: PLC0415
        facts_json,
        facts_markdown,
        failures_text,
    )

    console = Console()
    try:
        report = run_fact_timelines(
            root,
            embedder=embedder,
            calibrate_threshold=calibrate,
            calibrate_chats=calibrate_with,
            redaction=redaction,
        )
    except AgentCtxError as exc:
        console.print(str(exc), style="red", markup=False, highlight=False)
        raise typer.Exit(1) from exc
    console.print(facts_markdown(report), markup=False, highlight=False)
    misses = failures_text(report, limit=10, heldout=show_heldout_misses)
    console.print(misses, style="dim", markup=False, highlight=False)
    if out is not None:
        out.write_text(json.dumps(facts_json(report), indent=2, default=str) + "\n")
    if markdown is not None:
        markdown.write_text(facts_markdown(report), encoding="utf-8")


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

    run_and_write(
        Console(),
        run,
        show=print_server_report,
        markdown_of=server_markdown,
        out=out,
        markdown=markdown,
    )
    if not finished[0].passed:
        raise typer.Exit(1)


__all__ = ["bench_app"]
