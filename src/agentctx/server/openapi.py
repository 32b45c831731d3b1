"""The OpenAPI document, stating what the engine checks in an event.

The event models (``EventDraft`` and its parts) are the library's own, shared by every
face; their JSON schema says what pydantic checks, not what the engine's input boundary
(:mod:`agentctx.inputs`, ``sessions.prepare``) adds: ids and their lengths, no NUL
character in text, JSON that storage holds, one-line labels, base64 image data, the
``kind`` every part names. This module writes those rules into the served document, from
the constants the engine checks with, so clients (and the fuzz test) know them without a
second copy of the models or a second check on the write path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from pydantic.json_schema import models_json_schema

from agentctx.context.config import ContextConfig
from agentctx.ids import ID_PATTERN
from agentctx.inputs import MAX_LABEL
from agentctx.server.schemas import LINE_PATTERN, TEXT_PATTERN
from agentctx.sessions.prepare import EVENT_ID_MAX, IDEMPOTENCY_KEY_MAX, MAX_DURATION_MS

_JSON_VALUE = {"$ref": "#/components/schemas/JsonValue"}
_JSON_OBJECT = {
    "type": "object",
    "additionalProperties": _JSON_VALUE,
    "propertyNames": {"pattern": TEXT_PATTERN},
}
_LABEL = {"type": "string", "maxLength": MAX_LABEL, "pattern": LINE_PATTERN}
_PARTS = ("TextPart", "JsonPart", "ImageData", "ImagePart", "BlobPart")
# Base64 text, or a data URL with base64 content (what OpenAI's and Anthropic's formats use).
_BASE64 = r"^(data:[^,]*,)?(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _refine(components: dict[str, Any]) -> None:
    def props(name: str) -> dict[str, Any]:
        found: dict[str, Any] = components.get(name, {}).get("properties", {})
        return found

    for part in _PARTS:  # a default in Python, the discriminator in JSON
        if part in components:
            components[part]["required"] = sorted({*components[part].get("required", []), "kind"})
    if "text" in props("TextPart"):
        props("TextPart")["text"]["pattern"] = TEXT_PATTERN
    if "data" in props("JsonPart"):
        props("JsonPart")["data"] = dict(_JSON_VALUE)
    if "data" in props("ImageData"):
        props("ImageData")["data"] = {
            "type": "string",
            "pattern": _BASE64,
            "description": "The image's bytes in base64, or a data:image/…;base64 URL.",
        }
    draft = props("EventDraft")
    if draft:
        draft["payload"] = dict(_JSON_OBJECT)
        draft["author"] = _nullable(dict(_LABEL))
        draft["idempotency_key"] = _nullable(
            {
                "type": "string",
                "minLength": 1,
                "maxLength": IDEMPOTENCY_KEY_MAX,
                "pattern": TEXT_PATTERN,
            }
        )
        for name, longest in (("call_id", 128), ("request_id", 128), ("event_id", EVENT_ID_MAX)):
            draft[name] = _nullable({"type": "string", "maxLength": longest, "pattern": ID_PATTERN})
    meta = props("EventMeta")
    if meta:
        meta["extra"] = dict(_JSON_OBJECT)
        for label in ("model", "tool_name"):
            meta[label] = _nullable(dict(_LABEL))
        meta["duration_ms"] = _nullable(
            {"type": "number", "minimum": 0, "maximum": MAX_DURATION_MS}
        )


def _context_overrides(components: dict[str, Any], tokenizers: list[str]) -> None:
    """A window request's ``config`` overrides the context configuration: state its
    fields (each optional), shares by known section, and the server's tokenizers."""
    request = components.get("ContextRequest", {}).get("properties", {})
    if "config" not in request:
        return
    _, top = models_json_schema(
        [(ContextConfig, "validation")], ref_template="#/components/schemas/{model}"
    )
    for name, schema in top.get("$defs", {}).items():
        components.setdefault(name, schema)
    config = components["ContextConfig"]["properties"]
    if "BudgetSplit" in components:
        config["budget_split"] = {"$ref": "#/components/schemas/BudgetSplit"}
    config["tokenizer"] = {"type": "string", "enum": sorted(tokenizers)}
    request["config"] = _nullable({"$ref": "#/components/schemas/ContextConfig"})


def state_input_rules(app: FastAPI, tokenizers: list[str]) -> None:
    """Serve ``app``'s OpenAPI document with the event rules and the context
    configuration written in (built once); ``tokenizers``: those a request may name."""
    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = build()
            components = document.get("components", {}).get("schemas", {})
            _refine(components)
            _context_overrides(components, tokenizers)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
