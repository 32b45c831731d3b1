"""The images of one build: how each is shown, what it costs, and what the report says.

A build's :class:`~agentctx.context.pricing.Pricer` renders an image part through
:meth:`WindowImages.show`
(seed 000's zones: placeholders for compacted process frames, low detail for older kept
frames, the image downscaled otherwise), counts an image message through
:meth:`WindowImages.cost` and reports the window's images through
:meth:`WindowImages.report`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentctx.context.config import ContextConfig
from agentctx.context.images import (
    LOW_DETAIL_SIDE,
    RenderedImage,
    RenderedImageCache,
    render_image,
)
from agentctx.context.render import (
    PLACEHOLDER_PATTERN,
    image_reference,
    image_url_part,
    visual_placeholder,
)
from agentctx.context.sources import FrameState, ImageStates
from agentctx.context.window import ImagesReport
from agentctx.errors import AgentCtxError
from agentctx.events import Event, ImagePart
from agentctx.tokens import image_tokens


@dataclass(frozen=True)
class ImageAccess:
    """Where a build's images come from: their bytes, the frame states visual compaction
    recorded, and the cache of downscaled copies shared by an engine's builds."""

    load: Callable[[str, ImagePart], bytes] | None
    states: ImageStates | None
    rendered: RenderedImageCache


class WindowImages:
    """One build's images: the zones they fall in, their renderings and their costs."""

    def __init__(
        self, access: ImageAccess, config: ContextConfig, user_id: str, session_id: str
    ) -> None:
        self.access = access
        self.config = config
        self.user_id = user_id
        self.session_id = session_id
        self._costs: dict[str, int] = {}  # data URL -> tokens
        self._url_images: dict[str, str] = {}  # data URL -> image id
        self._states: Mapping[tuple[str, int], FrameState] | None = None  # on first image
        self._full_turns: frozenset[str | None] = frozenset()
        self._restored = frozenset(config.restore_images)

    def cost(self, url: str) -> int:
        """The tokens of an image this build rendered as ``url`` (0 for any other)."""
        return self._costs.get(url, 0)

    def show(self, event: Event, index: int, part: ImagePart) -> dict[str, Any]:
        """An image as the window shows it (seed 000's zones).

        Compact zone (ended, compacted turns): a process frame is a placeholder, unless
        restored for this window; kept frames (anchor, result, error, pinned) of turns
        older than the last ``history_full_turns`` go at ``history_image_detail``. Active
        zone and everything else: the image, downscaled to ``image_max_width``. With
        ``images="placeholder"``, a text reference.
        """
        state = self._state(event.event_id, index)
        restored = part.image_id in self._restored
        if state is not None and state.is_compressed and not restored:
            return {"type": "text", "text": visual_placeholder(part.image_id)}
        if self.config.images == "inline":
            low = (
                state is not None
                and not restored
                and self.config.history_image_detail == "low"
                and state.turn_id not in self._full_turns
            )
            box = (LOW_DETAIL_SIDE, LOW_DETAIL_SIDE) if low else (self.config.image_max_width, None)
            # A compacted frame shown again may have expired since a copy was made (cold
            # storage keeps only the bytes of frames a window shows): its bytes decide.
            recheck = state is not None and state.is_compressed
            rendered = self._rendered(part, *box, recheck=recheck)
            if rendered is not None:
                detail = "low" if low else "auto"
                self._costs[rendered.url] = image_tokens(
                    rendered.width,
                    rendered.height,
                    provider=self.config.image_provider,
                    detail=detail,
                )
                self._url_images[rendered.url] = part.image_id
                return image_url_part(rendered.url, detail)
        return {"type": "text", "text": image_reference(part)}

    def _state(self, event_id: str, index: int) -> FrameState | None:
        if self._states is None:
            source = self.access.states
            self._states = source(self.user_id, self.session_id) if source is not None else {}
            # The newest compacted turns keep their kept frames at full detail.
            last_seq: dict[str | None, int] = {}
            for state in self._states.values():
                last_seq[state.turn_id] = max(last_seq.get(state.turn_id, 0), state.seq or 0)
            newest = sorted(last_seq, key=last_seq.__getitem__, reverse=True)
            self._full_turns = frozenset(newest[: self.config.history_full_turns])
        return self._states.get((event_id, index))

    def _rendered(
        self, part: ImagePart, max_width: int | None, max_height: int | None, *, recheck: bool
    ) -> RenderedImage | None:
        """The copy of ``part`` for this box: cached (rendered ahead, or by an earlier
        build) or rendered now; None when its bytes are gone or unreadable (the window
        then sends a text reference). ``recheck``: read the bytes even when a copy is
        cached, so that an image whose bytes expired is not shown from the cache."""
        loader = self.access.load
        if loader is None:
            return None
        cache = self.access.rendered
        try:
            data = loader(self.user_id, part) if recheck else None
            rendered = cache.get(part.blob_id, max_width, max_height)
            if rendered is None:
                if data is None:
                    data = loader(self.user_id, part)
                rendered = render_image(data, part, max_width, max_height)
                cache.put(part.blob_id, max_width, max_height, rendered)
        except (AgentCtxError, OSError, ValueError):
            return None  # bytes gone (expired) or unreadable: a text reference
        return rendered

    def placeholder(self, url: str) -> dict[str, Any]:
        """The text part that stands for an image this build rendered as ``url`` when the
        window has no room for it: its visual placeholder (``restore_image`` gives it
        back)."""
        image_id = self._url_images.get(url)
        text = visual_placeholder(image_id) if image_id is not None else "[image omitted]"
        return {"type": "text", "text": text}

    def report(self, messages: Sequence[dict[str, Any]]) -> ImagesReport:
        """Which images ``messages`` send, at which detail, and which are placeholders."""
        inline: list[str] = []
        low: list[str] = []
        placeholders: list[str] = []
        tokens = 0
        for message in messages:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for part in content:
                if part.get("type") == "image_url":
                    url = part["image_url"]["url"]
                    image_id = self._url_images.get(url)
                    if image_id is not None:
                        inline.append(image_id)
                        if part["image_url"].get("detail") == "low":
                            low.append(image_id)
                    tokens += self._costs.get(url, 0)
                elif part.get("type") == "text":
                    placeholders.extend(PLACEHOLDER_PATTERN.findall(part.get("text", "")))
        return ImagesReport(
            inline=tuple(inline),
            low_detail=tuple(low),
            placeholders=tuple(placeholders),
            image_tokens=tokens,
        )
