"""Request and response bodies of the REST API that are not engine records already."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema
from typing_extensions import TypeAliasType

from agentctx.context import ContextReport
from agentctx.context.request import MIN_BUDGET
from agentctx.events import EventDraft, EventType
from agentctx.ids import ID_PATTERN as ENGINE_ID
from agentctx.ids import USER_ID_PATTERN
from agentctx.memory import Memory, MemoryKind

Scope = Literal["read", "write", "admin"]
# A key's user: a user id, or "*" for any user of the tenant.
KEY_USER_PATTERN = rf"^(?:\*|{USER_ID_PATTERN[1:-1]})$"
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$"
# Text the engine stores: no NUL character (PostgreSQL cannot hold one); a label (an
# author, a subject) is also a single line.
TEXT_PATTERN = r"^[^\x00]*$"
LINE_PATTERN = r"^[^\x00\r\n]*$"
Keyword = Annotated[str, Field(max_length=256, pattern=TEXT_PATTERN)]
# What the engine accepts as an agent id or a session id it did not make.
ENGINE_ID_PATTERN = ENGINE_ID


class _KeysByPattern:
    """States a dict's key constraint as ``propertyNames`` in the JSON schema (pydantic
    states it as ``patternProperties``, which lets keys that do not match through)."""

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        patterns = out.get("patternProperties") or {}
        if len(patterns) == 1:
            pattern, values = next(iter(patterns.items()))
            del out["patternProperties"]
            out["propertyNames"] = {"pattern": pattern}
            out["additionalProperties"] = values
        return out


# Free-form JSON a request may carry (state, metadata, config overrides, memory data):
# any JSON, within what storage holds: no NUL character in a key or a string, finite
# numbers. Stated in the OpenAPI schema and checked on arrival.
if TYPE_CHECKING:
    JsonObject = dict[str, Any]
else:
    _NoNulText = Annotated[str, Field(pattern=TEXT_PATTERN)]
    # Integers are kept exactly within 64 bits (what storage holds); a larger one is
    # taken as a (float) number, as JSON readers in most languages take it.
    _Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
    _Finite = Annotated[float, Field(allow_inf_nan=False)]
    JsonValue = TypeAliasType(
        "JsonValue",
        Union[  # noqa: UP007 - a recursive alias needs the Union form
            _NoNulText,
            _Int64,
            _Finite,
            bool,
            list["JsonValue"],
            Annotated[dict[_NoNulText, "JsonValue"], _KeysByPattern()],
            None,
        ],
    )
    JsonObject = Annotated[dict[_NoNulText, JsonValue], _KeysByPattern()]


# A sequence number is a 64-bit integer in storage; over JSON, at most the largest
# integer a double holds exactly (2**53 - 1): many clients read numbers as doubles, and
# above it a bound stated in the schema would round to a larger one (2**63 - 1 reads as
# 2**63), letting a client's own check pass a value the server refuses.
MAX_SEQ = 2**53 - 1
# Longer than any session lives, and within what a timestamp holds.
MAX_TTL_SECONDS = 100 * 365 * 86400


class Body(BaseModel):
    """A request body: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


class SessionCreate(Body):
    """``POST /v1/sessions``."""

    agent_id: str = Field(
        default="default", min_length=1, max_length=128, pattern=ENGINE_ID_PATTERN
    )
    session_id: str | None = Field(default=None, pattern=ID_PATTERN)
    state: JsonObject | None = None
    ttl_seconds: float | None = Field(
        default=None,
        ge=1,
        le=MAX_TTL_SECONDS,
        allow_inf_nan=False,
        description="At least a second, at most 100 years.",
    )
    config: JsonObject | None = None
    metadata: JsonObject | None = None


class StateUpdate(Body):
    """``PATCH /v1/sessions/{id}/state``: merged into the state (or replacing it)."""

    changes: JsonObject
    replace: bool = False
    turn_id: str | None = Field(
        default=None,
        max_length=64,
        pattern=ENGINE_ID_PATTERN,
        description="Record the state_delta in this open turn.",
    )


class StateBody(BaseModel):
    """A session's state and the version an ``If-Match`` must name to change it."""

    state: dict[str, Any]
    state_version: int


class EventAppend(Body):
    """``POST /v1/sessions/{id}/events``: one event."""

    event: EventDraft
    turn_id: str | None = Field(default=None, max_length=64, pattern=ENGINE_ID_PATTERN)
    expected_last_seq: int | None = Field(default=None, ge=0, le=MAX_SEQ)


class EventBatch(Body):
    """``POST /v1/sessions/{id}/events/batch``: events appended all or nothing."""

    events: list[EventDraft] = Field(min_length=1, max_length=1000)
    turn_id: str | None = Field(default=None, max_length=64, pattern=ENGINE_ID_PATTERN)
    expected_last_seq: int | None = Field(default=None, ge=0, le=MAX_SEQ)


