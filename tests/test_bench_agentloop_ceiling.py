"""The oracle's prefix reuse (``bench.agentloop_ceiling``): it is the best any sequence of
windows allowed by a rule reaches, as the bench scores reuse, and the rules constrain it."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest

from agentctx.bench.agentloop import _keys, naive_window, prefix_reuse
from agentctx.bench.agentloop_ceiling import (
    CeilingRule,
    Layout,
    _options,
    _Session,
    prompt_cuts,
    reuse_ceiling,
    session_ceiling,
)
from agentctx.context.config import ContextConfig
from agentctx.tokens import EstimateCounter, message_tokens

COUNTER = EstimateCounter()
LAYOUT = Layout.of(ContextConfig())
WORDS = [
    "seat",
    "fare",
    "refund",
    "gold",
    "member",
    "baggage",
    "cabin",
    "upgrade",
    "delay",
    "voucher",
]


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def conversation(rng: random.Random, turns: int) -> list[dict[str, Any]]:
    """User turns, each with zero to two tool calls and results, then an answer."""
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": text(rng, rng.randint(3, 40))})
        for step in range(rng.randint(0, 2)):
            call_id = f"c{turn}_{step}"
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "lookup", "arguments": json.dumps({"q": turn})},
                        }
                    ],
                }
            )
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": text(rng, rng.randint(5, 90))}
            )
        messages.append({"role": "assistant", "content": text(rng, rng.randint(3, 30))})
    return messages


def naive_reuse(
    sessions: list[list[dict[str, Any]]], system: str, budget: int
) -> tuple[float, int]:
    """The naive window's average prefix reuse over ``sessions``, as the bench scores it,
    and the calls scored."""
    total, scored = 0.0, 0
    for messages in sessions:
        windows = [
            _keys(COUNTER, naive_window(system, messages[:i], budget, COUNTER))
            for i, m in enumerate(messages)
            if m["role"] == "assistant"
        ]
        total += sum(prefix_reuse(a, b)[0] for a, b in itertools.pairwise(windows))
        scored += len(windows) - 1
    return total / scored, scored


def window_keys(session: _Session, option: Any, call: int, prompt_tokens: int) -> list[Any]:
    """A window the oracle may pick, as the bench keys it: the prompt as cut, the compacted
    past (new whenever the history's start moves), the history's messages."""
    keys: list[tuple[str, int]] = [(f"prompt/{option.prompt}", option.prompt)]
    if option.digest:
        keys.append((f"digest/{option.start}", option.digest))
    keys += [(f"m{i}", session.tokens(i, i + 1)) for i in range(option.start, call)]
    assert option.prompt <= prompt_tokens
    return keys


def brute_force(
    messages: list[dict[str, Any]], prompt_tokens: int, budget: int, rule: CeilingRule
) -> float:
    """The best total reuse over every sequence of allowed windows, scored by the bench."""
    session = _Session(messages, COUNTER)
    cuts = prompt_cuts(prompt_tokens, budget, rule, LAYOUT)
    choices = [_options(session, c, budget, cuts, rule, LAYOUT) for c in session.calls]
    best = 0.0
    for sequence in itertools.product(*choices):
        windows = [
            window_keys(session, option, call, prompt_tokens)
            for option, call in zip(sequence, session.calls, strict=True)
        ]
        total = sum(prefix_reuse(a, b)[0] for a, b in itertools.pairwise(windows))
        best = max(best, total)
    return best


@pytest.mark.parametrize("rule", list(CeilingRule))
def test_the_oracle_finds_the_best_sequence_of_windows(rule: CeilingRule) -> None:
    rng = random.Random(f"ceiling/{rule}")
    checked = 0
    while checked < 5:
        messages = conversation(rng, 3)[:9]
        session = _Session(messages, COUNTER)
        prompt_tokens, budget = rng.choice([60, 120]), rng.choice([240, 320])
        if len(session.calls) < 3:
            continue
        cuts = prompt_cuts(prompt_tokens, budget, rule, LAYOUT)
        if any(len(_options(session, c, budget, cuts, rule, LAYOUT)) > 12 for c in session.calls):
            continue  # keep the brute force small
        value, calls = session_ceiling(session, prompt_tokens, budget, rule, LAYOUT)
        assert value == pytest.approx(brute_force(messages, prompt_tokens, budget, rule))
        assert calls == len(session.calls) - 1
        checked += 1


def test_every_rule_allows_the_windows_of_a_conversation_that_fits() -> None:
    # When everything fits, the naive window (all of it) obeys every rule, so no ceiling
    # is below its reuse (the oracle may do better: a slide can raise the ratio).
    messages = conversation(random.Random(7), 4)
    system = "You are a careful airline agent. " * 5
    shown = sum(message_tokens(COUNTER, m) for m in messages)
    budget = 4 * shown  # everything fits, under every rule
    naive, scored = naive_reuse([messages], system, budget)
    for rule in CeilingRule:
        ceiling = reuse_ceiling([messages], system, budget, COUNTER, rule)
        assert ceiling.calls == scored
        assert ceiling.reuse is not None and ceiling.reuse >= naive - 1e-9


def test_keeping_the_recent_share_costs_reuse_a_whole_prompt_would_keep() -> None:
    # A long prompt in a small budget: the naive window keeps the prompt whole and slides
    # its short history on every call; holding the history at its share forces the prompt
    # to be cut, and every slide then keeps only that cut prompt.
    rng = random.Random(11)
    sessions = [conversation(rng, 8) for _ in range(4)]
    system = "Policy: rebook only within the fare rules; never waive fees. " * 30
    budget = 800
    share_kept = reuse_ceiling(sessions, system, budget, COUNTER, CeilingRule.SHARE_KEPT)
    low_water = reuse_ceiling(sessions, system, budget, COUNTER, CeilingRule.LOW_WATER)
    assert share_kept.reuse is not None and low_water.reuse is not None
    assert share_kept.reuse < low_water.reuse
    naive, _ = naive_reuse(sessions, system, budget)
    assert low_water.reuse >= naive - 1e-9  # the naive window obeys low_water
