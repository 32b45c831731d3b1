"""When a session needs a human (seed 003, 8.1.5): the triggers and their thresholds.

In YAML::

    hitl:
      enabled: true
      parse_failure: true
      consecutive_tool_failures: 3
      min_confidence: 0.5
      record_windows: true
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_PARSE_ERROR_TYPES: tuple[str, ...] = (
    "parse_error",
    "reflector_parse_failed",
    "aggregator_parse_failed",
)
"""What an ``error`` event's ``payload.error_type`` (or ``error_code``) says when the
agent could not parse a model's output: ``parse_error`` is agentctx's convention, the
other two are seed 003's names for its reflector and aggregator."""


class HitlConfig(BaseModel):
    """The human-in-the-loop triggers. Each can be switched off on its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(
        default=True,
        description="Evaluate the triggers after every turn (a turn-end job). Off: no "
        "session is marked by the engine; evaluate() and resolve() still work.",
    )
    parse_failure: bool = Field(
        default=True,
        description="An error event whose payload error_type (or error_code) is one of "
        "parse_error_types marks the session.",
    )
    parse_error_types: tuple[str, ...] = Field(
        default=DEFAULT_PARSE_ERROR_TYPES,
        description="The error types that count as parse failures.",
    )
    consecutive_tool_failures: int = Field(
        default=3,
        ge=0,
        description="This many failed results of one tool in a row (no success of that "
        "tool between them) mark the session; 0 switches the trigger off.",
    )
    min_confidence: float | None = Field(
        default=0.5,
        ge=0,
        le=1,
        description="An event whose payload or metadata reports a confidence below this "
        "marks the session; None switches the trigger off.",
    )
    record_windows: bool = Field(
        default=True,
        description="Keep the last context window built for each turn (one upsert per "
        "build), so a reproduction package can show what the model was sent.",
    )
