"""``adaptive`` (the default): the window an agent loop needs before its next model call.

In order: the system prompt (and the session's own system events); the compacted past
(summaries, and the digest of turns that left the history); the recent history as chat
messages exactly as recorded, whole turns, tool calls followed by their results; then
what varies per call: older events relevant to the query, memories, the active task and
the pinned instruction.

The budget, by seed 002's shares (system 20%, summary 10%, retrieved 10%, recent 55%,
input 5%), allotted so that what comes first stays put from one call to the next:

* the system prompt may use its share, the retrieved share and what the summaries leave
  of theirs (only what is longer is cut, in its middle);
* the summaries get what they need of the rest of those shares;
* the tail (active task, pinned instruction) has the input share set aside;
* the history gets everything else: at least its share. It slides in steps
  (:mod:`agentctx.context.history`); once turns have left it, ``digest_share`` of its room
  goes to the digest of those turns (:mod:`agentctx.context.digest`);
* what the history leaves goes to the tail, the memories, then older events relevant to
  the query, in that order.
"""

from __future__ import annotations

import time

from agentctx.context import semantic
from agentctx.context.assembly import Assembly
from agentctx.context.config import ContextConfig
from agentctx.context.digest import Digest, digest_of
from agentctx.context.gather import tail_messages
from agentctx.context.history import History, stable_history
from agentctx.context.lines import (
    BLOCK_HEADING,
    least_cost,
    line_limit,
    measure,
    query_terms_of,
    text_terms,
)
from agentctx.context.older import Seen, choose_older, older_candidates, search
from agentctx.context.plan import (
    REPLY_PRIMING,
    Plan,
    fit_summary,
    fit_system,
    fit_tail,
    place_older,
)
from agentctx.context.reader import Recent
from agentctx.context.shorten import fit_history
from agentctx.context.sources import Retrieval
from agentctx.events import Event, EventType


def assemble(build: Assembly) -> Plan:
    """The agent loop's window (see the module docstring), in stages: the stable
    sections, the history and the compacted past, then what varies per call. A query
    about the past (its best match lies before what the history can hold) is answered
    by relevance instead: the window is then filled like ``semantic``'s, by the search
    alone; a query about the work at hand finds its best match in the history."""
    plan = build.new_plan()
    capacity = _stable_sections(build, plan)
    # The user's latest request (an agent loop's query) is about the work at hand: the
    # search waits until the history is placed, while the query's embedding, started as
    # the build began (the retriever's prefetch), runs beside it. Any other query may be
    # about the past, which the search decides first.
    search_first = _asks_anew(build, capacity)
    retrieval = _search(build) if search_first else None
    if retrieval is not None and _about_the_past(build, retrieval, capacity):
        plan = semantic.assemble(build, priors=False, retrieval=retrieval)
        plan.notes.append("the query is about the past: the window is filled by relevance")
        return plan
    history, digest = _place_history(build, plan, capacity)
    if not search_first:
        retrieval = _search(build)
    _varying(build, plan, history, digest, retrieval)
    return plan


def _stable_sections(build: Assembly, plan: Plan) -> int:
    """Fit the system prompt, then the summaries; returns the history's capacity:
    everything else but the tail's share."""
    config, pricer = build.request.config, build.pricer
    split = config.budget_split
    usable = build.request.budget - REPLY_PRIMING
    stable_area = int((split["system"] + split["summary"] + split["retrieved"]) * usable)
    summaries_floor = min(pricer.cost_all(plan.summary), int(split["summary"] * usable))
    plan.allocated["system"] = min(pricer.cost_all(plan.system), stable_area - summaries_floor)
    fit_system(plan, pricer, plan.allocated["system"])
    system_tokens = pricer.cost_all(plan.system)
    plan.allocated["summary"] = max(0, stable_area - system_tokens)
    fit_summary(plan, pricer, plan.allocated["summary"])
    summary_tokens = pricer.cost_all(plan.summary)
    has_tail = _pins_always(config) or (
        build.sources.task is not None
        and (config.sections.active_task or config.sections.pinned_instruction)
    )
    tail_share = int(split["input"] * usable) if has_tail else 0
    return max(0, usable - system_tokens - summary_tokens - tail_share)


