"""The active task and the pinned instruction (seed 002).

The active task (goal, steps done, findings, status) lives in the session state under
``"active_task"``, so it is versioned and compare-and-set like any state, and recorded
in the event log as a state delta. The window shows it near the end, and closes with
the pinned instruction: models attend most to the end of their context, and tool
output in the middle would otherwise wash the user's goal out.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentctx.errors import InvalidInput

TASK_STATE_KEY = "active_task"

TaskStatus = Literal["active", "blocked", "done", "abandoned"]


class ActiveTask(BaseModel):
    """What the agent is working on right now."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    goal: str = Field(min_length=1)
    status: TaskStatus = "active"
    steps_done: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()
    next_step: str | None = None


def task_from_state(state: dict[str, Any]) -> ActiveTask | None:
    """The active task kept in ``state``, or None."""
    raw = state.get(TASK_STATE_KEY)
    if raw is None:
        return None
    try:
        return ActiveTask.model_validate(raw)
    except ValidationError as exc:
        raise InvalidInput(f"session state {TASK_STATE_KEY!r} is not a task: {exc}") from exc


def render_task(task: ActiveTask) -> str:
    """The task block shown near the end of the window."""
    lines = [f"[ACTIVE TASK] Goal: {task.goal}", f"Status: {task.status.upper()}"]
    if task.steps_done:
        lines.append("Steps done:")
        lines.extend(f"{i}. {step}" for i, step in enumerate(task.steps_done, 1))
    if task.findings:
        lines.append("Findings:")
        lines.extend(f"- {finding}" for finding in task.findings)
    if task.next_step:
        lines.append(f"Next step: {task.next_step}")
    return "\n".join(lines)


def render_pinned_instruction(goal: str, status: str) -> str:
    """Seed 002's instruction block, repeated at the very end of the window."""
    return (
        "[CRITICAL INSTRUCTION]\n"
        f'User\'s current goal: "{goal}"\n'
        f"Status: {status.upper()}\n"
        "Guide:\n"
        "1. If you have just received tool outputs, briefly analyze them first.\n"
        "2. If the goal is complex, form a concise plan before executing.\n"
        "3. Prioritize answering the user's goal."
    )
