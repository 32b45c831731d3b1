"""JSON answers: finding the JSON in a model's text, repairing it, validating it.

Models asked for JSON often wrap it in a Markdown code fence, put a sentence
before or after it, leave a trailing comma, or prefix a ``<think>`` block. The
repairs here undo exactly those faults and nothing more: an answer that still
does not parse, or does not validate against the schema (JSON Schema, through
the ``jsonschema`` library), is asked for once more by :func:`complete_structured`,
with the reason, and then given up with :class:`~agentctx.llm.chat.LLMResponseInvalid`.

:func:`complete_structured` is provider-neutral: a provider passes a function
that sends one request and returns a :class:`RawAnswer`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from agentctx.errors import InvalidInput
from agentctx.jsonvalue import JsonValue, check_json
from agentctx.llm.chat import ChatMessage, Completion, LLMResponseInvalid, Usage

_FENCE = re.compile(r"```[ \t]*(?:json5?|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL | re.IGNORECASE)
_MAX_STARTS = 32  # opening brackets tried when JSON sits inside prose
_MAX_REASON = 600  # characters of a validation message shown to the model

TRUNCATED_PROMPT = (
    "Your previous answer was cut off at the output token limit before the JSON was "
    "complete. Answer again with the complete JSON, shorter: keep every field the "
    "schema requires and shorten the text inside them."
)
INVALID_PROMPT = (
    "Your previous answer was not valid: {reason}\n"
    "Answer again with only the corrected JSON, no other text."
)


class AnswerInvalid(ValueError):
    """An answer's text holds no JSON valid against the schema; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RawAnswer:
    """One answer of the endpoint, as a provider's ``send`` function returns it."""

    text: str
    finish_reason: str | None
    usage: Usage
    model: str


@dataclass(frozen=True, slots=True)
class Parsed:
    """JSON found in an answer, and whether it took a repair to find."""

    data: JsonValue
    repaired: bool


def strip_reasoning(text: str) -> str:
    """``text`` without a leading ``<think>…</think>`` block (reasoning models emit one)."""
    return _THINK.sub("", text, count=1)


def _loads(text: str) -> JsonValue:
    # orjson: strict JSON (no NaN or Infinity) and 64-bit integers, like storage wants.
    return orjson.loads(text)


_CLOSES_NEXT = re.compile(r"[ \t\r\n]*[}\]]")


