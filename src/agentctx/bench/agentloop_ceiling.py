"""The prefix reuse no window can beat under a layout's rules: an oracle's.

A window that keeps the recent history at its share must drop history from the front as
the conversation grows, and every drop breaks the prefix after whatever sits before the
history. How often, and how much is left before the break, depends on the layout's rules,
not on how clever the window is. This module computes, for a replayed session, the best
average prefix reuse that *any* sequence of windows could reach under a given rule, by
dynamic programming over every choice of where the history starts at each model call and
how far the system prompt is cut. The oracle knows the whole conversation in advance, may
start the history at any message (not only at a turn), cuts the prompt where it likes,
pays nothing for framing, and keeps the four newest messages only when they fit; each of
these favours it, so the figure is an upper bound for a real window under the same rule.

The rules (``CeilingRule``):

* ``share_kept``: the recent history holds at least ``recent_share`` of the budget on
  every call where the session has that much to show (seed 002's shares read strictly);
  nothing else in the window.
* ``low_water``: the history may fall below its share after a slide (down to anything
  that keeps the newest messages), nothing else in the window: the naive window's
  freedom, with whole-step slides.
* ``compacted_past``: as ``low_water``, with the prompt cut to the layout's stable area
  (``stable_share`` of the budget) and, once the history has slid, a compacted past of
  ``digest_share`` of the history's room before it, rewritten at every slide (the default
  layout's digest and ledger, which are what keep the slid turns' arguments).

Reuse is scored as ``agentloop.prefix_reuse`` scores it: message by message from the
start, as a share of the window's tokens, averaged over the calls that have a previous
window in the same session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentctx.context.config import ContextConfig
from agentctx.tokens import TokenCounter, message_tokens
from agentctx.tokens.messages import REPLY_PRIMING_TOKENS

Message = Mapping[str, Any]
PROMPT_STEP = 25  # tokens between two prompt cuts the oracle may choose


class CeilingRule(StrEnum):
    """What a window may do (see the module docstring)."""

    SHARE_KEPT = "share_kept"
    LOW_WATER = "low_water"
    COMPACTED_PAST = "compacted_past"


@dataclass(frozen=True)
class Layout:
    """The shares the rules read, as a window's context settings give them."""

    recent_share: float
    stable_share: float  # system + summary + retrieved: the prompt's room at most
    digest_share: float  # of the history's room, once turns have left it
    keep_messages: int

    @classmethod
    def of(cls, config: ContextConfig) -> Layout:
        """The shares of ``config`` (the defaults: seed 002's and the adaptive layout's)."""
        split = config.budget_split
        return cls(
            recent_share=split["recent"],
            stable_share=split["system"] + split["summary"] + split["retrieved"],
            digest_share=config.adaptive.digest_share,
            keep_messages=config.adaptive.recent_messages,
        )


@dataclass(frozen=True)
class _Option:
    prompt: int  # tokens of the prompt as cut
    start: int  # index of the history's first message
    digest: int  # tokens of the compacted past before the history


def _unit_starts(messages: Sequence[Message]) -> list[int]:
    """Indexes where the history may start: never at a tool result (it stays with its call)."""
    return [
        index
        for index, message in enumerate(messages)
        if index == 0 or message.get("role") != "tool"
    ]


class _Session:
    """One replayed session: its messages' tokens and model calls."""

    def __init__(self, messages: Sequence[Message], counter: TokenCounter) -> None:
        self.prefix = [0]
        for message in messages:
            self.prefix.append(self.prefix[-1] + message_tokens(counter, message))
        self.starts = _unit_starts(messages)
        self.calls = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]

    def tokens(self, start: int, end: int) -> int:
        return self.prefix[end] - self.prefix[start]


def prompt_cuts(prompt_tokens: int, budget: int, rule: CeilingRule, layout: Layout) -> list[int]:
    """The sizes the rule lets the oracle cut the prompt to (the whole prompt included)."""
    cap = int(layout.stable_share * budget) if rule is CeilingRule.COMPACTED_PAST else budget
    top = min(prompt_tokens, cap)
    return sorted({*range(PROMPT_STEP, top, PROMPT_STEP), top}) if top > 0 else [0]


