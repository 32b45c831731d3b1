"""``semantic``'s recent core: how many recent messages a window always keeps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import pytest

from agentctx import ContextEngine
from agentctx.context.config import ContextConfig
from agentctx.context.semantic import split_core
from agentctx.context.units import units_of

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("budget", "min_recent", "kept"),
    [
        (1000, None, 1),
        (1999, None, 1),
        (2000, None, 2),
        (4000, None, 3),
        (8000, None, 3),
        (1000, 3, 3),  # a value that was set is kept as set
        (8000, 5, 5),
    ],
)
def test_a_small_window_guarantees_one_recent_message_per_thousand_tokens(
    engine: ContextEngine, budget: int, min_recent: int | None, kept: int
) -> None:
    session = engine.create_session(user_id="u1", agent_id="helper")
    for i in range(8):
        role = "user" if i % 2 == 0 else "assistant"
        session.add_message(role, f"message {i}", ts=T0 + timedelta(minutes=i))
    units = units_of(list(session.events()))
    config = ContextConfig.model_validate(
        {"semantic": {} if min_recent is None else {"min_recent": min_recent}}
    )
    build = SimpleNamespace(request=SimpleNamespace(config=config, budget=budget))
    core, rest = split_core(units, cast(Any, build))
    assert len(core) == kept
    assert core[-1] is units[-1]  # the newest message always
    assert len(core) + len(rest) == len(units)


def test_merged_overrides_keep_track_of_what_was_chosen() -> None:
    base = ContextConfig.model_validate({"strategy": "adaptive"})
    plain = base.merged({"strategy": "semantic"})
    chosen = base.merged({"semantic": {"min_recent": 3}})
    assert plain.strategy == "semantic" and plain.semantic.min_recent == 3
    assert "min_recent" not in plain.semantic.model_fields_set  # still the default
    assert "min_recent" in chosen.semantic.model_fields_set
    assert chosen.merged({"strategy": "full"}).semantic.model_fields_set == {"min_recent"}
