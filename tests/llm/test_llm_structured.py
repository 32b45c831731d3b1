"""Finding, repairing and validating the JSON in a model's answer."""

from __future__ import annotations

from typing import Any

import pytest

from agentctx.errors import InvalidInput
from agentctx.llm.openai_chat import strict_compatible
from agentctx.llm.structured import AnswerInvalid, compile_schema, extract_json, strip_reasoning

TOPIC = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "keywords": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["title", "keywords"],
    "additionalProperties": False,
}


def test_plain_json_parses_without_repair() -> None:
    parsed = extract_json(' {"title": "Trip", "keywords": ["tokyo"]} \n', compile_schema(TOPIC))
    assert parsed.data == {"title": "Trip", "keywords": ["tokyo"]}
    assert parsed.repaired is False


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"title": "Trip", "keywords": ["tokyo"]}\n```',
        '```\n{"title": "Trip", "keywords": ["tokyo"]}\n```',
        'Sure! Here it is: {"title": "Trip", "keywords": ["tokyo"]} Hope that helps.',
        '{"title": "Trip", "keywords": ["tokyo",],}',
        'Answer:\n```json\n{\n  "title": "Trip",\n  "keywords": [\n    "tokyo",\n  ],\n}\n```',
        "<think>The user wants {a topic}.</think>\n"
        '```json\n{"title": "Trip", "keywords": ["tokyo"]}```',
        '```json\n{"title": "Trip", "keywords": ["tokyo"]}',  # the closing fence never came
        'See [1] and {"note": 1}; the answer: {"title": "Trip", "keywords": ["tokyo"]}',
    ],
)
def test_common_faults_are_repaired(text: str) -> None:
    parsed = extract_json(text, compile_schema(TOPIC))
    assert parsed.data == {"title": "Trip", "keywords": ["tokyo"]}
    assert parsed.repaired is True


def test_commas_and_brackets_inside_strings_are_left_alone() -> None:
    text = 'Result: {"title": "a, }] b", "keywords": ["x,]", "\\"q\\","],}'
    assert extract_json(text).data == {"title": "a, }] b", "keywords": ["x,]", '"q",']}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("I cannot help with that.", "not JSON"),
        ('{"title": "Trip", "keywords": ["tok', "not JSON"),  # truncated
        ('{"title": NaN, "keywords": []}', "not JSON"),
        ('{"title": "", "keywords": []}', "$.title"),
        ('{"title": "Trip"}', "'keywords' is a required property"),
        ('{"title": "Trip", "keywords": [3]}', "$.keywords[0]"),
        ('{"title": "Trip", "keywords": [], "extra": 1}', "'extra' was unexpected"),
        ('{"title": "a\\u0000b", "keywords": []}', "NUL"),
    ],
)
def test_answers_that_cannot_be_used_say_why(text: str, reason: str) -> None:
    with pytest.raises(AnswerInvalid) as caught:
        extract_json(text, compile_schema(TOPIC))
    assert reason in caught.value.reason


def test_the_reason_comes_from_the_longest_candidate() -> None:
    text = 'Note [1]. {"title": "Trip", "keywords": "tokyo"}'
    with pytest.raises(AnswerInvalid, match=r"\$\.keywords: 'tokyo' is not of type 'array'"):
        extract_json(text, compile_schema(TOPIC))


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "no-such-type"},
        {"properties": {"a": {"minLength": -1}}},
        {"type": "object", "x": {1, 2}},
    ],
)
def test_an_invalid_schema_is_the_callers_error(schema: Any) -> None:
    with pytest.raises(InvalidInput, match="schema"):
        compile_schema(schema)


def test_reasoning_block_is_stripped_only_at_the_start() -> None:
    parsed = extract_json('<think>{"no": 1}</think>{"title": "T", "keywords": []}')
    assert parsed.data == {"title": "T", "keywords": []} and parsed.repaired is False
    assert strip_reasoning("<think>hmm\nok</think>\n\nThe summary.") == "The summary."
    assert strip_reasoning("The <think>x</think> stays") == "The <think>x</think> stays"


def test_strict_mode_is_used_only_for_schemas_written_for_it() -> None:
    assert strict_compatible(TOPIC)
    loose = {**TOPIC, "required": ["title"]}
    assert not strict_compatible(loose)
    nested = {
        "type": "object",
        "properties": {"topics": {"type": "array", "items": {"type": "object", "properties": {}}}},
        "required": ["topics"],
        "additionalProperties": False,
    }
    assert not strict_compatible(nested)  # the inner object does not forbid extra properties
    assert strict_compatible({"type": "array", "items": {"type": "string"}})
