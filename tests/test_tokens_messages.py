"""Chat-message framing and image tokens, checked against published figures."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from agentctx.errors import InvalidInput
from agentctx.tokens import (
    EstimateCounter,
    TiktokenCounter,
    estimate_image_tokens,
    image_size_from_data_url,
    image_tokens,
    message_tokens,
    messages_tokens,
)

# The example of OpenAI's "How to count tokens with tiktoken" cookbook; the API
# reported 129 prompt tokens for it on cl100k_base models and 124 on gpt-4o.
COOKBOOK = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate "
        "jargon into plain English.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "New synergies will help drive top-line growth.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on opportunities "
        "for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the client "
        "deliverable.",
    },
]


def png_data_url(width: int, height: int) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (30, 120, 200)).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


@pytest.mark.parametrize(("encoding", "published"), [("cl100k_base", 129), ("o200k_base", 124)])
def test_cookbook_example_matches_the_api(encoding: str, published: int) -> None:
    counter = TiktokenCounter(encoding)
    assert messages_tokens(counter, COOKBOOK) == published
    # The estimate gets close on the same framing.
    assert abs(messages_tokens(EstimateCounter(encoding), COOKBOOK) - published) <= 0.06 * published


def test_framing_rules() -> None:
    counter = TiktokenCounter("o200k_base")
    count = counter.count
    user = {"role": "user", "content": "What is the weather in Paris?"}
    assert message_tokens(counter, user) == 3 + count("user") + count(user["content"])
    named = {**user, "name": "kim"}
    assert message_tokens(counter, named) == message_tokens(counter, user) + count("kim") + 1
    assert messages_tokens(counter, [user, named]) == (
        message_tokens(counter, user) + message_tokens(counter, named) + 3
    )
    assert messages_tokens(counter, []) == 3


def test_parts_and_tool_calls() -> None:
    counter = TiktokenCounter("o200k_base")
    count = counter.count
    parts = {
        "role": "user",
        "content": [
            {"type": "text", "text": "Compare these two."},
            {"type": "text", "text": "Which is larger?"},
        ],
    }
    assert message_tokens(counter, parts) == (
        3 + count("user") + count("Compare these two.") + count("Which is larger?")
    )
    arguments = '{"city": "Paris", "unit": "celsius"}'
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": arguments},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "get_time", "arguments": "{}"},
            },
        ],
    }
    expected_calls = 2 * 3 + count("get_weather") + count(arguments) + count("get_time") + 1
    assert message_tokens(counter, call) == 3 + count("assistant") + expected_calls
    result = {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 18}'}
    assert message_tokens(counter, result) == (
        3 + count("tool") + count("call_1") + count('{"temp": 18}')
    )
    refusal = {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]}
    assert message_tokens(counter, refusal) == 3 + count("assistant") + count("I can't.")


def test_image_parts_priced_by_size() -> None:
    counter = TiktokenCounter("o200k_base")
    base = message_tokens(counter, {"role": "user", "content": []})
    url = "https://example.com/screen.png"

    def with_image(detail: str | None, image_url: str = url) -> dict[str, object]:
        spec: dict[str, str] = {"url": image_url}
        if detail:
            spec["detail"] = detail
        return {"role": "user", "content": [{"type": "image_url", "image_url": spec}]}

    sizes = {url: (2048, 4096)}
    assert message_tokens(counter, with_image("high"), image_size=sizes.get) == base + 1105
    assert message_tokens(counter, with_image(None), image_size=sizes.get) == base + 1105
    assert message_tokens(counter, with_image("low"), image_size=sizes.get) == base + 85
    # Unknown size: the most a high-detail image can cost.
    assert message_tokens(counter, with_image("high")) == base + 1445
    assert message_tokens(counter, with_image("low")) == base + 85
    # A data URL is measured from its own header.
    data_url = png_data_url(1024, 1024)
    assert image_size_from_data_url(data_url) == (1024, 1024)
    assert message_tokens(counter, with_image("auto", data_url)) == base + 765
    assert image_size_from_data_url("data:image/png;base64,bm90IGFuIGltYWdl") is None
    assert image_size_from_data_url(url) is None


@pytest.mark.parametrize(
    "message",
    [
        "just a string",
        {"content": "no role"},
        {"role": "user", "content": 42},
        {"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]},
        {"role": "user", "content": [{"type": "text"}]},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"detail": "low"}}]},
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "x", "detail": "max"}}],
        },
        {"role": "assistant", "tool_calls": {"function": {}}},
        {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]},
        {"role": "user", "content": "hi", "metadata": {"a": 1}},
    ],
)
def test_malformed_messages_are_invalid_input(message: object) -> None:
    with pytest.raises(InvalidInput):
        message_tokens(EstimateCounter(), message)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("width", "height", "detail", "expected"),
    [
        (1024, 1024, "high", 765),  # OpenAI's published examples
        (2048, 4096, "high", 1105),
        (4096, 8192, "low", 85),
        (512, 512, "high", 255),
        (1920, 1080, "auto", 1105),
        (100, 100, "high", 255),
    ],
)
def test_openai_image_tokens(width: int, height: int, detail: str, expected: int) -> None:
    assert image_tokens(width, height, "openai", detail) == expected


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        (1000, 1000, 1334),  # Anthropic's published examples: (w * h) / 750
        (1092, 1092, 1590),  # the largest 1:1 image that is not scaled
        (200, 200, 54),
        (951, 1268, 1608),  # the other sizes Anthropic lists as not resized
        (896, 1344, 1606),
        (819, 1456, 1590),
        (784, 1568, 1640),
        (4000, 3000, 1639),  # scaled to 1280 x 960 first
        (3136, 100, 105),  # long edge 1568 after scaling: 1568 x 50
    ],
)
def test_anthropic_image_tokens(width: int, height: int, expected: int) -> None:
    assert image_tokens(width, height, "anthropic") == expected


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        (384, 384, 258),  # Gemini: small images are one 258-token unit
        (200, 300, 258),
        (768, 768, 258),
        (1024, 768, 516),
        (1920, 1080, 258 * 3 * 2),
    ],
)
def test_gemini_image_tokens(width: int, height: int, expected: int) -> None:
    assert image_tokens(width, height, "gemini") == expected


def test_image_arguments() -> None:
    assert estimate_image_tokens(1024, 1024) == image_tokens(1024, 1024) == 765
    assert estimate_image_tokens(0, 10) == 85
    for bad in ((0, 10), (10, -1), (1.5, 10), (True, 10)):
        with pytest.raises(InvalidInput):
            image_tokens(*bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="openai"):
        image_tokens(10, 10, provider="mistral")
    with pytest.raises(InvalidInput, match="low"):
        image_tokens(10, 10, detail="ultra")
