"""Blobs and images: the bytes behind references and ``[Visual_Placeholder: img_…]``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from agentctx.server.deps import Engine, IdPath, ReadUser, load_session
from agentctx.server.errors import error_responses

router = APIRouter(prefix="/v1", tags=["blobs"], responses=error_responses(400))

# Magic numbers of the image formats the engine stores; anything else is served as bytes.
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_media_type(data: bytes) -> str:
    """The media type of stored bytes, from their first bytes."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((t for magic, t in _MAGIC if data.startswith(magic)), "application/octet-stream")


_BINARY: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/octet-stream": {}, "image/png": {}}}
}


def _bytes(data: bytes) -> Response:
    return Response(
        data,
        media_type=sniff_media_type(data),
        headers={"Cache-Control": "private, max-age=3600"},
    )


@router.get("/blobs/{blob_id}", response_class=Response, responses=_BINARY)
def get_blob(blob_id: IdPath, user_id: ReadUser, engine: Engine) -> Response:
    """A blob referenced by one of the user's events (404 otherwise)."""
    return _bytes(engine.get_blob(blob_id, user_id))


@router.get("/images/{image_id}", response_class=Response, responses=_BINARY)
def restore_image(image_id: IdPath, user_id: ReadUser, engine: Engine) -> Response:
    """The original bytes of an image (404 ``image_expired`` once retention removed them)."""
    return _bytes(engine.restore_image(image_id, user_id))


@router.get("/sessions/{session_id}/images/{image_id}", response_class=Response, responses=_BINARY)
def restore_session_image(
    session_id: IdPath, image_id: IdPath, user_id: ReadUser, engine: Engine
) -> Response:
    """An image of this session (another session's image is 404, like an unknown one)."""
    return _bytes(load_session(engine, user_id, session_id).restore_image(image_id))
