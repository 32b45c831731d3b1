"""What a window request may ask for: checked before anything is read.

``build_context`` is a public entry point (library, REST, MCP, the integrations):
its query, budget and overrides are checked here so a bad one is an
``InvalidInput`` (or, for configuration, a ``ConfigError``) on every face.
"""

from __future__ import annotations

from agentctx.ids import check_optional_id
from agentctx.inputs import MAX_BUDGET, check_count, check_optional_text
from agentctx.jsonvalue import check_object

MIN_BUDGET = 50
"""Smallest token budget a window is built for."""

MAX_QUERY_CHARS = 20_000
"""Longest query text a window is built for."""

MAX_PROMPT_CHARS = 1_000_000
"""Longest system prompt passed per call."""


def check_window_request(
    *,
    query: object,
    budget: object,
    strategy: object = None,
    budget_split: object = None,
    system_prompt: object = None,
    config: object = None,
    turn_id: object = None,
) -> None:
    """Raise ``InvalidInput`` unless these are a window request agentctx can serve.

    The strategy and the overrides' contents are checked by the context configuration
    (``ConfigError`` naming the field); here only their types and storable values.
    """
    check_optional_text(query, "query", max_chars=MAX_QUERY_CHARS)
    check_count(budget, "budget", minimum=MIN_BUDGET, maximum=MAX_BUDGET)
    check_optional_text(strategy, "strategy", max_chars=64)
    if budget_split is not None:
        check_object(budget_split, where="budget_split")
    check_optional_text(system_prompt, "system_prompt", max_chars=MAX_PROMPT_CHARS)
    if config is not None:
        check_object(config, where="config")
    check_optional_id("turn_id", turn_id)
