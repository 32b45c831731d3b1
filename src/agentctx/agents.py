"""Agents as records, with the per-agent configuration later stages read.

Seed 001 keeps these on its ``experts`` table: ``context_threshold`` (archive when
tokens reach this share of the context limit) and ``min_archive_messages``; seed
002 adds the budget split; seed 004 the strategy.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import bindparam, insert, select, update

from agentctx.context.config import parse_context_config
from agentctx.errors import ConfigError, InvalidInput
from agentctx.events import utcnow
from agentctx.ids import is_valid_id
from agentctx.storage import fastsql
from agentctx.storage.database import Database
from agentctx.storage.schema import agents


class AgentConfig(BaseModel):
    """Per-agent settings. Unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_id: str
    name: str | None = None
    context_limit: int | None = Field(
        default=None,
        gt=0,
        description="The model's context size: topic archiving of this agent's sessions is "
        "due at context_threshold of it (None: the engine's topics.context_limit).",
    )
    context_threshold: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="None: the preset for context_limit (seed 001), else the engine's.",
    )
    min_archive_messages: int | None = Field(
        default=None,
        ge=1,
        description="None: the preset for context_limit (seed 001), else the engine's.",
    )
    strategy: Literal["full", "compressed", "adaptive", "semantic"] | None = Field(
        default=None, description="None: the engine's context.strategy."
    )
    budget_split: dict[str, float] | None = Field(
        default=None, description="None: the engine's context.budget_split."
    )
    system_prompt: str | None = None
    pii_allow_list: tuple[str, ...] = Field(
        default=(),
        description="Values this agent's sessions never redact, e.g. its own support address.",
    )
    context: dict[str, Any] = Field(
        default_factory=dict,
        description="Overrides of the engine's context settings for this agent's windows "
        "(any ContextConfig field, e.g. {'adaptive': {'low_water': 0.5}}).",
    )
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> AgentConfig:
        if not is_valid_id(self.agent_id):
            raise ValueError(f"invalid agent_id {self.agent_id!r}")
        if self.context:
            try:
                parse_context_config(self.context)
            except ConfigError as exc:
                raise ValueError(str(exc)) from exc
        if self.budget_split is not None:
            if any(share < 0 for share in self.budget_split.values()):
                raise ValueError("budget shares must be non-negative")
            total = sum(self.budget_split.values())
            if abs(total - 1.0) > 1e-6:
                raise ValueError(f"budget shares must add up to 1.0, got {total:.4f}")
        return self


def _config_statement() -> Any:
    return select(agents.c.config).where(agents.c.agent_id == bindparam("agent_id"))


def allow_list_of(agent: AgentConfig | None) -> tuple[str, ...]:
    """The values ``agent`` never redacts (none for an agent not registered)."""
    return agent.pii_allow_list if agent is not None else ()


class AgentRegistry:
    """Stores agent configurations; an agent named by a new session is created with defaults."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, agent_id: str) -> AgentConfig | None:
        """The agent's configuration, or None if it was never registered."""
        with self._db.read() as conn:  # read by every window build: compiled once
            rows = fastsql.statement(conn, "agent_config", _config_statement).fetch_values(
                conn, {"agent_id": agent_id}
            )
        if not rows:
            return None
        return AgentConfig.model_validate({**rows[0][0], "agent_id": agent_id})

    def put(self, config: AgentConfig) -> AgentConfig:
        """Create or replace an agent's configuration."""
        now = utcnow()
        data = config.model_dump(mode="json", exclude={"agent_id"})
        with self._db.write() as conn:
            found = conn.execute(
                select(agents.c.agent_id).where(agents.c.agent_id == config.agent_id)
            ).first()
            if found is None:
                conn.execute(
                    insert(agents),
                    [
                        {
                            "agent_id": config.agent_id,
                            "config": data,
                            "created_at": now,
                            "updated_at": now,
                        }
                    ],
                )
            else:
                conn.execute(
                    update(agents)
                    .where(agents.c.agent_id == config.agent_id)
                    .values(config=data, updated_at=now)
                )
        return config

    def ensure(self, agent_id: str) -> AgentConfig:
        """The agent's configuration, registering it with defaults if new."""
        found = self.get(agent_id)
        if found is not None:
            return found
        try:
            config = AgentConfig(agent_id=agent_id)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from exc
        try:
            return self.put(config)
        except Exception as exc:  # a concurrent ensure() may have inserted it first
            again = self.get(agent_id)
            if again is None:
                raise ConfigError(f"cannot register agent {agent_id!r}: {exc}") from exc
            return again

    def list(self) -> list[AgentConfig]:
        """Every registered agent."""
        with self._db.read() as conn:
            rows = conn.execute(
                select(agents.c.agent_id, agents.c.config).order_by(agents.c.agent_id)
            )
            return [
                AgentConfig.model_validate({**row.config, "agent_id": row.agent_id}) for row in rows
            ]
