"""The same sessions give the same memories in the same order, whatever the process's
string hashing (``PYTHONHASHSEED``): the order memories are written in decides ties
in search later, so it must not depend on set iteration."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys
from agentctx import ContextEngine

with ContextEngine(
    url="sqlite:///" + sys.argv[1],
    home=sys.argv[2],
    memory={"enabled": True},
    embeddings={"provider": "hashing"},
    jobs="manual",
) as engine:
    session = engine.create_session(user_id="u1")
    session.add_message(
        "user",
        "I'm a nurse and I live in Leeds. I love jazz. I'm allergic to peanuts. "
        "I'm building a project called Apollo. I speak Spanish.",
    )
    engine.memory.extract_session("u1", session.id)
    written = sorted(engine.memory.list("u1", status=None), key=lambda m: m.created_at)
    print("|".join(f"{m.kind.value}:{m.content}" for m in written))
"""


def test_memories_are_written_in_an_order_string_hashing_does_not_change(
    tmp_path: Path,
) -> None:
    orders = set()
    for seed in range(5):
        folder = tmp_path / str(seed)
        folder.mkdir()
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(folder / "m.db"), str(folder / "home")],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        orders.add(done.stdout.strip())
    (order,) = orders
    assert len(order.split("|")) >= 5  # several kinds of memory, each written once
