"""Chinese text helpers the fact rules share: a place and a date as patterns, and a
clause in the third person."""

from __future__ import annotations

import re

from agentctx.memory.extract.statements import Groups
from agentctx.memory.extract.value_words import ZH_TIME

WHEN = rf"(?:{ZH_TIME}|上个?月|上周|去年|最近|前段时间|刚|刚刚)"
"""A date as people say it (五月, 下个月, 国庆, 上周)."""


def place(group: str) -> str:
    """A place as a group named ``group``: two to four characters, then what follows a
    place in a sentence."""
    return (
        rf"(?P<{group}>[\u4e00-\u9fff]{{2,4}}?)(?=[\uff0c,。.\uff01!\uff1f?\uff1b;、\u2026\s]|了|这|"
        r"那|的|住|生活|工作|上班|玩|旅行|旅游|度假|出差|看|逛|已|快|好|留学|读书|上学|开会|参加|"
        r"探亲|见|拜访|过年|[一二三四五六七八九十几\d]|$)"
    )


def third_person(text: str) -> str:
    """A clause in the user's words, in the third person."""
    return re.sub(r"我(?!们)", "用户", re.sub(r"我们", "用户和家人", text)).strip()


def clause(match: Groups) -> str:
    """The clause the match is in, from the match's start to the clause's end."""
    rest = match.string[match.start :]
    return re.split(r"[\uff0c,。.\uff01!\uff1f?\uff1b;\u2026]", rest, maxsplit=1)[0]
