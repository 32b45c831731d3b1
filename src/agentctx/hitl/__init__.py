"""Human in the loop (seed 003, 8.1.5): triggers that mark a session as needing a human,
the flags an operator lists and resolves, and minimal reproduction packages."""

from __future__ import annotations

from agentctx.hitl.config import HitlConfig
from agentctx.hitl.repro import RecordedWindow, ReproPackage, scrub_secrets
from agentctx.hitl.service import (
    HITL_JOB,
    HitlFlag,
    HitlService,
    install_hitl,
)
from agentctx.hitl.triggers import Finding, TriggerState, scan
from agentctx.hitl.turn_condition import TurnMayNeedHuman, turn_may_need_human

__all__ = [
    "HITL_JOB",
    "Finding",
    "HitlConfig",
    "HitlFlag",
    "HitlService",
    "RecordedWindow",
    "ReproPackage",
    "TriggerState",
    "TurnMayNeedHuman",
    "install_hitl",
    "scan",
    "scrub_secrets",
    "turn_may_need_human",
]
