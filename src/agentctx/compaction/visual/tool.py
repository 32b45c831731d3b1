"""``restore_image`` as a tool a model can call, in OpenAI's and Anthropic's formats.

A window shows ``[Visual_Placeholder: img_…]`` for a screenshot visual compaction took
out of an ended turn. A model that needs it back calls this tool; the engine returns
the original image (:func:`handle_restore_image`), which the agent sends in its next
message (a tool result carrying the image), or asks ``build_context`` to show in full
with ``restore_images=[…]``.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from agentctx.tooling import parse_tool_arguments, tool_definition

if TYPE_CHECKING:
    from agentctx.sessions.session import Session

TOOL_NAME = "restore_image"

_DESCRIPTION = (
    "Get back a screenshot that was taken out of the context to save room. "
    "A line like [Visual_Placeholder: img_…] names it; the image is returned in full."
)


def _schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "image_id": {
                "type": "string",
                "description": "The id from the placeholder, e.g. img_3f2a9c0e5d7b41a8c2e9f610.",
            }
        },
        "required": ["image_id"],
        "additionalProperties": False,
    }


def restore_image_tool(format: Literal["openai", "anthropic"] = "openai") -> dict[str, Any]:
    """The JSON definition of the ``restore_image`` tool for a model request.

    ``"openai"``: a Chat Completions ``tools`` entry; ``"anthropic"``: a Messages API
    tool (``{"name", "description", "input_schema"}``).
    """
    return tool_definition(TOOL_NAME, _DESCRIPTION, _schema(), format)


class RestoreImageArgs(BaseModel):
    """The arguments of a ``restore_image`` call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    image_id: StrictStr = Field(min_length=5, pattern=r"^img_[0-9a-f]+$")


@dataclass(frozen=True, slots=True)
class RestoredImage:
    """An image a ``restore_image`` call returned."""

    image_id: str
    data: bytes
    media_type: str
    width: int
    height: int

    def text(self) -> str:
        """The tool result's text that goes with the image."""
        return f"Restored {self.image_id} ({self.width}x{self.height} {self.media_type})."


def parse_restore_image_args(arguments: dict[str, Any] | str) -> RestoreImageArgs:
    """Validate a model's ``restore_image`` arguments (a dict, or JSON text);
    ``InvalidInput`` says what is wrong."""
    return parse_tool_arguments(TOOL_NAME, arguments, RestoreImageArgs)


def handle_restore_image(session: Session, arguments: dict[str, Any] | str) -> RestoredImage:
    """Run a model's ``restore_image`` call for an image of ``session``.

    Bad arguments raise ``InvalidInput``; an image not in this session ``BlobNotFound``;
    one whose bytes cold-storage retention removed ``ImageExpired``.
    """
    args = parse_restore_image_args(arguments)
    data = session.restore_image(args.image_id)
    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
        media_type = Image.MIME.get(image.format or "", "application/octet-stream")
    return RestoredImage(args.image_id, data, media_type, width, height)
