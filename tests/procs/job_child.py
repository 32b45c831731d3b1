"""A process that takes part in durable-job work and is then killed by its parent.

``python job_child.py MODE URL HOME USER_ID SESSION_ID HOOK`` with MODE:

* ``end-turn``: register turn-end hook HOOK (jobs run only on demand), end one turn of the
  session, print ``ended <turn_id>`` and wait to be killed, the job still pending. If the
  handler ever ran here it would create ``HOME/HOOK.child-ran``.
* ``claim``: register HOOK with a handler that prints ``running <job_id> <attempts>`` and
  then hangs, and run the pending jobs: the parent kills it while it holds the lease.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from agentctx import ContextEngine, Job


def wait_to_be_killed() -> None:
    time.sleep(600)
    raise SystemExit("the parent never killed this process")


def main(argv: list[str]) -> int:
    mode, url, home, user_id, session_id, hook = argv
    # No embedder, as in the parent: only the test's own jobs are queued.
    with ContextEngine(
        url=url, home=home, jobs="manual", embeddings={"provider": "none"}
    ) as engine:
        if mode == "end-turn":

            def never(job: Job) -> None:
                (Path(home) / f"{hook}.child-ran").touch()

            engine.on_turn_end(hook, never)
            session = engine.get_session(session_id, user_id=user_id)
            with session.turn() as turn:
                turn.add_message("user", "summarize this conversation")
                turn.add_message("assistant", "done")
            print(f"ended {turn.turn_id}", flush=True)
            wait_to_be_killed()
        elif mode == "claim":

            def hang(job: Job) -> None:
                print(f"running {job.job_id} {job.attempts}", flush=True)
                wait_to_be_killed()

            engine.on_turn_end(hook, hang)
            engine.jobs.run_pending()
            raise SystemExit("no job was claimed")
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    return 0  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
