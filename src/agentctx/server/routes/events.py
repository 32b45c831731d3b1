"""Events and turns: append (one or a batch, idempotent), list, begin and end turns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Header, Query, Response

from agentctx.errors import InvalidInput, TurnError
from agentctx.events import Event, EventDraft, EventType
from agentctx.server.deps import (
    Caller,
    Engine,
    IdPath,
    IdQuery,
    ReadUser,
    WriteUser,
    load_session,
    respond,
)
from agentctx.server.errors import error_responses
from agentctx.server.schemas import MAX_SEQ, EventAppend, EventBatch, TurnBegin, TurnEnd
from agentctx.sessions import Page, Session, TurnInfo

router = APIRouter(
    prefix="/v1/sessions/{session_id}", tags=["events"], responses=error_responses(400)
)
_WRITE = error_responses(409, 412)

IdempotencyKey = Annotated[
    str | None,
    Header(
        max_length=120,
        # An id, as the engine takes it; a batch's events get "<key>:<index>".
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,119}$",
        description="Retrying a request with the same key appends nothing twice: the "
        "stored events are returned.",
    ),
]


def _keyed(drafts: Sequence[EventDraft], key: str | None) -> list[EventDraft]:
    """Give each draft without its own idempotency key one derived from the header's."""
    if key is None:
        return list(drafts)
    keys = [key] if len(drafts) == 1 else [f"{key}:{i}" for i in range(len(drafts))]
    return [
        d if d.idempotency_key is not None else d.model_copy(update={"idempotency_key": k})
        for d, k in zip(drafts, keys, strict=True)
    ]


def _append(
    session: Session, drafts: list[EventDraft], turn_id: str | None, expected: int | None
) -> list[Event]:
    if turn_id is None:
        return session.append(*drafts, expected_last_seq=expected)
    return session.open_turn(turn_id).append(*drafts, expected_last_seq=expected)


@router.post("/events", status_code=201, response_model=Event, responses=_WRITE)
def append_event(
    session_id: IdPath,
    body: EventAppend,
    user_id: WriteUser,
    engine: Engine,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """Append one event (in ``turn_id`` if given, else as a turn of its own)."""
    session = load_session(engine, user_id, session_id)
    drafts = _keyed([body.event], idempotency_key)
    events = _append(session, drafts, body.turn_id, body.expected_last_seq)
    return respond(caller, events[0], 201)


@router.post("/events/batch", status_code=201, response_model=list[Event], responses=_WRITE)
def append_events(
    session_id: IdPath,
    body: EventBatch,
    user_id: WriteUser,
    engine: Engine,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """Append events all or nothing; ``Idempotency-Key: K`` keys them ``K:0``, ``K:1``…"""
    session = load_session(engine, user_id, session_id)
    drafts = _keyed(body.events, idempotency_key)
    events = _append(session, drafts, body.turn_id, body.expected_last_seq)
    return respond(caller, events, 201)


@router.get("/events", response_model=Page[Event])
def list_events(
    session_id: IdPath,
    user_id: ReadUser,
    engine: Engine,
    caller: Caller,
    after_seq: Annotated[
        int | None, Query(ge=0, le=MAX_SEQ - 1, description="Events after this seq.")
    ] = None,
    until_seq: Annotated[int | None, Query(ge=0, le=MAX_SEQ, description="Up to this seq.")] = None,
    turn_id: IdQuery = None,
    type: Annotated[list[EventType] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[
        str | None, Query(max_length=18, pattern=r"^[0-9]{1,18}$", description="next_cursor.")
    ] = None,
) -> Response:
    """A page of events in seq order; ``next_cursor`` continues after the last one."""
    if cursor is not None:
        if not cursor.isdigit():
            raise InvalidInput(f"cursor must be a next_cursor value, got {cursor!r}")
        after_seq = max(after_seq or 0, int(cursor))
    session = load_session(engine, user_id, session_id)
    events = session.events(
        start_seq=(after_seq + 1) if after_seq is not None else None,
        end_seq=until_seq,
        turn_id=turn_id,
        types=type,
        limit=limit + 1,
    )
    more = len(events) > limit
    items = events[:limit]
    page = Page[Event](items=items, next_cursor=str(items[-1].seq) if more and items else None)
    return respond(caller, page)


@router.post("/turns", status_code=201, response_model=TurnInfo, responses=_WRITE)
def begin_turn(
    session_id: IdPath, body: TurnBegin, user_id: WriteUser, engine: Engine, caller: Caller
) -> Response:
    """Begin a turn; append events with its ``turn_id``, then end it."""
    session = load_session(engine, user_id, session_id)
    turn = session.begin_turn(request_id=body.request_id, author=body.author)
    info = session.turn_info(turn.turn_id)
    return respond(caller, info, 201)


@router.post("/turns/{turn_id}/end", response_model=TurnInfo, responses=_WRITE)
def end_turn(
    session_id: IdPath,
    turn_id: IdPath,
    body: TurnEnd,
    user_id: WriteUser,
    engine: Engine,
    caller: Caller,
) -> Response:
    """End a turn (queues its turn-end work: compaction, summaries, memory extraction)."""
    session = load_session(engine, user_id, session_id)
    info = session.turn_info(turn_id)
    if info.status == "open":
        session.open_turn(turn_id).end(body.status)
    elif info.status != body.status:  # a retried end with the same status is a no-op
        raise TurnError(f"turn {turn_id} has ended ({info.status})")
    return respond(caller, session.turn_info(turn_id))
