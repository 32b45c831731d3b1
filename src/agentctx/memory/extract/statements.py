"""What the rule-based extractors share: a statement found in a sentence, the match
it came from, and the helpers both languages' rules use (:mod:`rules_en`, :mod:`rules_zh`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from agentctx.events import Event
from agentctx.memory.models import MemoryKind


def words(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``."""
    return frozenset(text.split())


PROJECT_WORDS = re.compile(
    r"\b(project|repo|repository|code|codebase|release|deploy|database|api|schema|library|"
    r"framework|version|architecture|design|stack|backend|frontend|service|server|"
    r"migration|branch|feature|sprint|roadmap)\b|项目|代码|数据库|框架|版本|架构|发布|接口",
    re.IGNORECASE,
)


# A name the redaction gate replaced with no trace of it: the placeholder ("[PERSON]",
# "[姓名_已脱敏]") or a mask. (A keyed hash or an encrypted token still tells names apart.)
NAMELESS = r"\[(?:PERSON|姓名_已脱敏)\]|\*{4,}"
"""The pattern of such a name, for rules that read one where a name stood."""
_NAMELESS = re.compile(NAMELESS)


def names_nobody(text: str) -> bool:
    """Whether ``text`` holds a name the redaction gate replaced with no trace of it."""
    return _NAMELESS.search(text) is not None


CORRECTS = "corrects"
"""``Found.data`` key of a bare correction ("打错了, 是陈昊"): it stands for the value of
the statement just before it in the same message, which it replaces."""


@dataclass(frozen=True, slots=True)
class Found:
    """One statement a rule found in a sentence."""

    kind: MemoryKind
    content: str
    subject: str | None
    confidence: float
    episodic_date: str | None = None
    # The value as the user wrote it ("Cantonese", "陈浩"): a correction later in the
    # same message ("… well no, Cantonese really", "打错了, 是陈昊") replaces it.
    value: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)


class Groups:
    """A match whose alternative groups (``v2`` … ``v5``, ``verb2``) stand in for the main ones."""

    def __init__(self, match: re.Match[str]) -> None:
        self._match = match
        self.string = match.string
        self.start = match.start()

    def group(self) -> str:
        """The whole matched text."""
        return self._match.group(0)

    def __getitem__(self, name: str) -> str:
        groups = self._match.groupdict()
        for key in (name, *(f"{name}{n}" for n in range(2, 6))):
            if groups.get(key) is not None:
                return str(groups[key])
        return ""


Rule = Callable[[Groups, Event], "Found | tuple[Found, ...] | None"]
"""A rule reads a match and returns what it states: nothing, one statement, or several
("my daughter Chloe starts school in September": a family member and a plan)."""


def resolve_date(when: str, ts: datetime) -> str:
    """A relative date ("yesterday", "last week") as the dates it means, seen from ``ts``."""
    day = ts.date()
    relative = {
        "yesterday": day - timedelta(days=1),
        "today": day,
        "this morning": day,
        "tonight": day,
        "last night": day - timedelta(days=1),
    }
    if when in relative:
        return f"On {relative[when].isoformat()}"
    if when.endswith(" ago"):
        return f"{when.capitalize()} (before {day.isoformat()})"
    if when.startswith("last "):
        return f"In the {when[5:]} before {day.isoformat()}"
    return f"On {when}" if not when.startswith("on ") else when.capitalize()
