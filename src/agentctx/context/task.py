"""The active task and the pinned instruction (seed 002).

The active task (goal, steps done, findings, status) lives in the session state under
``"active_task"``, so it is versioned and compare-and-set like any state, and recorded
in the event log as a state delta. The window shows it near the end, and closes with
the pinned instruction: models attend most to the end of their context, and tool
output in the middle would otherwise wash the user's goal out.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
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


class TaskMethods(ABC):
    """The active-task methods of a session (embedded or remote), kept in its state."""

    @property
    @abstractmethod
    def state(self) -> dict[str, Any]:
        """The session state as last read."""

    @abstractmethod
    def update_state(
        self,
        changes: dict[str, Any],
        *,
        expected_version: int | None = None,
        replace: bool = False,
        turn_id: str | None = None,
    ) -> dict[str, Any]:
        """Compare-and-set the state."""

    @property
    def task(self) -> ActiveTask | None:
        """The active task kept in the session state, if any."""
        return task_from_state(self.state)

    def set_task(
        self,
        goal: str,
        *,
        status: str = "active",
        steps_done: Sequence[str] = (),
        findings: Sequence[str] = (),
        next_step: str | None = None,
    ) -> ActiveTask:
        """Set the active task (goal, status, steps done, findings), compare-and-set."""
        try:
            task = ActiveTask(
                goal=goal,
                status=status,
                steps_done=tuple(steps_done),
                findings=tuple(findings),
                next_step=next_step,
            )
        except ValidationError as exc:
            raise InvalidInput(f"invalid task: {exc}") from exc
        self.update_state({TASK_STATE_KEY: task.model_dump(mode="json")})
        return task

    def update_task(
        self,
        *,
        status: str | None = None,
        step_done: str | None = None,
        finding: str | None = None,
        next_step: str | None = None,
    ) -> ActiveTask:
        """Record progress on the active task (``InvalidInput`` if there is none)."""
        current = self.task
        if current is None:
            raise InvalidInput("the session has no active task: call set_task() first")
        return self.set_task(
            current.goal,
            status=status or current.status,
            steps_done=current.steps_done + ((step_done,) if step_done else ()),
            findings=current.findings + ((finding,) if finding else ()),
            next_step=next_step if next_step is not None else current.next_step,
        )
