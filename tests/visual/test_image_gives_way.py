"""A screenshot the window has no room for gives way to its visual placeholder: the
agent's turn (its request, the call, the result's text) stays, and the model can name
the image to restore it, instead of the turn being dropped."""

from __future__ import annotations

import pytest
from visual_screens import desktop, encode

from agentctx import ContextEngine
from agentctx.context.render import PLACEHOLDER_PATTERN


def _texts(messages: list[dict]) -> str:  # type: ignore[type-arg]
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(p.get("text", "") for p in content if p.get("type") == "text")
        for call in m.get("tool_calls") or ():
            out.append(call["function"]["name"] + call["function"]["arguments"])
    return "\n".join(out)


@pytest.mark.parametrize("budget", [400, 600, 900])
def test_a_screenshot_without_room_becomes_its_placeholder(
    quick_engine: ContextEngine, budget: int
) -> None:
    session = quick_engine.create_session("u1", "desk")
    with session.turn() as turn:
        turn.add_message("user", "Open the settings window and tell me the version.")
        call = turn.add_tool_call("computer", {"action": "screenshot"}, call_id="s1")
        (image,) = turn.add_tool_result(
            call.call_id, "screen captured", images=[encode(desktop(3))]
        ).images
        window = session.build_context(query="settings version", budget=budget)
    assert window.tokens <= budget
    text = _texts(window.messages)
    assert "Open the settings window" in text  # the request
    assert "computer" in text  # the call
    inline = window.report.images.inline
    placeholders = PLACEHOLDER_PATTERN.findall(text)
    # The screenshot is sent, or named so it can be restored: never silently gone.
    assert image.image_id in inline or placeholders == [image.image_id]
    if budget < 500:  # a 768-px screenshot costs 425 tokens: no room for it
        assert placeholders == [image.image_id]
        assert window.report.images.placeholders == (image.image_id,)
        assert quick_engine.restore_image(image.image_id, user_id="u1")  # restorable
        assert "screen captured" in text  # the result's text was not cut for nothing
        # The one shortening the report lists is the image's, on the result's event.
        (shortened,) = window.report.truncated
        assert shortened.tokens_after < shortened.tokens_before
