"""Turning drafts into storable rows, before any transaction starts.

For each draft: validate it, redact every string it carries, move oversized
content and all image bytes to the blob store (size guard), and estimate its
tokens. The result is an event row that only lacks ``seq``, ``hash`` and (for
events outside a turn) ``turn_id``, which the transaction assigns.

Redaction runs before the size guard, so text offloaded to the blob store is
redacted text: nothing personal reaches any storage. Identifiers (event, call and
request ids, idempotency keys, author, model and tool names) are redacted too, with
stable tokens, so a redacted call id still links a call with its result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentctx import jsonvalue
from agentctx.errors import BlobTooLarge, InvalidEvent, InvalidInput
from agentctx.events import (
    BlobPart,
    EventDraft,
    EventType,
    ImageData,
    ImagePart,
    JsonPart,
    TextPart,
    utc,
    utcnow,
)
from agentctx.ids import check_optional_id, image_id_for, new_id
from agentctx.inputs import check_label, check_number, check_text, text_problem
from agentctx.perception import (
    DedupConfig,
    ImageHashes,
    SessionImages,
    StoredImage,
    duplicate_distance,
    hash_in_background,
)
from agentctx.perception.header import read_header
from agentctx.privacy.redactor import Redacted, Redactor, redact_identifier
from agentctx.storage.blobs import BlobStore, StagedBlob, stage_blob
from agentctx.tokens import estimate_image_tokens, estimate_text_tokens

EVENT_ID_MAX = 64
"""Longest event id (its column's width)."""
IDEMPOTENCY_KEY_MAX = 256
"""Longest idempotency key (its column's width)."""
MAX_DURATION_MS = 365 * 24 * 3600 * 1000.0
"""Longest ``duration_ms``: a year; longer is a unit mistake."""
# What a BlobPart costs in a window before it is restored: its preview plus a short pointer.
_POINTER_TOKENS = 12


@dataclass(slots=True)
class BlobRow:
    """A blob written for an event: its index row and the part that references it."""

    blob_id: str
    size: int
    media_type: str
    part_index: int
    data: bytes = b""  # kept until commit, to re-store a file collected meanwhile
    image_id: str | None = None
    width: int | None = None
    height: int | None = None
    hashes: ImageHashes | None = None
    # Perceptual dedup: the part reuses a stored image (``data`` is empty: the submitted
    # near-duplicate's bytes are not kept) at this Hamming distance.
    dedup_distance: int | None = None


@dataclass(slots=True)
class PreparedEvent:
    """An event ready for the transaction: a row without seq/hash, and its blobs."""

    row: dict[str, Any]
    blobs: list[BlobRow] = field(default_factory=list)  # filled only when content is offloaded
    chosen_id: bool = False  # the caller named the event id (so it may already be stored)
    chosen_ts: bool = False  # the caller gave the timestamp (so a retry must give the same)

    def fingerprint(self) -> bytes:
        """What must match for a retried write to count as the same event."""
        return fingerprint_of(self.row, ts=self.chosen_ts)


def fingerprint_of(row: Any, *, ts: bool = False) -> bytes:
    """The identity of an event, for idempotency checks: everything the caller gives
    (type, role, author, call id, content, payload, metadata with the model and tool
    fields, and with ``ts`` the timestamp), as stored (after redaction and offloading).
    Not the request id: each retry of a request may carry its own.

    An image counts as the bytes that were submitted, not as the stored image a
    near-duplicate was replaced by: a retry compares against whatever image is the
    session's latest by then, so the reference it gets may differ from the first try's.
    """
    parts = [_part_identity(part) for part in row["parts"]]
    meta = {key: value for key, value in (row["meta"] or {}).items() if value not in (None, {})}
    identity = [
        row["type"],
        row["role"],
        row["call_id"],
        row["author"],
        parts,
        row["payload"],
        meta,
    ]
    if ts:
        identity.append(utc(row["ts"]).isoformat())
    return jsonvalue.canonical_json(identity)


def _part_identity(part: dict[str, Any]) -> Any:
    if part.get("kind") != "image":
        return part
    return ["image", part.get("source_blob_id") or part["blob_id"]]


class Redactions:
    """The redactions of one write: a text or an identifier that recurs in it (the
    request id every event of a batch carries, a repeated tool name) is redacted once.

    One per write, with the write's redactor: results depend on the redactor only.

    ``trusted``: identifiers that already passed the gate (the write's request id),
    stored as they are: redacting a redacted value again could change it (a configured
    pattern may match inside a token).
    """

    __slots__ = ("_identifiers", "_texts", "redactor")

    def __init__(self, redactor: Redactor, trusted: Iterable[str] = ()) -> None:
        self.redactor = redactor
        self._texts: dict[str, Redacted] = {}
        self._identifiers: dict[str, Redacted] = {value: Redacted(value) for value in trusted}

    def text(self, value: str) -> Redacted:
        """``redactor.redact_text(value)``, once per distinct value."""
        found = self._texts.get(value)
        if found is None:
            found = self._texts[value] = self.redactor.redact_text(value)
        return found

    def identifier(self, value: str) -> Redacted:
        """``redact_identifier(redactor, value)``, once per distinct value."""
        found = self._identifiers.get(value)
        if found is None:
            found = self._identifiers[value] = redact_identifier(self.redactor, value)
        return found


class Preparer:
    """Validates, redacts, offloads and measures drafts."""

    def __init__(
        self,
        *,
        redactor: Redactor,
        blobs: BlobStore,
        max_inline_bytes: int,
        max_blob_bytes: int,
        preview_chars: int,
        max_image_pixels: int = 40_000_000,
        dedup: DedupConfig | None = None,
        on_new_image: Callable[[str, str, ImagePart, bytes], None] | None = None,
    ) -> None:
        self.redactor = redactor
        self.blobs = blobs
        self.max_inline_bytes = max_inline_bytes
        self.max_blob_bytes = max_blob_bytes
        self.max_image_pixels = max_image_pixels
        self.preview_chars = preview_chars
        self.dedup = dedup or DedupConfig(enabled=False)
        # Told of each image stored anew (not a near-duplicate's reference): user id,
        # session id, the part and its bytes in hand. The engine starts the next
        # window's copy of it (render-ahead).
        self.on_new_image = on_new_image

    def prepare_batch(
        self,
        user_id: str,
        session_id: str,
        drafts: Sequence[EventDraft],
        request_id: str | None,
        redactor: Redactor | None = None,
        *,
        images: SessionImages | None = None,
    ) -> list[PreparedEvent]:
        """The drafts of one write, prepared with one :class:`Redactions` (see
        :meth:`prepare`); the first bad draft raises, and nothing is written.

        ``request_id``: the write's, which the events without one of their own carry;
        it already passed the gate (a turn's was redacted as the turn began) or the
        engine made it, and is stored as it is. A draft's own is redacted."""
        trusted = () if request_id is None else (request_id,)
        redactions = Redactions(redactor or self.redactor, trusted)
        return [
            self.prepare(
                user_id, session_id, draft, request_id, redactions=redactions, images=images
            )
            for draft in drafts
        ]

    def prepare(
        self,
        user_id: str,
        session_id: str,
        draft: EventDraft,
        request_id: str | None,
        redactor: Redactor | None = None,
        *,
        images: SessionImages | None = None,
        redactions: Redactions | None = None,
    ) -> PreparedEvent:
        """One draft → a prepared event (raises InvalidEvent on bad input).

        ``redactor`` replaces the engine's (the session's, with its allow-lists);
        ``redactions``, the write's memo of them (its redactor then is the one used).
        ``images``: the session's latest image, the baseline of perceptual dedup (one
        per write, shared by its drafts); without it images are never deduplicated.
        """
        _validate(draft)
        # Every JSON value is checked (and put in storable form: one walk) before any
        # content is offloaded; redaction then changes only strings.
        # Most events carry neither: an empty object needs no walk.
        payload_in = _checked(draft.payload, "payload") if draft.payload else draft.payload
        extra_in = _checked(draft.meta.extra, "metadata") if draft.meta.extra else draft.meta.extra
        json_data = {
            index: _checked(part.data, f"parts[{index}].data")
            for index, part in enumerate(draft.parts)
            if isinstance(part, JsonPart)
        }
        if redactions is None:
            redactions = Redactions(redactor or self.redactor)
        redactor = redactions.redactor
        found: set[str] = set()
        prepared = PreparedEvent(
            row={}, chosen_id=draft.event_id is not None, chosen_ts=draft.ts is not None
        )
        parts: list[dict[str, Any]] = []
        tokens = 0
        for part in draft.parts:
            index = len(parts)
            if isinstance(part, TextPart):
                clean = redactions.text(part.text)
                found |= clean.entity_types
                text = str(clean.value)
                if (
                    len(text) > self.max_inline_bytes // 4
                    and len(text.encode()) > self.max_inline_bytes
                ):
                    blob = self._offload(
                        text.encode(), "text/plain; charset=utf-8", index, prepared
                    )
                    preview = text[: self.preview_chars]
                    parts.append(_blob_part(blob, "text", preview))
                    tokens += estimate_text_tokens(preview) + _POINTER_TOKENS
                else:
                    parts.append({"kind": "text", "text": text})
                    tokens += estimate_text_tokens(text)
            elif isinstance(part, JsonPart):
                clean = redactor.redact_json(json_data[index])
                found |= clean.entity_types
                encoded = jsonvalue.canonical_json(clean.value)
                if len(encoded) > self.max_inline_bytes:
                    blob = self._offload(encoded, "application/json", index, prepared)
                    preview = encoded[: self.preview_chars].decode(errors="ignore")
                    parts.append(_blob_part(blob, "json", preview))
                    tokens += estimate_text_tokens(preview) + _POINTER_TOKENS
                else:
                    parts.append({"kind": "json", "data": clean.value})
                    tokens += estimate_text_tokens(encoded.decode())
            else:
                image = self._store_image(part, index, prepared, images, (user_id, session_id))
                parts.append(image.model_dump())
                tokens += estimate_image_tokens(image.width, image.height)

        def identifier(value: str | None, max_length: int = 128) -> str | None:
            if value is None:
                return None
            clean = redactions.identifier(value)
            found.update(clean.entity_types)
            token = str(clean.value)
            if len(token) > max_length:
                # A token can be longer than what it replaced (a phone number's is).
                raise InvalidEvent(f"an identifier is longer than {max_length} once redacted")
            return token

        payload = redactor.redact_json(payload_in)
        found |= payload.entity_types
        payload_value: dict[str, Any] = payload.value
        tool_name = draft.payload.get("name")
        if draft.type is EventType.TOOL_CALL and isinstance(tool_name, str):
            # The same token as meta.tool_name: one tool has one name everywhere.
            payload_value = {**payload_value, "name": identifier(tool_name)}
        encoded_payload = jsonvalue.canonical_json(payload_value) if payload_value else b"{}"
        if len(encoded_payload) > self.max_inline_bytes:
            blob = self._offload(encoded_payload, "application/json", -1, prepared)
            parts.append(
                _blob_part(
                    blob, "payload", encoded_payload[: self.preview_chars].decode(errors="ignore")
                )
            )
            payload_value = {}
            tokens += _POINTER_TOKENS
        else:
            tokens += estimate_text_tokens(encoded_payload.decode()) if payload_value else 0

        # By hand, not model_dump(mode="json"): the same dict at a tenth of the cost.
        extra = redactor.redact_json(extra_in)
        found |= extra.entity_types

        meta = {
            "model": identifier(draft.meta.model),
            "tool_name": identifier(draft.meta.tool_name),
            "duration_ms": jsonvalue.storable(draft.meta.duration_ms),
            "status": draft.meta.status,
            "extra": extra.value,
        }

        role = draft.stored_role
        prepared.row = {
            "event_id": identifier(draft.event_id, EVENT_ID_MAX) or new_id(),
            "ts": utc(draft.ts) if draft.ts is not None else utcnow(),
            "type": draft.type.value,
            "role": role.value if role is not None else None,
            "author": identifier(draft.author),
            "user_id": user_id,
            "session_id": session_id,
            "turn_id": None,
            "request_id": identifier(draft.request_id or request_id),
            "call_id": identifier(draft.call_id),
            "idempotency_key": identifier(draft.idempotency_key, IDEMPOTENCY_KEY_MAX),
            "parts": parts,
            "payload": payload_value,
            "meta": meta,
            "redacted": True,
            "redacted_types": sorted(found),
            "token_estimate": tokens,
        }
        return prepared

    def _offload(
        self,
        data: bytes,
        media_type: str,
        index: int,
        prepared: PreparedEvent,
        staged: StagedBlob | None = None,
    ) -> BlobRow:
        """Store ``data`` in the blob store (committing ``staged``, its bytes staged
        already) and record the blob for the event: durable before the event commits."""
        if len(data) > self.max_blob_bytes:
            if staged is not None:
                staged.discard()
            raise BlobTooLarge(
                f"content of {len(data)} bytes exceeds max_blob_bytes={self.max_blob_bytes}"
            )
        blob_id = staged.commit() if staged is not None else self.blobs.put(data)
        blob = BlobRow(
            blob_id=blob_id, size=len(data), media_type=media_type, part_index=index, data=data
        )
        prepared.blobs.append(blob)
        return blob

    def _store_image(
        self,
        part: ImageData,
        index: int,
        prepared: PreparedEvent,
        images: SessionImages | None,
        session: tuple[str, str],
    ) -> ImagePart:
        data = part.data
        if len(data) > self.max_blob_bytes:
            raise BlobTooLarge(
                f"image of {len(data)} bytes exceeds max_blob_bytes={self.max_blob_bytes}"
            )
        try:
            header = read_header(
                data, max_pixels=self.max_image_pixels, where=f"image part {index}"
            )
        except BlobTooLarge:
            raise
        except InvalidInput as exc:
            raise InvalidEvent(str(exc)) from None
        width, height, media_type = header.width, header.height, header.media_type
        hashes = None
        staged = None
        if images is not None and self.dedup.enabled:
            hashes, previous, staged = self._hash_and_stage(data, index, images)
            if previous is not None and previous.blob_id != staged.blob_id:
                try:
                    distance = duplicate_distance(self.dedup, hashes, previous)
                except BaseException:
                    staged.discard()
                    raise
                if distance is not None:
                    staged.discard()  # a near-duplicate stores no bytes of its own
                    return self._reuse(previous, distance, staged.blob_id, index, prepared)
        blob = self._offload(data, media_type, index, prepared, staged)
        blob.image_id = image_id_for(blob.blob_id)
        blob.width, blob.height, blob.hashes = width, height, hashes
        if images is not None:
            images.stored(
                StoredImage(
                    blob_id=blob.blob_id,
                    image_id=blob.image_id,
                    media_type=media_type,
                    width=width,
                    height=height,
                    size=len(data),
                    hashes=hashes,
                )
            )
        stored = ImagePart(
            image_id=blob.image_id,
            blob_id=blob.blob_id,
            media_type=media_type,
            width=width,
            height=height,
            size=len(data),
        )
        if self.on_new_image is not None:
            self.on_new_image(*session, stored, data)
        return stored

    def _hash_and_stage(
        self, data: bytes, index: int, images: SessionImages
    ) -> tuple[ImageHashes, StoredImage | None, StagedBlob]:
        """The image's perceptual hashes, the session's latest image, and the image's
        bytes staged in the blob store (written and fsynced, not yet stored).

        Hashing (a decode: most of an image append's time) runs on a pool thread while
        this one stages the bytes (their sha256, the write, the fsync) and reads the
        latest image, so the append pays for the longer of the two, not their sum. The
        caller commits the staged bytes or, for a near-duplicate, discards them.
        """
        pending = hash_in_background(data)
        try:
            staged = stage_blob(self.blobs, data)
        except BaseException:
            pending.cancel()
            raise
        try:
            previous = images.latest()
            try:
                hashes = pending.result()
            except InvalidInput as exc:
                raise InvalidEvent(f"image part {index} is not a readable image: {exc}") from exc
        except BaseException:
            staged.discard()
            raise
        return hashes, previous, staged

    @staticmethod
    def _reuse(
        previous: StoredImage, distance: int, source: str, index: int, prepared: PreparedEvent
    ) -> ImagePart:
        """A part referencing ``previous`` in place of its near-duplicate."""
        prepared.blobs.append(
            BlobRow(
                blob_id=previous.blob_id,
                size=previous.size,
                media_type=previous.media_type,
                part_index=index,
                image_id=previous.image_id,
                width=previous.width,
                height=previous.height,
                hashes=previous.hashes,
                dedup_distance=distance,
            )
        )
        return ImagePart(
            image_id=previous.image_id,
            blob_id=previous.blob_id,
            media_type=previous.media_type,
            width=previous.width,
            height=previous.height,
            size=previous.size,
            dedup_distance=distance,
            source_blob_id=source,
        )


def _blob_part(blob: BlobRow, original_kind: str, preview: str) -> dict[str, Any]:
    return BlobPart(
        blob_id=blob.blob_id,
        size=blob.size,
        media_type=blob.media_type,
        original_kind=original_kind,
        preview=preview,
    ).model_dump()


def _validate(draft: EventDraft) -> None:
    try:
        check_optional_id("call_id", draft.call_id)
        check_optional_id("request_id", draft.request_id)
        check_optional_id("event_id", draft.event_id, max_length=EVENT_ID_MAX)
        if draft.idempotency_key is not None:
            check_text(draft.idempotency_key, "idempotency_key", max_chars=IDEMPOTENCY_KEY_MAX)
            if not draft.idempotency_key:
                raise InvalidInput("idempotency_key may not be empty")
        check_label(draft.author, "author")
        check_label(draft.meta.model, "model")
        check_label(draft.meta.tool_name, "tool name")
        if draft.meta.duration_ms is not None:
            check_number(draft.meta.duration_ms, "duration_ms", maximum=MAX_DURATION_MS)
    except InvalidInput as exc:
        raise InvalidEvent(str(exc)) from None
    if draft.type in (EventType.TOOL_CALL, EventType.TOOL_RESULT) and not draft.call_id:
        raise InvalidEvent(f"a {draft.type.value} event needs a call_id")
    if draft.type is EventType.TOOL_CALL and not (
        draft.meta.tool_name or draft.payload.get("name")
    ):
        raise InvalidEvent("a tool_call event needs a tool name")
    # JSON values (payload, metadata, JSON parts) are checked by ``Preparer.prepare``,
    # in the same walk that puts them in storable form.
    for index, part in enumerate(draft.parts):
        if isinstance(part, TextPart):
            problem = text_problem(part.text)
            if problem is not None:
                raise InvalidEvent(f"parts[{index}].text: a string {problem}")


def _checked(value: Any, where: str) -> Any:
    """``value`` checked (``InvalidEvent`` naming ``where``) and in its storable form."""
    try:
        return jsonvalue.checked(value, where=where)
    except InvalidInput as exc:
        raise InvalidEvent(str(exc)) from None
