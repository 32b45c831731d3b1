"""Tools the engine executes for a model: definitions in each provider's format, and
arguments validated with a message the model can act on.

A tool is described once (name, description, JSON schema) and rendered as an OpenAI
Chat Completions ``tools`` entry or an Anthropic Messages API tool; its arguments
arrive as a dict or as JSON text (OpenAI sends text) and are validated by a pydantic
model, so a bad call raises ``InvalidInput`` naming each wrong field.
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from agentctx.errors import InvalidInput

ToolFormat = Literal["openai", "anthropic"]
Args = TypeVar("Args", bound=BaseModel)


def tool_definition(
    name: str, description: str, schema: dict[str, Any], format: ToolFormat | str = "openai"
) -> dict[str, Any]:
    """A tool definition: ``"openai"`` gives ``{"type": "function", "function": …}``,
    ``"anthropic"`` gives ``{"name", "description", "input_schema"}``."""
    if format == "openai":
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema},
        }
    if format == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    raise InvalidInput(f"unknown tool format {format!r}; accepted: 'openai', 'anthropic'")


def parse_tool_arguments(name: str, arguments: dict[str, Any] | str, model: type[Args]) -> Args:
    """A model's arguments for tool ``name`` (a dict, or JSON text), validated by ``model``."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{name} arguments are not JSON: {exc}") from exc
    if not isinstance(arguments, dict):
        raise InvalidInput(f"{name} arguments must be an object, not {type(arguments).__name__}")
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
            for err in exc.errors()
        )
        raise InvalidInput(f"invalid {name} arguments: {problems}") from exc
