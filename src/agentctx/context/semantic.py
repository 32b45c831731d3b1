"""``semantic``: the window for a question about a long past, filled by relevance.

A small recent core (the current turn and a few messages), then the older events that
matter to the query: hybrid search over the whole session plus each hit's neighbours,
weighed by the priors of :mod:`agentctx.context.relevance` and
:mod:`agentctx.context.informative`, shown as dated lines (or, when they directly precede
the core, as messages). With a query, the evidence outranks summaries and memories: they
take only the room the retrieved lines leave. Without a query, older turns come by
recency, decisions and errors first.
"""

from __future__ import annotations

import time

from agentctx.context.assembly import Assembly
from agentctx.context.gather import tail_messages
from agentctx.context.lines import (
    BLOCK_HEADING,
    estimated_tokens,
    least_cost,
    line_limit,
    measure,
    query_terms_of,
)
from agentctx.context.older import Seen, choose_older, older_candidates
from agentctx.context.pieces import Piece
from agentctx.context.plan import (
    Plan,
    first_seq,
    fit_by_shares,
    fit_summary,
    place_older,
)
from agentctx.context.shorten import fit_turns
from agentctx.context.sources import Retrieval
from agentctx.context.units import Unit, message_count
from agentctx.events import EventType

RECENT_READ_WHEN_SEARCHING = 1 / 3
"""With a query, the part of the recent share read from the newest events.

Beyond the recent core those events compete with the search's hits on recency alone (a
tenth of a hit's weight), and the search covers their span as well, finding the ones
that matter. On the development chats reading the whole share put more unrelated recent
turns in 8k windows (evidence recall 0.938, against 0.946 reading a third) and read
twice as many events.
"""

TOKENS_PER_RECENT = 1000
"""Unless ``min_recent`` is set, the recent core keeps at most one of its messages per
this many tokens of budget (the current turn always)."""


def assemble(build: Assembly, *, priors: bool = True, retrieval: Retrieval | None = None) -> Plan:
    """The relevance-first window (see the module docstring). ``priors``: weigh the
    priors of ``semantic``'s settings (else the search alone ranks); ``retrieval``: the
    hits of a search already made for the query."""
    request, sources, pricer = build.request, build.sources, build.pricer
    config, budget, query = request.config, request.budget, request.query
    searching = query is not None and build.retriever is not None and config.sections.retrieved
    recent_share = config.budget_split.get("recent", 0.0) + config.budget_split.get("input", 0.0)
    started = time.perf_counter()
    recent = build.reader.newest(
        int(budget * recent_share * RECENT_READ_WHEN_SEARCHING) if searching else budget,
        after_seq=sources.archived_through,
        hidden=sources.hidden,
    )
    build.time("load_ms", started)
    units = build.turns(recent)
    last_seq = build.last_seq

    plan = build.new_plan()
    plan.tail = tail_messages(request, sources, units)
    # With a query, the events that answer it outrank summaries of the past: the
    # summaries take only the room retrieval leaves, so compaction never costs a
    # window its evidence (in 1k-token windows for questions, a summary share had
    # cost 0.05-0.06 of evidence recall).
    deferred_summary = (plan.summary, plan.summary_ids) if searching else None
    if deferred_summary is not None:
        plan.summary, plan.summary_ids = [], []

    core, rest = split_core(units, build) if config.sections.recent else ([], units)
    core_pieces = [pricer.piece(atom) for unit in core for atom in unit.atoms]
    input_cost = input_tokens(core, core_pieces)
    memories_message = build.memories_message()
    memory_tokens = pricer.cost(memories_message) if memories_message else 0

    started = time.perf_counter()
    search = older_candidates(
        config,
        build.reader,
        rest,
        Seen(core[0].first_seq if core else last_seq + 1, sources.hidden, sources.retracted),
        query if config.sections.retrieved else None,
        build.retriever if config.sections.retrieved else None,
        budget,
        priors=priors,
        retrieval=retrieval,
    )
    candidates = search.candidates
    build.time("retrieve_ms", started)
    build.timings["search_ms"] = round(build.timings.get("search_ms", 0.0) + search.search_ms, 3)

    demands = {
        "system": pricer.cost_all(plan.system) + pricer.cost_all(plan.tail),
        "summary": pricer.cost_all(plan.summary),
        "retrieved": (0 if searching else memory_tokens)
        + sum(estimated_tokens(c) for c in candidates),
        "recent": sum(p.tokens for p in core_pieces) - input_cost,
        "input": input_cost,
    }
    alloc = fit_by_shares(plan, pricer, config.budget_split, demands)
    plan.recent = fit_turns(core, core_pieces, pricer, alloc["recent"] + alloc["input"])
    room = budget - plan.tokens(pricer)
    # With a query, memories (like summaries) take only the room retrieval leaves:
    # evidence from this session's log outranks what was learned elsewhere.
    deferred_memories = memories_message if searching else None
    if deferred_memories is None and memories_message is not None and memory_tokens <= room:
        plan.memories = memories_message
        room -= memory_tokens
    heading = {"role": "system", "content": BLOCK_HEADING + "\n"}
    terms = query_terms_of(query)
    limit = line_limit(pricer)
    chosen, not_chosen = choose_older(
        candidates,
        room,
        config,
        pricer.cost(heading),
        cost_of=lambda c: measure(pricer, c, terms),
        least_cost_of=lambda c: least_cost(c, limit),
        heading_cost=lambda day: pricer.counter.count(f"## {day}"),
    )
    for candidate in not_chosen:
        pricer.drop(
            candidate.atom, "not_relevant" if candidate.drop_reason == "not_relevant" else "budget"
        )
    place_older(plan, pricer, chosen, core_start=first_seq(plan.recent))
    if deferred_memories is not None and memory_tokens <= budget - plan.tokens(pricer):
        plan.memories = deferred_memories
    if deferred_summary is not None:
        left = budget - plan.tokens(pricer)
        plan.summary, plan.summary_ids = deferred_summary
        fit_summary(plan, pricer, max(0, left))
    return plan


def split_core(units: list[Unit], build: Assembly) -> tuple[list[Unit], list[Unit]]:
    """The recent core (always kept) and the turns older than it.

    By default a small window guarantees fewer messages: at 1,000 tokens three chat
    messages can take a fifth of it. The others still compete for the room (by recency,
    and by relevance when there is a query). A ``min_recent`` that was set is kept as set.
    """
    if not units:
        return [], []
    settings = build.request.config.semantic
    want = settings.min_recent
    if "min_recent" not in settings.model_fields_set:
        want = min(want, max(1, build.request.budget // TOKENS_PER_RECENT))
    return core_of(units, want)


def core_of(units: list[Unit], want: int) -> tuple[list[Unit], list[Unit]]:
    """The newest turns holding at least ``want`` messages (the newest turn always), and
    the turns before them."""
    core = [units[-1]]
    count = message_count(units[-1])
    index = len(units) - 2
    while index >= 0 and count < want:
        core.insert(0, units[index])
        count += message_count(units[index])
        index -= 1
    return core, units[: index + 1]


def input_tokens(core: list[Unit], pieces: list[Piece]) -> int:
    """Tokens of the current input: the newest turn's opening user message."""
    if not core or not pieces:
        return 0
    first = core[-1].atoms[0]
    if first.events[0].type is not EventType.USER_INPUT:
        return 0
    return next((p.tokens for p in pieces if p.atom is first), 0)
