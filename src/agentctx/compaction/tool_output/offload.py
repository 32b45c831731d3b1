"""Offloading tool output behind a pointer, and reading it back (restorable compression).

A tool result over the offload threshold enters the window as a short preview and a
pointer line::

    [tool_output: out_1834_3f2a9c0e5d7b41a8, 12,340 tokens, use read_offloaded(out_1834_…)]

The event itself holds the output, so offloading writes nothing: the id names the event
(``out_<seq>_<first 16 hex digits of its hash>``), and reading it back renders that
event's stored (already redacted) content. Building a window therefore never writes,
and an output is stored once. Content the size guard moved to the blob store when it
was written is named by its blob instead (``out_`` + the first 24 hex digits of the
blob id, or the full blob id), as are outputs offloaded to a blob by earlier versions.
An id is only found in the session it was issued in: another session's id, like an
unknown one or one whose event was rewritten since (a changed hash), raises
``BlobNotFound``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, Select, and_, select

from agentctx.cache.bounded import Lru
from agentctx.compaction.tool_output.compressor import ToolOutputCompressor, ToolOutputConfig
from agentctx.compaction.tool_output.strategies import Counter
from agentctx.context.render import canonical_json, event_text
from agentctx.errors import BlobNotFound, InvalidInput, SessionNotFound
from agentctx.events import BlobPart, Event, EventType, JsonPart, TextPart, utcnow
from agentctx.inputs import MAX_BUDGET, MAX_INT64, check_count, check_optional_count
from agentctx.sessions.audit import AuditRecord
from agentctx.storage import event_reads
from agentctx.storage import repository as repo
from agentctx.storage.blobs import BlobStore
from agentctx.storage.schema import blob_refs

if TYPE_CHECKING:
    from agentctx.engine import ContextEngine
    from agentctx.sessions.session import Session

OFFLOADED_PREFIX = "out_"
EVENT_HASH_DIGITS = 16
"""Hex digits of the event's hash in an event-named id: enough that an id issued for
one event never names another by chance."""

_ID = re.compile(r"^(?:out_([0-9a-f]{24})|([0-9a-f]{64})|out_([1-9][0-9]{0,18})_([0-9a-f]{16}))$")
# A page probes at most this many characters per token asked for: a token spanning
# more is rare enough that a page a little short of max_tokens does no harm.
_CHARS_PER_TOKEN_CAP = 64
_CACHE_SIZE = 2048


def offloaded_id(blob_id: str) -> str:
    """The ``out_…`` id that names the blob ``blob_id`` in a pointer."""
    return OFFLOADED_PREFIX + blob_id[:24]


def event_output_id(event: Event) -> str:
    """The ``out_<seq>_<hash prefix>`` id that names ``event``'s output in a pointer."""
    return f"{OFFLOADED_PREFIX}{event.seq}_{event.hash[:EVENT_HASH_DIGITS]}"


def pointer_line(output_id: str, tokens: int) -> str:
    """``[tool_output: <id>, 12,340 tokens, use read_offloaded(<id>)]``."""
    return f"[tool_output: {output_id}, {tokens:,} tokens, use read_offloaded({output_id})]"


class Offloaded(BaseModel):
    """An offloaded tool output: its id, where it lives, and what the window shows."""

    model_config = ConfigDict(frozen=True)

    id: str
    blob_id: str | None  # the write-time blob holding the output; None: the event does
    original_tokens: int
    preview: str
    pointer: str

    @property
    def text(self) -> str:
        """The preview with the pointer line below it (what enters the window)."""
        return f"{self.preview}\n{self.pointer}" if self.preview else self.pointer