def _place_history(build: Assembly, plan: Plan, capacity: int) -> tuple[History, Digest]:
    """The history within ``capacity`` and, once turns have left it, their digest in the
    compacted past; what was read and not shown is reported as left out."""
    config = build.request.config
    started = time.perf_counter()
    history, digest = History(), Digest()
    if config.sections.recent:
        history, digest = _history(build, capacity)
    build.time("load_ms", started)
    if digest.message is not None:
        plan.summary.append(digest.message)
        build.digest, build.digest_ids = digest.message, digest.event_ids
        plan.allocated["summary"] += int(config.adaptive.digest_share * capacity)
    plan.recent = fit_history(
        history.turns,
        history.pieces,
        build.pricer,
        capacity - digest.tokens,
        low_water=config.adaptive.low_water,
        compact_share=config.adaptive.digest_share,
        keep_messages=config.adaptive.recent_messages,
        ledger_share=config.adaptive.ledger_share,
    )
    plan.allocated["recent"] = capacity - digest.tokens
    compacted = set(digest.event_ids)
    for unit in history.earlier:
        build.pricer.drop_many([e for e in unit.events if e.event_id not in compacted], "budget")
    return history, digest


def _varying(
    build: Assembly,
    plan: Plan,
    history: History,
    digest: Digest,
    retrieval: Retrieval | None,
) -> None:
    """What varies per call, in the room the history leaves: the tail, then memories,
    then older events relevant to the query (at most the retrieved share: past the
    history, a window holds only what the query is about, and what varies per call is
    not cached)."""
    request, pricer = build.request, build.pricer
    # The pinned instruction names an active task's goal; without one, the user's
    # request is the newest turn's first message, which the history always keeps (the
    # pin is then shown only when sections.pinned_instruction is set to true).
    plan.tail = tail_messages(
        request, build.sources, history.turns, pin=_pins_always(request.config)
    )
    fit_tail(plan, pricer, request.budget - plan.tokens(pricer))
    memories = build.memories_message()
    if memories is not None and pricer.cost(memories) <= request.budget - plan.tokens(pricer):
        plan.memories = memories
    elif memories is not None:
        plan.notes.append("memories left out to fit")
    share = int(request.config.budget_split["retrieved"] * (request.budget - REPLY_PRIMING))
    room = min(request.budget - plan.tokens(pricer), share)
    plan.allocated["retrieved"] = room
    if plan.memories is not None:
        plan.allocated["retrieved"] += pricer.cost(plan.memories)
    if retrieval is not None and room > 0:
        started = time.perf_counter()
        _retrieve(build, plan, history, digest, room, retrieval)
        build.time("retrieve_ms", started)


def _search(build: Assembly) -> Retrieval | None:
    """The search's hits for the query over the whole session (None without a query,
    a retriever, or the retrieved section)."""
    request = build.request
    if not _searches(build):
        return None
    assert request.query is not None and build.retriever is not None  # as _searches says
    started = time.perf_counter()
    found = search(
        request.config, build.reader, build.retriever, request.query, request.budget, None
    )
    build.timings["search_ms"] = round((time.perf_counter() - started) * 1e3, 3)
    return found


def _about_the_past(build: Assembly, retrieval: Retrieval, capacity: int) -> bool:
    """Whether the query is about what happened earlier rather than the work at hand:
    it is not the user's latest request, and its best match lies before the newest events
    that weigh ``capacity`` (what the history can hold at most). An agent loop passes the
    user's request, which is recent (and perhaps not indexed yet)."""
    if not retrieval.hits:
        return False
    recent = _recent(build, capacity)
    reach: list[Event] = []
    weight = 0
    for event in reversed(recent.events):
        weight += build.reader.weight(event)
        if weight > capacity:
            break
        reach.append(event)
    else:
        if recent.complete:
            return False  # the history can hold the whole session
    if _is_latest_request(build, recent):
        return False
    best = max(retrieval.hits, key=lambda hit: hit.score)
    return not reach or best.seq < reach[-1].seq