def _structural(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """(index, char) of each character of ``text[start:]`` outside JSON string literals
    (the quotes themselves excluded): where brackets and commas mean something."""
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        else:
            yield index, char


def _balanced(text: str, start: int) -> str | None:
    """The bracketed JSON value that opens at ``text[start]``, or None if it never closes."""
    closing = {"{": "}", "[": "]"}
    stack = [closing[text[start]]]
    for index, char in _structural(text, start + 1):
        if char in closing:
            stack.append(closing[char])
        elif char in "}]":
            if char != stack.pop():
                return None
            if not stack:
                return text[start : index + 1]
    return None


def _without_trailing_commas(text: str) -> str:
    """``text`` with commas before ``}`` or ``]`` (outside strings) removed."""
    dropped = {
        index
        for index, char in _structural(text)
        if char == "," and _CLOSES_NEXT.match(text, index + 1)
    }
    return "".join(char for index, char in enumerate(text) if index not in dropped)


def _candidates(text: str) -> list[str]:
    """Texts that may hold the JSON, most literal first: fenced blocks, bracketed spans."""
    found = [match.group(1).strip() for match in _FENCE.finditer(text)]
    if "```" in text and not found:  # an opening fence whose closing one was cut off
        found.append(text.split("```", 1)[1].split("\n", 1)[-1].strip())
    for source in [text, *found]:
        tried = end = 0
        for start, char in enumerate(source):
            if char not in "{[" or start < end:
                continue  # inside a span already found: its inner values are not the answer
            tried += 1
            if tried > _MAX_STARTS:
                break
            segment = _balanced(source, start)
            if segment is not None:
                found.append(segment)
                end = start + len(segment)
    return list(dict.fromkeys(found))  # unique, in order


def _repaired(text: str) -> Iterator[tuple[Parsed, int]]:
    """Each JSON value repairs find in ``text``, with the length of the span it came from."""
    for candidate in _candidates(text):
        for attempt in (candidate, _without_trailing_commas(candidate)):
            try:
                yield Parsed(_loads(attempt), repaired=True), len(candidate)
                break
            except orjson.JSONDecodeError:
                continue


def extract_json(text: str, check: Callable[[JsonValue], None] | None = None) -> Parsed:
    """The JSON value in ``text`` (repaired if need be) that passes ``check``.

    Raises :class:`AnswerInvalid` when there is none; when several values parse and
    none passes, the reason is that of the one from the longest span.
    """
    text = strip_reasoning(text).strip().lstrip("\ufeff")
    if not text:
        raise AnswerInvalid("the answer is empty")
    try:
        found: Iterator[tuple[Parsed, int]] = iter([(Parsed(_loads(text), False), len(text))])
        syntax_error = ""
    except orjson.JSONDecodeError as exc:
        found, syntax_error = _repaired(text), str(exc)
    rejected: tuple[int, AnswerInvalid] | None = None
    for parsed, length in found:
        if check is None:
            return parsed
        try:
            check(parsed.data)
        except AnswerInvalid as exc:
            if rejected is None or length > rejected[0]:
                rejected = (length, exc)
            continue
        return parsed
    if rejected is not None:
        raise rejected[1]
    raise AnswerInvalid(f"the answer is not JSON ({syntax_error})")


@functools.lru_cache(maxsize=64)
def _validator(canonical: bytes) -> Any:
    # jsonschema loads lazily: it costs ~0.1 s to import and only schema calls need it.
    from jsonschema import exceptions, validators  # type: ignore[import-untyped, unused-ignore]  # noqa: PLC0415

    schema = orjson.loads(canonical)
    cls = validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError as exc:
        raise InvalidInput(f"the JSON schema is not valid: {exc.message}") from exc
    return cls(schema)


def compile_schema(schema: Mapping[str, Any]) -> Callable[[JsonValue], None]:
    """A checker for ``schema`` that raises :class:`AnswerInvalid` on a value that fails it.

    Raises :class:`~agentctx.errors.InvalidInput` when ``schema`` is not a valid
    JSON Schema. Checkers are cached by the schema's content.
    """
    if not isinstance(schema, Mapping):
        raise InvalidInput(f"a JSON schema must be a mapping, got {type(schema).__name__}")
    try:
        canonical = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError as exc:
        raise InvalidInput(f"the JSON schema is not JSON: {exc}") from exc
    validator = _validator(canonical)

    def check(value: JsonValue) -> None:
        errors = sorted(validator.iter_errors(value), key=lambda error: list(error.path))
        if errors:
            shown = "; ".join(f"{error.json_path}: {error.message}" for error in errors[:3])
            more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
            raise AnswerInvalid(f"the JSON does not match the schema: {shown}{more}"[:_MAX_REASON])
        try:
            check_json(value, where="answer")
        except InvalidInput as exc:
            raise AnswerInvalid(str(exc)) from exc

    return check


def schema_instruction(schema: Mapping[str, Any]) -> str:
    """What to tell a model that cannot be given the schema as a response format."""
    return (
        "Answer with a single JSON value and nothing else (no code fences, no comments), "
        "valid against this JSON schema:\n" + orjson.dumps(schema).decode()
    )


Send = Callable[[Sequence[ChatMessage], int | None], RawAnswer]
"""Sends one chat request (messages, max_tokens) and returns the answer."""


def _judge(answer: RawAnswer, check: Callable[[JsonValue], None]) -> Parsed | AnswerInvalid:
    if answer.finish_reason == "length":
        return AnswerInvalid("the answer was cut off at the output token limit")
    try:
        return extract_json(answer.text, check)
    except AnswerInvalid as exc:
        return exc


def complete_structured(
    send: Send,
    messages: Sequence[ChatMessage],
    schema: Mapping[str, Any],
    *,
    max_tokens: int | None,
) -> Completion:
    """Ask for JSON valid against ``schema``: repair, then answer again once, then give up.

    A truncated answer (``finish_reason == "length"``) is asked for again, shorter,
    with twice the ``max_tokens``; an invalid one is shown to the model with the
    reason. ``latency_ms`` is left for the caller to set.
    """
    check = compile_schema(schema)
    first = send(messages, max_tokens)
    verdict = _judge(first, check)
    if isinstance(verdict, Parsed):
        return _completion(first, verdict, first.usage, attempts=1)
    if first.finish_reason == "length":
        follow_up = [*messages, {"role": "user", "content": TRUNCATED_PROMPT}]
        retry_tokens = max_tokens * 2 if max_tokens is not None else None
    else:
        follow_up = [
            *messages,
            {"role": "assistant", "content": first.text},
            {"role": "user", "content": INVALID_PROMPT.format(reason=verdict.reason)},
        ]
        retry_tokens = max_tokens
    second = send(follow_up, retry_tokens)
    usage = first.usage + second.usage
    verdict = _judge(second, check)
    if isinstance(verdict, Parsed):
        return _completion(second, verdict, usage, attempts=2)
    raise LLMResponseInvalid(verdict.reason, raw=second.text, usage=usage, attempts=2)


def _completion(answer: RawAnswer, parsed: Parsed, usage: Usage, *, attempts: int) -> Completion:
    return Completion(
        text=strip_reasoning(answer.text),
        data=parsed.data,
        usage=usage,
        model=answer.model,
        finish_reason=answer.finish_reason,
        attempts=attempts,
        repaired=parsed.repaired,
    )