def _options(  # noqa: PLR0917 - one call's constraints
    session: _Session, call: int, budget: int, cuts: list[int], rule: CeilingRule, layout: Layout
) -> list[_Option]:
    """Every window the rule allows before ``call`` (the newest messages kept when they fit)."""
    usable = budget - REPLY_PRIMING_TOKENS
    shown = session.tokens(0, call)
    floor = min(layout.recent_share * budget, shown) if rule is CeilingRule.SHARE_KEPT else 0
    newest = max(0, call - layout.keep_messages)

    def allowed(keep_newest: bool, keep_floor: bool) -> list[_Option]:
        found = []
        for prompt in cuts:
            for start in session.starts:
                if start > call or (keep_newest and start > newest):
                    continue
                digest = 0
                if rule is CeilingRule.COMPACTED_PAST and start > 0:
                    digest = int(layout.digest_share * (usable - prompt))
                history = session.tokens(start, call)
                if prompt + digest + history > usable:
                    continue
                if keep_floor and history < floor:
                    continue
                found.append(_Option(prompt, start, digest))
        return found

    # Relax what cannot hold on this call (the newest messages or the floor do not fit).
    return (
        allowed(True, True)
        or allowed(False, True)
        or allowed(False, False)
        or [_Option(cuts[0], call, 0)]
    )


def session_ceiling(
    session: _Session, prompt_tokens: int, budget: int, rule: CeilingRule, layout: Layout
) -> tuple[float, int]:
    """(sum of the best reuse over the session's calls, calls scored)."""
    cuts = prompt_cuts(prompt_tokens, budget, rule, layout)
    best: dict[_Option, float] | None = None
    previous_call = 0
    for call in session.calls:
        options = _options(session, call, budget, cuts, rule, layout)
        if best is None:
            best = dict.fromkeys(options, 0.0)
            previous_call = call
            continue
        # Only three kinds of step matter: the same window grown at its end, the history
        # slid (the prefix keeps the prompt), or the prompt cut elsewhere (nothing kept).
        anything = max(best.values())
        by_prompt: dict[int, float] = {}
        for option, value in best.items():
            by_prompt[option.prompt] = max(by_prompt.get(option.prompt, 0.0), value)
        scored: dict[_Option, float] = {}
        for option in options:
            total = option.prompt + option.digest + session.tokens(option.start, call) or 1
            value = max(anything, by_prompt.get(option.prompt, -1.0) + option.prompt / total)
            same = best.get(option)
            if same is not None:
                kept = option.prompt + option.digest + session.tokens(option.start, previous_call)
                value = max(value, same + kept / total)
            scored[option] = value
        best, previous_call = scored, call
    if best is None:
        return 0.0, 0
    return max(best.values()), len(session.calls) - 1


@dataclass(frozen=True)
class ReuseCeiling:
    """The oracle's average prefix reuse at one budget under one rule."""

    budget: int
    rule: CeilingRule
    reuse: float | None
    calls: int


def reuse_ceiling(
    sessions: Sequence[Sequence[Message]],
    system: str | None,
    budget: int,
    counter: TokenCounter,
    rule: CeilingRule,
    *,
    layout: Layout | None = None,
) -> ReuseCeiling:
    """The best average prefix reuse any window could reach over ``sessions`` (each the
    messages after the system prompt, in order) at ``budget`` under ``rule``, with the
    shares of ``layout`` (default: the default context settings')."""
    layout = layout or Layout.of(ContextConfig())
    prompt = message_tokens(counter, {"role": "system", "content": system}) if system else 0
    total, calls = 0.0, 0
    for messages in sessions:
        value, scored = session_ceiling(_Session(messages, counter), prompt, budget, rule, layout)
        total += value
        calls += scored
    return ReuseCeiling(budget, rule, total / calls if calls else None, calls)