class OffloadedPage(BaseModel):
    """One page of an offloaded output; ``next_offset`` is None on the last page."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    offset: int
    next_offset: int | None
    total_chars: int


@dataclass(frozen=True, slots=True)
class _Original:
    text: str
    blob_id: str | None  # a write-time blob holding exactly ``text``, to name instead


def _engine(session: Session) -> ContextEngine:
    return session._engine


def _check_event(user_id: str, session_id: str, event: Event) -> None:
    if event.user_id != user_id or event.session_id != session_id:
        raise InvalidInput(f"event {event.event_id} is not an event of session {session_id}")


def _content_parts(event: Event) -> list[TextPart | JsonPart | BlobPart]:
    return [
        part
        for part in event.parts
        if isinstance(part, TextPart | JsonPart)
        or (isinstance(part, BlobPart) and part.original_kind != "payload")
    ]


def _original(store: BlobStore, event: Event) -> _Original:
    """The event's full tool output as text: what the window would show uncut.

    Text parts as they are, JSON parts canonically (as the renderer does), offloaded
    parts read back from ``store``; joined by newlines. Images are not text.
    """
    parts = _content_parts(event)
    if len(parts) == 1 and isinstance(parts[0], BlobPart):
        blob_id = parts[0].blob_id
        return _Original(store.get(blob_id).decode("utf-8", errors="replace"), blob_id)
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, JsonPart):
            pieces.append(canonical_json(part.data))
        else:
            pieces.append(store.get(part.blob_id).decode("utf-8", errors="replace"))
    return _Original("\n".join(piece for piece in pieces if piece), None)


def _offloaded(event: Event, original: _Original, preview: str, tokens: int) -> Offloaded:
    blob_id = original.blob_id
    output_id = offloaded_id(blob_id) if blob_id is not None else event_output_id(event)
    return Offloaded(
        id=output_id,
        blob_id=blob_id,
        original_tokens=tokens,
        preview=preview,
        pointer=pointer_line(output_id, tokens),
    )


def offload(
    session: Session,
    event: Event,
    *,
    counter: Counter,
    config: ToolOutputConfig | None = None,
    compressor: ToolOutputCompressor | None = None,
) -> Offloaded:
    """Offload ``event``'s output (whatever its size) and return the preview and pointer.

    The preview is the output shortened to ``preview_tokens`` by the tool's strategy.
    Nothing is written: the stored event holds the output, and ``read_offloaded``
    gives it back.
    """
    _check_event(session.user_id, session.id, event)
    compressor = compressor or ToolOutputCompressor(config)
    original = _original(_engine(session).blobs, event)
    result = compressor.compress(
        event.meta.tool_name,
        original.text,
        counter=counter,
        max_tokens=compressor.config.preview_tokens,
    )
    return _offloaded(event, original, result.text, result.original_tokens)


# Window texts of tool outputs (large: reading and counting them is the cost).
_window_cache: Lru[tuple[str, ...], str] = Lru(_CACHE_SIZE)


def forget_window_texts() -> None:
    """Drop the tool outputs kept as windows show them (after a user's erasure: they
    are kept by content, not by user)."""
    _window_cache.clear()


def compress_tool_result_for_window(
    session: Session,
    event: Event,
    *,
    counter: Counter,
    config: ToolOutputConfig,
    compressor: ToolOutputCompressor | None = None,
) -> str:
    """The text a ``tool_result`` event contributes to a context window.

    The output whole when it is short; shortened by the tool's strategy when over
    ``compress_over_tokens``; a preview and a pointer line when over
    ``offload_over_tokens`` (``Session.read_offloaded`` returns the output from the
    event; nothing is written). With ``config.enabled`` off, the event's
    text as the renderer shows it. The same event, counter and configuration always
    give the same text.
    """
    return window_tool_text(
        _engine(session).blobs,
        session.user_id,
        session.id,
        event,
        counter=counter,
        config=config,
        compressor=compressor,
    )


def window_tool_text(
    blobs: BlobStore,
    user_id: str,
    session_id: str,
    event: Event,
    *,
    counter: Counter,
    config: ToolOutputConfig,
    compressor: ToolOutputCompressor | None = None,
) -> str:
    """:func:`compress_tool_result_for_window` for the window builder, which has the
    session's ids and the engine's blob store at hand (no session handle to load):
    ``event`` must be an event of ``user_id``'s session ``session_id``."""
    if event.type is not EventType.TOOL_RESULT:
        raise InvalidInput(f"event {event.event_id} is a {event.type.value}, not a tool_result")
    _check_event(user_id, session_id, event)
    if not config.enabled:
        return event_text(event)
    parts = _content_parts(event)
    name = getattr(counter, "name", None)
    key: tuple[str, ...] | None = None
    if compressor is None and isinstance(name, str):
        # The same output gives the same text: keyed by its blob, or (inline) by the
        # event's hash, which covers its content. Windows rebuilt turn after turn then
        # do not compress the same outputs again.
        content = (
            parts[0].blob_id
            if len(parts) == 1 and isinstance(parts[0], BlobPart)
            else f"event:{event.hash}"
        )
        key = (content, event.meta.tool_name or "", name, config.model_dump_json())
        cached = _window_cache.get(key)
        if cached is not None:
            return cached
    compressor = compressor or ToolOutputCompressor(config)
    original = _original(blobs, event)
    if not original.text:
        return ""
    result = compressor.compress(event.meta.tool_name, original.text, counter=counter)
    text = result.text
    if result.needs_offload:
        text = _offloaded(event, original, result.text, result.original_tokens).text
    if key is not None:
        _window_cache.put(key, text)
    return text


# Reading back ----------------------------------------------------------------------------


