"""``agentctx bench recall | agentloop | context | agentstep``: the context window benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from agentctx.cli.bench_common import bench_app, parse_budgets, parse_sizes, run_and_write
from agentctx.errors import AgentCtxError


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
        "budgets": parse_budgets(budget),
        "agentctx": agentctx,
        "baselines": baselines,
        "strategy": strategy,
        "redaction": redaction,
        "memory": memory,
    }
    if limit_questions is not None:
        overrides["limit_questions"] = limit_questions
    config = RecallConfig.quick(**overrides) if quick else RecallConfig.model_validate(overrides)
    run_and_write(
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
        "budgets": parse_budgets(budget),
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
    run_and_write(
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
        sizes=parse_sizes(sizes) or [1_000, 10_000, 100_000],
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


@bench_app.command("agentstep")
def agentstep(  # noqa: PLR0917 - one parameter per command-line option
    turns: int = typer.Option(200, "--turns", min=1, help="Turns of the tool-using session."),
    budget: int = typer.Option(8000, "--budget", min=500, help="Token budget of each model call."),
    seed: int = typer.Option(
        0, "--seed", help="Seed of the session (the same seed, the same one)."
    ),
    compaction: bool = typer.Option(
        True, "--compaction/--no-compaction", help="Also measure agentctx with compaction on."
    ),
    peers: bool = typer.Option(
        True,
        "--peers/--no-peers",
        help="Also measure the OpenAI Agents SDK's SQLiteSession and Google ADK's "
        "DatabaseSessionService, each with a newest-first trim.",
    ),
    workdir: Path | None = typer.Option(
        None, "--workdir", help="Put the temporary databases under this folder."
    ),
    out: Path | None = typer.Option(None, "--out", help="Write the results as JSON to FILE."),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="Also write the tables as Markdown to FILE."
    ),
) -> None:
    """An agent loop's cost per model call: the window, the whole step (appends and
    window) and the turn end, agentctx with its defaults against the SDK and ADK sessions."""
    import sys  # noqa: PLC0415

    from agentctx.bench.agentstep import (  # noqa: PLC0415 - loads the engine lazily
        AgentStepConfig,
        run_agentstep_benchmark,
    )
    from agentctx.bench.agentstep_report import (  # noqa: PLC0415
        agentstep_markdown,
        print_agentstep_report,
    )

    config = AgentStepConfig(
        turns=turns,
        budget=budget,
        seed=seed,
        compaction=compaction,
        peers=peers,
        workdir=workdir,
        command=" ".join(["agentctx", *sys.argv[1:]]),
    )
    run_and_write(
        Console(),
        lambda progress: run_agentstep_benchmark(config, progress=progress),
        show=print_agentstep_report,
        markdown_of=agentstep_markdown,
        out=out,
        markdown=markdown,
    )
