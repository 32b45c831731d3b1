"""Surface cues of what a summary must keep, in English and Chinese.

Decisions, errors, numbers and dates are what a later turn asks about ("which
flight did we pick", "what was the error", "how much was it"); greetings, thanks
and acknowledgements are what it never needs. :func:`cue_score` rates a sentence
on the first four, :func:`is_chit_chat` spots the last.

English cues are looked up as lowercase words and word pairs in sets (one pass over
the words), Chinese ones by a regular expression of literals; both stay linear in
the length of the sentence.
"""

from __future__ import annotations

import itertools
import re

from agentctx.priority import yield_to_foreground

_DECISION_WORDS_LIST = """
    decide decided decides deciding decision decisions agreed chose chosen final finally
    finalized finalised confirm confirmed confirms approve approved resolved conclude
    concluded conclusion deadline todo booked we'll
"""
_DECISION_WORDS = frozenset(_DECISION_WORDS_LIST.split())
_DECISION_PAIRS = frozenset(
    {
        "settled on",
        "going with",
        "go with",
        "opt for",
        "opted for",
        "we will",
        "root cause",
        "next step",
        "next steps",
        "action item",
        "action items",
        "switch to",
        "switched to",
    }
)
_ADVICE_WORDS_LIST = """
    should must fix fixed because deploy deployed set recommend recommended recommends
    instead
"""
_ADVICE_WORDS = frozenset(_ADVICE_WORDS_LIST.split())
_ADVICE_PAIRS = frozenset({"need to", "needs to", "plan to", "planned to"})
_ERROR_WORDS_LIST = """
    error errors exception exceptions fail fails failed failure failures failing traceback
    crash crashes crashed bug bugs broken timeout timeouts denied refused invalid cannot
    can't unable panic fatal warning warnings deadlock deadlocks exhausted
"""
_ERROR_WORDS = frozenset(_ERROR_WORDS_LIST.split())
_ERROR_PAIRS = frozenset({"timed out", "time out", "not found"})
_DATE_WORDS_LIST = """
    january february march april june july august september october november december jan
    feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
    saturday sunday today tomorrow yesterday tonight weekend
"""
_DATE_WORDS = frozenset(_DATE_WORDS_LIST.split())
_DATE_PAIRS = frozenset(
    {"next week", "next month", "next year", "last night", "last week", "last month"}
)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
# On casefolded text: ISO dates, clock times, "3 pm"/"3 p.m.".
_DATE_FORMS = re.compile(r"\d{4}-\d\d?-\d\d?|\d\d?:\d\d|\d\d?\s?[ap]\.?m\b")
_DIGIT = re.compile(r"\d")
# Any CJK character: the Chinese patterns only run on text that has one.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

_ZH_DECISION = re.compile(
    "决定|决策|确定|确认|同意|选定|选择|采用|定下|最终|结论|方案|下一步|待办|截止|解决|修复"
    "|原因|改为|改成|统一|订好|预订|预约|定了"
)
_ZH_ADVICE = re.compile("应该|必须|需要|建议|计划|因为|部署|设置|改用")
_ZH_ERROR = re.compile("错误|报错|失败|异常|崩溃|超时|无法|不能|故障|死锁|告警|警告|出错")
_ZH_DATE = re.compile(
    r"\d+月\d+[日号]|[周星期礼拜][一二三四五六日天]|今天|明天|后天|昨天|下周|上周|周末|上午|下午"
    "|晚上|早上|凌晨|假期|五一|国庆|春节|元旦"
)
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_ZH_NUMBER = re.compile(
    "[一二三四五六七八九十百千万两半]+(?=[元块天个次人斤克倍分秒小时点号月年周岁米公])"
)
_CHIT_CHAT = re.compile(
    r"\W*(?:(?:ok(?:ay)?|thanks?|thank you|thx|great|cool|nice|sounds good|awesome|perfect"
    r"|lol|haha\w*|hi|hello|hey|sure|yes|yeah|yep|no problem|you're welcome|got it"
    r"|good (?:morning|night|afternoon)|bye|wow|amazing|love it|brilliant|excellent|right)"
    r"(?![\w'])"
    r"|好的|谢谢|多谢|哈哈|嗯|好吧|不客气|没问题|收到|明白|你好|早上好|晚安|太好了|太棒了|好嘞|可以的)",
    re.IGNORECASE,
)

CUE_WEIGHTS = {"decision": 0.55, "error": 0.3, "number": 0.2, "date": 0.1}
"""How much each cue adds to :func:`cue_score` (advice counts as half a decision)."""

_SCANNED = 4000  # characters of a sentence looked at: cues sit anywhere, but not in megabytes


def _month_day(words: list[str]) -> bool:
    """ "may" next to a number: the month, not the verb ("May 3", "3 May")."""
    return any(
        (a == "may" and b[:1].isdigit()) or (b == "may" and a[:1].isdigit())
        for a, b in itertools.pairwise(words)
    )


def cue_score(text: str) -> float:
    """0..1: how strongly ``text`` carries a decision, an error, numbers or dates."""
    yield_to_foreground()  # summaries score every sentence, in the background
    text = text[:_SCANNED]
    lowered = text.casefold()
    words = _WORD.findall(lowered)
    found = set(words)
    found.update(f"{a} {b}" for a, b in itertools.pairwise(words))
    chinese = _CJK.search(text) is not None
    digits = _DIGIT.search(text) is not None
    score = 0.0
    if (
        found & _DECISION_WORDS
        or found & _DECISION_PAIRS
        or (chinese and _ZH_DECISION.search(text))
    ):
        score += CUE_WEIGHTS["decision"]
    elif found & _ADVICE_WORDS or found & _ADVICE_PAIRS or (chinese and _ZH_ADVICE.search(text)):
        score += CUE_WEIGHTS["decision"] / 2
    if found & _ERROR_WORDS or found & _ERROR_PAIRS or (chinese and _ZH_ERROR.search(text)):
        score += CUE_WEIGHTS["error"]
    numbers = len(_NUMBER.findall(text)) if digits else 0
    if chinese:
        numbers += len(_ZH_NUMBER.findall(text))
    score += CUE_WEIGHTS["number"] * min(1.0, numbers / 2)
    if (
        found & _DATE_WORDS
        or found & _DATE_PAIRS
        or (digits and (_DATE_FORMS.search(lowered) or _month_day(words)))
        or (chinese and _ZH_DATE.search(text))
    ):
        score += CUE_WEIGHTS["date"]
    return min(1.0, score)


def is_chit_chat(text: str) -> bool:
    """Whether ``text`` opens as a greeting, thanks or acknowledgement."""
    return _CHIT_CHAT.match(text) is not None
