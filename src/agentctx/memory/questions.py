"""A user's question about themselves, put the way memories are written.

Memories speak of the user in the third person ("User works as a pilot", "用户住在杭州");
users ask in the first ("what is my job?", "我住在哪里?"). :func:`about_user` swaps the
speaker for "user" (用户) before a question is searched, so both rankings compare like
with like: the lexical one matches "user's", the embedding of "what is user's job"
lies nearer "User works as a pilot" than that of "what is my job".
"""

from __future__ import annotations

import re

_EN_SWAPS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (r"\bam I\b", "is user"),
        (r"\bI am\b|\bI'm\b", "user is"),
        (r"\bdo I\b", "does user"),
        (r"\bI've\b|\bI have\b", "user has"),
        (r"\bmy\b", "user's"),
        (r"\bmine\b", "user's"),
        (r"\bmyself\b", "user"),
        (r"\bme\b", "user"),
        (r"\bI\b", "user"),
    )
)
_ZH_SWAPS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile("我们"), "用户和家人"),
    (re.compile("我的"), "用户的"),
    (re.compile("我"), "用户"),
)
_HAN = re.compile(r"[\u4e00-\u9fff]")


def about_user(question: str) -> str:
    """``question`` with its speaker as "user" (English) or 用户 (Chinese)."""
    out = question
    for pattern, replacement in _ZH_SWAPS if _HAN.search(question) else ():
        out = pattern.sub(replacement, out)
    for pattern, replacement in _EN_SWAPS:
        out = pattern.sub(replacement, out)
    return out


__all__ = ["about_user"]