class TurnBegin(Body):
    """``POST /v1/sessions/{id}/turns``."""

    request_id: str | None = Field(default=None, max_length=128, pattern=ENGINE_ID_PATTERN)
    author: str | None = Field(default=None, max_length=128, pattern=LINE_PATTERN)


class TurnEnd(Body):
    """``POST /v1/sessions/{id}/turns/{turn_id}/end``."""

    status: Literal["ok", "error", "abandoned"] = "ok"


class BudgetSplit(Body):
    """Shares of a window's budget by section (seed 002)."""

    system: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    summary: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    retrieved: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    recent: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    input: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)

    def shares(self) -> dict[str, float]:
        """The shares given."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class ContextRequest(Body):
    """``POST /v1/sessions/{id}/context``: what ``session.build_context`` takes."""

    query: str | None = Field(default=None, max_length=100_000, pattern=TEXT_PATTERN)
    budget: int = Field(default=4000, ge=MIN_BUDGET, le=2_000_000)
    strategy: Literal["full", "compressed", "adaptive", "semantic"] | None = None
    budget_split: BudgetSplit | None = Field(
        default=None,
        description="Shares of the budget by section; with the configured ones for the "
        "sections left out, they must add up to 1.0.",
    )
    system_prompt: str | None = Field(default=None, max_length=1_000_000, pattern=TEXT_PATTERN)
    config: JsonObject | None = None
    restore_images: list[str] = Field(default_factory=list, max_length=100)
    format: Literal["openai", "anthropic"] = "openai"
    turn_id: str | None = Field(
        default=None,
        max_length=64,
        pattern=ENGINE_ID_PATTERN,
        description="The turn the window is built for: kept as that turn's window for "
        "its repro package.",
    )


class ContextBody(BaseModel):
    """A built window: messages in the requested format, tokens and the report."""

    messages: list[dict[str, Any]]
    system: list[dict[str, Any]] | None = Field(
        default=None, description="Anthropic format only: the system blocks."
    )
    tokens: int
    report: ContextReport


class EventTypes(BaseModel):
    """The event types a listing may filter by."""

    types: list[EventType]


class MemoryCreate(Body):
    """``POST /v1/memories``: a memory added by hand (consolidated like extracted ones)."""

    content: str = Field(min_length=1, max_length=4000, pattern=TEXT_PATTERN)
    kind: MemoryKind = MemoryKind.FACT
    subject: str | None = Field(default=None, max_length=256, pattern=LINE_PATTERN)
    data: JsonObject | None = None
    keywords: list[Keyword] = Field(default_factory=list, max_length=50)
    confidence: float = Field(default=0.9, ge=0.0, le=1.0)
    agent_id: str | None = Field(default=None, max_length=128, pattern=ENGINE_ID_PATTERN)
    session_id: str | None = Field(default=None, max_length=128, pattern=ENGINE_ID_PATTERN)


class MemoryPatch(Body):
    """``PATCH /v1/memories/{id}`` (``If-Match`` names the version, for compare-and-set):
    at least one of content, data, keywords, confidence, tainted."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"required": [name], "properties": {name: {"not": {"type": "null"}}}}
                for name in ("content", "data", "keywords", "confidence", "tainted")
            ]
        },
    )

    content: str | None = Field(default=None, min_length=1, max_length=4000, pattern=TEXT_PATTERN)
    data: JsonObject | None = None
    keywords: list[Keyword] | None = Field(default=None, max_length=50)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    tainted: bool | None = None
    reason: str = Field(default="updated", max_length=256, pattern=TEXT_PATTERN)


class MemoryList(BaseModel):
    """A page of memories."""

    items: list[Memory]
    next_offset: int | None = None


class OptOut(Body):
    """``PUT /v1/memory-settings``."""

    declarative_opt_out: bool


def _default_scopes() -> list[Scope]:
    return ["read", "write"]


class KeyCreate(Body):
    """``POST /v1/admin/keys``: a key acts for ``users`` (``"*"``: any user of the
    tenant); an admin key may name none."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"properties": {"users": {"minItems": 1}}, "required": ["users"]},
                {
                    "properties": {"scopes": {"contains": {"const": "admin"}}},
                    "required": ["scopes"],
                },
            ]
        },
    )

    users: list[Annotated[str, Field(pattern=KEY_USER_PATTERN, max_length=128)]] = Field(
        default_factory=list, max_length=1000
    )
    scopes: list[Scope] = Field(default_factory=_default_scopes, min_length=1)
    label: str | None = Field(default=None, max_length=256, pattern=LINE_PATTERN)


class Health(BaseModel):
    """``/healthz`` and ``/readyz``."""

    status: Literal["ok", "unavailable"]
    detail: str | None = None


class Me(BaseModel):
    """``GET /v1/me``: who the caller is and whom it may act for."""

    subject: str
    tenant: str
    users: list[str] = Field(description='The users it acts for ("*": any user).')
    scopes: list[Scope]
    is_admin: bool