def _asks_anew(build: Assembly, capacity: int) -> bool:
    """Whether the window searches before it places the history: it searches, and its
    query is not the user's latest request (so it may be about the past)."""
    return _searches(build) and not _is_latest_request(build, _recent(build, capacity))


def _searches(build: Assembly) -> bool:
    """Whether the window searches: it has a query, a retriever and the retrieved
    section."""
    request = build.request
    return bool(request.query and build.retriever is not None and request.config.sections.retrieved)


def _recent(build: Assembly, capacity: int) -> Recent:
    """The newest events the history could hold (read once per build: the reader keeps
    them)."""
    sources = build.sources
    return build.reader.newest(capacity, after_seq=sources.archived_through, hidden=sources.hidden)


def _is_latest_request(build: Assembly, recent: Recent) -> bool:
    """Whether the build's query is the user's latest request (its words are all in it)."""
    request = next((e for e in reversed(recent.events) if e.type is EventType.USER_INPUT), None)
    if request is None:  # one turn longer than the read: its request comes before
        reader = build.reader
        found = reader.load(reader.user_id, reader.session_id, types=[EventType.USER_INPUT], last=1)
        request = found[0] if found else None
    query = build.request.query
    return (
        request is not None
        and query is not None
        and query_terms_of(query) <= text_terms(request.text)
    )


def _history(build: Assembly, capacity: int) -> tuple[History, Digest]:
    """The history within ``capacity``, and, once turns have left it, the digest of them
    in ``digest_share`` of that room (the history then fits the rest). The history slides
    in steps of ``1 - low_water`` of its capacity."""
    settings = build.request.config.adaptive
    keep = settings.recent_messages
    history = stable_history(build, capacity, _step(capacity, settings.low_water), keep=keep)
    if not history.slid or settings.digest_share <= 0:
        return history, Digest()
    room = int(settings.digest_share * capacity)
    rest = capacity - room
    history = stable_history(build, rest, _step(rest, settings.low_water), keep=keep)
    if history.start is None:
        return history, Digest()
    return history, digest_of(build, history.start, room)


def _pins_always(config: ContextConfig) -> bool:
    """Whether the pinned instruction closes every window, not only those with an
    active task: when ``sections.pinned_instruction`` was set to true explicitly."""
    sections = config.sections
    return sections.pinned_instruction and "pinned_instruction" in sections.model_fields_set


def _step(capacity: int, low_water: float) -> int:
    """The weight between two slide points for a history of ``capacity`` tokens."""
    return max(1, int((1 - low_water) * capacity))


def _retrieve(  # noqa: PLR0917 - the window so far and the search's hits
    build: Assembly,
    plan: Plan,
    history: History,
    digest: Digest,
    room: int,
    retrieval: Retrieval,
) -> None:
    """Older events relevant to the query, before what the digest and history show, as
    dated lines in ``room``; the search ranks them on its own (no priors)."""
    request, pricer = build.request, build.pricer
    before = digest.first_seq or history.start
    if before is None or before <= 1:
        return
    sources = build.sources
    found = older_candidates(
        request.config,
        build.reader,
        [unit for unit in history.earlier if unit.last_seq < before],
        Seen(before, sources.hidden, sources.retracted),
        request.query,
        build.retriever,
        request.budget,
        priors=False,
        retrieval=retrieval,
    )
    heading = {"role": "system", "content": BLOCK_HEADING + "\n"}
    terms = query_terms_of(request.query)
    limit = line_limit(pricer)
    for candidate in found.candidates:
        candidate.unit = None  # never shown as messages: the history's start stays put
        candidate.as_messages = False
    chosen, _ = choose_older(
        found.candidates,
        room,
        request.config,
        pricer.cost(heading),
        cost_of=lambda c: measure(pricer, c, terms),
        least_cost_of=lambda c: least_cost(c, limit),
        heading_cost=lambda day: pricer.counter.count(f"## {day}"),
        minimum_score=RELEVANT,
    )
    place_older(plan, pricer, chosen, core_start=None)


RELEVANT = 0.1
"""Older events scoring below this (a tenth of the best hit's relevance) stay out: past
the history the window holds only what the query is about."""