def _find(session: Session, output_id: str) -> str:
    """The original output an ``out_…`` id (or a full blob id) names in this session."""
    engine = _engine(session)
    record = AuditRecord(
        action="offloaded_read",
        user_id=session.user_id,
        session_id=session.id,
        meta={"id": output_id[:80]},
    )
    match = _ID.match(output_id)
    if match is None:
        engine.audit.deny(record, BlobNotFound(output_id))
    seq, digits = match.group(3), match.group(4)
    if seq is not None and int(seq) > MAX_INT64:
        engine.audit.deny(record, BlobNotFound(output_id))
    with engine.db.read() as conn:
        alive = repo.session_exists(conn, session.user_id, session.id, utcnow())
        event, blob_id = _named(conn, session, match.groups()) if alive else (None, None)
    if not alive:
        engine.audit.deny(record, SessionNotFound(session.id))
    if blob_id is not None:
        return engine.blobs.get(blob_id).decode("utf-8", errors="replace")
    # An event-named id names the tool result whose hash it repeats, or nothing.
    if (
        event is None
        or event.type is not EventType.TOOL_RESULT
        or event.hash[:EVENT_HASH_DIGITS] != digits
    ):
        engine.audit.deny(record, BlobNotFound(output_id))
    return _original(_engine(session).blobs, event).text


def _named(
    conn: Connection, session: Session, groups: tuple[str | None, ...]
) -> tuple[Event | None, str | None]:
    """(the event, or the text blob's id) that an id's ``_ID`` groups name."""
    prefix, full, seq, _ = groups
    if seq is not None:
        found = event_reads.select_events(
            conn, session.user_id, session.id, start_seq=int(seq), end_seq=int(seq)
        )
        return (found[0] if found else None), None
    row = conn.execute(_blob_query(session, prefix, full)).first()
    return None, None if row is None else str(row[0])


def _blob_query(session: Session, prefix: str | None, full: str | None) -> Select[tuple[str]]:
    """The session's text blob named by an id's ``prefix`` (24 hex digits) or ``full``
    blob id: write-time blobs of tool outputs, and blob offloads of earlier versions."""
    # Hex ids sort below "g": the range is every blob id starting with the prefix.
    named = (
        blob_refs.c.blob_id == full
        if full is not None
        else and_(blob_refs.c.blob_id >= prefix, blob_refs.c.blob_id < f"{prefix}g")
    )
    return (
        select(blob_refs.c.blob_id)
        .where(
            blob_refs.c.user_id == session.user_id,
            blob_refs.c.session_id == session.id,
            blob_refs.c.image_id.is_(None),  # images are restored as images, not text
            named,
        )
        .order_by(blob_refs.c.blob_id)
        .limit(1)
    )


def _page_end(text: str, offset: int, max_tokens: int, counter: Counter) -> int:
    """Where a page starting at ``offset`` ends: as far as ``max_tokens`` reaches, at a
    line end when one lies in the page's second half, and at least one character on."""
    window = text[offset : offset + max_tokens * _CHARS_PER_TOKEN_CAP]
    if counter.count(window) <= max_tokens:
        return offset + len(window)
    low, high = 0, len(window) - 1  # window[:low] fits; window[:high + 1] does not
    while low < high:
        mid = (low + high + 1) // 2
        if counter.count(window[:mid]) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    line_end = window.rfind("\n", 0, low)
    if line_end >= low // 2:
        low = line_end + 1
    return offset + max(1, low)


def read_offloaded_page(
    session: Session,
    output_id: str,
    *,
    offset: int = 0,
    max_tokens: int | None = None,
    counter: Counter | None = None,
) -> OffloadedPage:
    """A page of the offloaded output ``output_id`` (``out_…``, or a full blob id).

    ``offset`` is in characters; without ``max_tokens`` the page runs to the end,
    with it the page counts at most ``max_tokens`` by ``counter`` (default: the
    engine's) and ends at a line end where it can. Pages chained by ``next_offset``
    join to exactly the original. An id that is unknown, malformed, of an image, or
    of another session raises ``BlobNotFound``.
    """
    if not isinstance(output_id, str):
        raise InvalidInput(f"an offloaded output id is a string, not {type(output_id).__name__}")
    check_count(offset, "offset", maximum=MAX_INT64)
    check_optional_count(max_tokens, "max_tokens", minimum=1, maximum=MAX_BUDGET)
    engine = _engine(session)
    text = _find(session, output_id)
    # An offset at or past the end reads the empty page: the end, however it is reached.
    offset = min(offset, len(text))
    if max_tokens is None:
        end = len(text)
    else:
        end = _page_end(text, offset, max_tokens, counter or engine.token_counter())
    return OffloadedPage(
        id=output_id,
        text=text[offset:end],
        offset=offset,
        next_offset=end if end < len(text) else None,
        total_chars=len(text),
    )
