"""Chat completions from any OpenAI-compatible endpoint, through the official ``openai`` SDK.

Works with OpenAI and with self-hosted servers that speak the same
``/v1/chat/completions`` protocol (vLLM, Ollama, llama.cpp server, …); needs
``pip install 'agentctx[openai]'``.

Rate limits (429), server errors (5xx), timeouts and dropped connections are
retried by the SDK with exponential backoff, honouring ``Retry-After``; when the
retries run out the call raises :class:`~agentctx.llm.chat.LLMUnavailable`
(:class:`~agentctx.llm.chat.LLMTimeout` for timeouts). A refused key or an unknown
model is a :class:`~agentctx.errors.ConfigError`.

Structured answers are requested as ``response_format`` ``json_schema`` (strict
when the schema is written for OpenAI's strict mode). Servers differ in what they
accept, so when one refuses that (HTTP 400 naming the response format) the instance
tries the schema without ``strict``, then ``json_object``, then plain prompting with
the schema in the system message, and remembers what worked. In the same way it switches
to ``max_completion_tokens`` or leaves out ``temperature`` when a model refuses
those parameters (OpenAI's reasoning models do).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from agentctx.errors import ConfigError, InvalidInput
from agentctx.llm.chat import (
    DEFAULT_SCHEMA_NAME,
    ChatMessage,
    Completion,
    LLMError,
    LLMRequestRejected,
    LLMTimeout,
    LLMUnavailable,
    Usage,
    UsageLedger,
)
from agentctx.llm.openai_client import openai_client
from agentctx.llm.structured import (
    RawAnswer,
    compile_schema,
    complete_structured,
    schema_instruction,
    strip_reasoning,
)

log = logging.getLogger(__name__)

ResponseFormat = Literal["json_schema", "json_object", "prompt"]
_FORMATS: tuple[ResponseFormat, ...] = ("json_schema", "json_object", "prompt")
_SCHEMA_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FORMAT_REFUSAL = re.compile(
    r"response.?format|json.?schema|json.?object|structured.?output|grammar|guided",
    re.IGNORECASE,
)
_MAX_ADAPTATIONS = 6  # requests (parameter changes) tried for one answer before giving up


def _error_text(exc: Any) -> tuple[str | None, str]:
    """The ``param`` and the message of an SDK status error."""
    body = exc.body
    message = body.get("message") if isinstance(body, Mapping) else None
    return exc.param, str(message if message is not None else exc.message)


def strict_compatible(schema: Any) -> bool:
    """Whether ``schema`` can be sent with ``strict: true``.

    OpenAI's strict mode needs every object to list all its properties as required
    and to forbid additional ones; a schema written that way is sent as strict, any
    other as a plain (guiding) schema.
    """
    if isinstance(schema, list):
        return all(strict_compatible(item) for item in schema)
    if not isinstance(schema, Mapping):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            return False
        if not isinstance(properties, Mapping) or set(schema.get("required", [])) != set(
            properties
        ):
            return False
    return all(strict_compatible(value) for value in schema.values())


class OpenAIChatLLM:
    """An :class:`~agentctx.llm.chat.LLM` on an OpenAI-compatible chat endpoint.

    ``base_url`` defaults to the SDK's (``$OPENAI_BASE_URL``, else OpenAI);
    ``api_key`` to ``$OPENAI_API_KEY`` (a self-hosted endpoint given by ``base_url``
    may need none). ``timeout`` is in seconds per request; ``max_retries`` counts
    the SDK's retries of one request. ``ledger`` receives the usage of every call,
    under ``slot`` and ``model``.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        ledger: UsageLedger | None = None,
        slot: str = "",
    ) -> None:
        if not model or not model.strip():
            raise ConfigError("an OpenAI chat model name is required")
        openai, self._client = openai_client(
            "OpenAI chat models",
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
        )
        self._errors = openai
        self._model = model
        self._base_url = str(self._client.base_url)
        self._ledger = ledger
        self._slot = slot
        self._lock = threading.Lock()
        self._format: ResponseFormat = "json_schema"
        self._strict = True  # send strict schemas as strict (until the server refuses one)
        self._completion_tokens_param = False  # send max_completion_tokens, not max_tokens
        self._send_temperature = True

    def __repr__(self) -> str:
        # Never the key.
        return f"OpenAIChatLLM(model={self._model!r}, base_url={self._base_url!r})"

    @property
    def name(self) -> str:
        """``openai:<model>``."""
        return f"openai:{self._model}"

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def slot(self) -> str:
        """The slot usage is recorded under (``""`` when none was given)."""
        return self._slot

    @property
    def response_format(self) -> ResponseFormat:
        """How structured answers are requested now (lowered when the server refuses one)."""
        return self._format

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = DEFAULT_SCHEMA_NAME,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        """Answer ``messages``; see :meth:`agentctx.llm.chat.LLM.complete`."""
        if isinstance(messages, str | bytes) or not messages:
            raise InvalidInput("messages must be a non-empty list of chat messages")
        if any(not isinstance(message, Mapping) for message in messages):
            raise InvalidInput("each chat message must be a mapping with a role")
        if max_tokens is not None and max_tokens < 1:
            raise InvalidInput(f"max_tokens must be positive, got {max_tokens}")
        if not 0.0 <= temperature <= 2.0:
            raise InvalidInput(f"temperature must be between 0 and 2, got {temperature}")
        if schema is not None:
            if not _SCHEMA_NAME.match(schema_name):
                raise InvalidInput(
                    f"schema_name must be 1-64 of [A-Za-z0-9_-], got {schema_name!r}"
                )
            compile_schema(schema)  # a bad schema is the caller's error, before any request

        spent: list[Usage] = []

        def send(batch: Sequence[ChatMessage], tokens: int | None) -> RawAnswer:
            answer = self._request(
                batch, tokens, temperature=temperature, schema=schema, schema_name=schema_name
            )
            spent.append(answer.usage)
            return answer

        started = time.perf_counter()
        failed = True
        try:
            if schema is None:
                answer = send(messages, max_tokens)
                completion = Completion(
                    text=strip_reasoning(answer.text),
                    usage=answer.usage,
                    model=answer.model,
                    finish_reason=answer.finish_reason,
                )
            else:
                completion = complete_structured(send, messages, schema, max_tokens=max_tokens)
            failed = False
        finally:
            latency_ms = (time.perf_counter() - started) * 1000.0
            if self._ledger is not None:
                self._ledger.record(
                    slot=self._slot,
                    model=self._model,
                    usage=sum(spent, Usage()),
                    failed=failed,
                    attempts=len(spent),
                    latency_ms=latency_ms,
                )
        return replace(completion, latency_ms=latency_ms)

    # One request ----------------------------------------------------------------------

    def _request(
        self,
        messages: Sequence[ChatMessage],
        max_tokens: int | None,
        *,
        temperature: float,
        schema: Mapping[str, Any] | None,
        schema_name: str,
    ) -> RawAnswer:
        e = self._errors
        last: Exception | None = None
        for _ in range(_MAX_ADAPTATIONS):
            fmt = self._format if schema is not None else None
            kwargs = self._arguments(
                messages,
                max_tokens,
                temperature=temperature,
                schema=schema,
                schema_name=schema_name,
                fmt=fmt,
            )
            try:
                response = self._client.chat.completions.create(**kwargs)
            except (e.BadRequestError, e.UnprocessableEntityError) as exc:
                if self._adapt(exc, fmt, kwargs):
                    last = exc
                    continue
                raise LLMRequestRejected(
                    f"the chat endpoint refused the request: {_error_text(exc)[1]}",
                    status=exc.status_code,
                ) from exc
            except e.OpenAIError as exc:
                raise self._failure(exc) from exc
            return self._answer(response, kwargs["messages"])
        raise LLMRequestRejected(f"the chat endpoint refused every variant of the request: {last}")

    def _arguments(
        self,
        messages: Sequence[ChatMessage],
        max_tokens: int | None,
        *,
        temperature: float,
        schema: Mapping[str, Any] | None,
        schema_name: str,
        fmt: ResponseFormat | None,
    ) -> dict[str, Any]:
        batch = [dict(message) for message in messages]
        kwargs: dict[str, Any] = {"model": self._model, "messages": batch}
        if schema is not None and fmt is not None:
            if fmt == "json_schema":
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": schema_name,
                        "schema": dict(schema),
                        "strict": self._strict and strict_compatible(schema),
                    },
                }
            else:
                if fmt == "json_object":
                    kwargs["response_format"] = {"type": "json_object"}
                kwargs["messages"] = _with_instruction(batch, schema_instruction(schema))
        if max_tokens is not None:
            key = "max_completion_tokens" if self._completion_tokens_param else "max_tokens"
            kwargs[key] = max_tokens
        if self._send_temperature:
            kwargs["temperature"] = temperature
        return kwargs

    def _adapt(self, exc: Any, fmt: ResponseFormat | None, sent: Mapping[str, Any]) -> bool:
        """Change what is sent after the server refused a parameter; False if none fits."""
        param, message = _error_text(exc)
        lowered = message.lower()
        with self._lock:
            # "Unsupported parameter: 'max_tokens' ... Use 'max_completion_tokens' instead."
            if "max_tokens" in sent and "max_completion_tokens" in lowered:
                self._completion_tokens_param = True
                return True
            # "Unsupported value: 'temperature' does not support 0.0 with this model."
            if "temperature" in sent and (
                param == "temperature" or ("temperature" in lowered and "support" in lowered)
            ):
                self._send_temperature = False
                return True
            if fmt is not None and fmt != "prompt":
                if param != "response_format" and not _FORMAT_REFUSAL.search(message):
                    return False
                strict = sent.get("response_format", {}).get("json_schema", {}).get("strict")
                if fmt == "json_schema" and strict:
                    # OpenAI's strict mode refuses some keywords (e.g. "Invalid schema for
                    # response_format ...: 'minLength' is not permitted"): try it guiding only.
                    self._strict = False
                    return True
                if self._format == fmt:  # another thread may have lowered it already
                    self._format = _FORMATS[_FORMATS.index(fmt) + 1]
                    log.warning(
                        "%s refused response_format %s (%s); using %s from now on",
                        self._base_url,
                        fmt,
                        message[:200],
                        self._format,
                    )
                return True
        return False

    def _failure(self, exc: Any) -> Exception:
        """The agentctx error for an SDK error the SDK's retries did not cure."""
        e = self._errors
        if isinstance(exc, e.AuthenticationError | e.PermissionDeniedError):
            return ConfigError(f"the chat endpoint refused the API key: {_error_text(exc)[1]}")
        if isinstance(exc, e.NotFoundError):
            return ConfigError(
                f"the chat endpoint {self._base_url} has no model {self._model!r} "
                f"(or the base_url is wrong): {_error_text(exc)[1]}"
            )
        if isinstance(exc, e.APITimeoutError):
            return LLMTimeout(f"the chat endpoint {self._base_url} did not answer in time")
        if isinstance(exc, e.APIConnectionError):
            return LLMUnavailable(f"cannot reach the chat endpoint {self._base_url}: {exc}")
        if isinstance(exc, e.APIStatusError):
            status = int(exc.status_code)
            text = _error_text(exc)[1]
            if status in (413, 414):
                return LLMRequestRejected(
                    f"the chat endpoint refused the request: {text}", status=status
                )
            return LLMUnavailable(
                f"the chat endpoint failed with HTTP {status}: {text}", status=status
            )
        return LLMError(f"chat request failed: {exc}")

    def _answer(self, response: Any, sent: list[dict[str, Any]]) -> RawAnswer:
        choices = getattr(response, "choices", None)
        if not choices:
            raise LLMError(f"the chat endpoint {self._base_url} answered with no choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None) or ""
        if not isinstance(text, str):
            raise LLMError("the chat endpoint answered with content that is not text")
        return RawAnswer(
            text=text,
            finish_reason=getattr(choice, "finish_reason", None),
            usage=_usage(getattr(response, "usage", None), sent, text),
            model=str(getattr(response, "model", None) or self._model),
        )


def _usage(reported: Any, sent: list[dict[str, Any]], text: str) -> Usage:
    """The usage the endpoint reported, or agentctx's estimate when it reported none."""
    prompt = getattr(reported, "prompt_tokens", None)
    completion = getattr(reported, "completion_tokens", None)
    if isinstance(prompt, int) and isinstance(completion, int):
        total = getattr(reported, "total_tokens", None)
        return Usage(prompt, completion, total if isinstance(total, int) else prompt + completion)
    from agentctx.tokens import EstimateCounter, estimate_text_tokens, messages_tokens  # noqa: PLC0415

    prompt = messages_tokens(EstimateCounter(), sent)
    completion = estimate_text_tokens(text)
    return Usage(prompt, completion, prompt + completion, estimated=True)


def _with_instruction(messages: list[dict[str, Any]], instruction: str) -> list[dict[str, Any]]:
    """``messages`` with ``instruction`` added to the leading system message (or as one).

    Added to the first message rather than appended as another system message:
    some chat templates accept a system message only at the start.
    """
    if messages and messages[0].get("role") in ("system", "developer"):
        first = dict(messages[0])
        content = first.get("content")
        if isinstance(content, str):
            first["content"] = f"{content}\n\n{instruction}" if content else instruction
            return [first, *messages[1:]]
        if isinstance(content, list):
            first["content"] = [*content, {"type": "text", "text": instruction}]
            return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]
