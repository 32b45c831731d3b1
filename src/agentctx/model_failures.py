"""Recording in a session's log that a model failed and the offline method stood in
(a compaction or memory job's LLM: ``on_llm_failure``)."""

from __future__ import annotations

import contextlib

from agentctx.errors import SessionNotFound
from agentctx.events import EventDraft, EventType
from agentctx.memory import MEMORY_JOB
from agentctx.sessions.service import SessionService


def record_model_failure(
    service: SessionService, user_id: str, session_id: str, job: str, exc: Exception
) -> None:
    """Append an error event saying that ``job``'s model failed with ``exc``.

    The error event is its own one-event turn. Its turn-end jobs are queued like any
    turn's (they run with the next turn when jobs run inline); one new event is never
    enough to make a summary, topic or fold due again, so a failing model cannot
    start a loop of failing jobs.
    """
    code = getattr(exc, "code", type(exc).__name__)
    # A session deleted meanwhile has nothing to record it in.
    with contextlib.suppress(SessionNotFound):
        service.append(
            user_id,
            session_id,
            [
                EventDraft(
                    type=EventType.ERROR,
                    payload={
                        "source": "memory" if job == MEMORY_JOB else "compaction",
                        "job": job,
                        "error_code": code,
                        "message": f"{job}: the model failed ({code}); offline method used",
                    },
                    author="agentctx",
                )
            ],
            turn_id=None,
            request_id=None,
        )
