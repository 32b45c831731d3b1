"""Sessions: append, turns, state compare-and-set, idempotency, TTL and audit."""

from agentctx.sessions.models import (
    DeleteReport,
    Page,
    SessionInfo,
    SweepReport,
    TurnInfo,
    VerifyReport,
)
from agentctx.sessions.session import Session
from agentctx.sessions.turns import Turn, current_turn

__all__ = [
    "DeleteReport",
    "Page",
    "Session",
    "SessionInfo",
    "SweepReport",
    "Turn",
    "TurnInfo",
    "VerifyReport",
    "current_turn",
]
