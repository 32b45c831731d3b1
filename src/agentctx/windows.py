"""The engine's windows: each agent's context settings, the build, and the record of the
window a turn sent to its model (``ContextEngine.build_context`` is the way in).

The engine wires one :class:`Windows` over the window builder; it takes the narrow
services it needs (the agents' configurations, the redactors of their allow-lists, where
a turn's window is recorded), not the engine.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentctx.agents import AgentConfig, AgentRegistry, allow_list_of
from agentctx.compaction.topics.config import ArchiveThresholds, TopicArchiveConfig
from agentctx.context.builder import ContextBuilder
from agentctx.context.config import ContextConfig
from agentctx.context.request import check_window_request
from agentctx.context.sources import LogHead
from agentctx.context.window import ContextReport, ContextWindow
from agentctx.privacy.redactor import Redactor
from agentctx.sessions.models import SessionInfo
from agentctx.sessions.redaction import ScopedRedactors
from agentctx.sessions.turns import current_turn


class WindowRecorder(Protocol):
    """Where the window a turn sent is kept (``engine.hitl``: the turn's repro package)."""

    def record_window(
        self,
        user_id: str,
        session_id: str,
        turn_id: str | None,
        *,
        query: str | None,
        budget: int,
        strategy: str,
        messages: list[dict[str, Any]],
        tokens: int,
        report: ContextReport | dict[str, Any],
        redactor: Redactor | None = None,
    ) -> None:
        """Keep the window just built for ``turn_id``, replacing the turn's earlier one."""
        ...


class Windows:
    """Builds a session's windows with its agent's settings, and records the one a turn
    sent when ``record_windows`` is on."""

    def __init__(
        self,
        builder: ContextBuilder,
        *,
        context: ContextConfig,
        topics: TopicArchiveConfig,
        agents: AgentRegistry,
        redactors: ScopedRedactors,
        recorder: WindowRecorder,
        record_windows: bool,
    ) -> None:
        self.builder = builder
        self._context = context
        self._topics = topics
        self._agents = agents
        self._redactors = redactors
        self._recorder = recorder
        self._record_windows = record_windows

    def config_for(self, agent: AgentConfig | None) -> ContextConfig:
        """The context settings for ``agent``'s windows: the engine's, then the agent's."""
        if agent is None:
            return self._context
        overrides: dict[str, Any] = {}
        if agent.strategy is not None:
            overrides["strategy"] = agent.strategy
        if agent.budget_split is not None:
            overrides["budget_split"] = agent.budget_split
        return self._context.merged({**overrides, **agent.context})

    def archive_thresholds(self, agent_id: str) -> ArchiveThresholds:
        """When topic archiving is due for a session of ``agent_id``: the agent's
        ``context_limit``, ``context_threshold`` and ``min_archive_messages`` (each left
        out: the preset of the agent's context size, else the ``topics`` settings)."""
        agent = self._agents.get(agent_id)
        if agent is None:
            return ArchiveThresholds.for_agent(self._topics)
        return ArchiveThresholds.for_agent(
            self._topics,
            context_limit=agent.context_limit,
            context_threshold=agent.context_threshold,
            min_archive_messages=agent.min_archive_messages,
        )

    def build(
        self,
        info: SessionInfo,
        *,
        query: str | None,
        budget: int,
        strategy: str | None = None,
        budget_split: dict[str, float] | None = None,
        system_prompt: str | None = None,
        config: dict[str, Any] | None = None,
        turn_id: str | None = None,
    ) -> ContextWindow:
        """The window for a session (see ``ContextEngine.build_context``)."""
        check_window_request(
            query=query,
            budget=budget,
            strategy=strategy,
            budget_split=budget_split,
            system_prompt=system_prompt,
            config=config,
            turn_id=turn_id,
        )
        agent = self._agents.get(info.agent_id)
        overrides: dict[str, Any] = dict(config or {})
        if strategy is not None:
            overrides["strategy"] = strategy
        if budget_split is not None:
            overrides["budget_split"] = budget_split
        prompt = (
            system_prompt
            if system_prompt is not None
            else (agent.system_prompt if agent is not None else None)
        )
        # Topic archiving is the turn-end job's, by the agent's context limit (seed 001):
        # building a window (or inspecting one) never writes.
        window = self.builder.build(
            user_id=info.user_id,
            session_id=info.session_id,
            agent_id=info.agent_id,
            state=dict(info.state),
            config=self.config_for(agent).merged(overrides),
            query=query,
            budget=budget,
            system_prompt=prompt,
            head=LogHead(info.last_seq, info.weight_total, info.created_at),
        )
        if turn_id is None:
            turn = current_turn(info.user_id, info.session_id)
            turn_id = turn.turn_id if turn is not None else None
        if turn_id is not None and self._record_windows:
            self._record(info, agent, turn_id, query, budget, window)
        return window

    def _record(  # noqa: PLR0917 - the build's own values
        self,
        info: SessionInfo,
        agent: AgentConfig | None,
        turn_id: str,
        query: str | None,
        budget: int,
        window: ContextWindow,
    ) -> None:
        """Keep ``window`` as the one ``turn_id`` sent, through the session's redactor."""
        self._recorder.record_window(
            info.user_id,
            info.session_id,
            turn_id,
            query=query,
            budget=budget,
            strategy=window.report.strategy,
            messages=window.messages,
            tokens=window.tokens,
            report=window.report,
            redactor=self._redactors.for_session(allow_list_of(agent), info.config),
        )
