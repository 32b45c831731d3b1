"""Chinese rules: the sentence patterns of self-statements and what each one records."""

from __future__ import annotations

import re

from agentctx.events import Event
from agentctx.memory.extract.statements import PROJECT_WORDS, Found, Groups, Rule, resolve_date
from agentctx.memory.models import MemoryKind

ZH_VALUE_END = re.compile(
    r"[\uff0c,。.\uff01!\uff1f?\uff1b;、\uff1a:\uff08(\u2026\u2014]|但是|因为|所以|而且|不过|还有|也"
).pattern


def zh_value(raw: str, *, max_chars: int = 20) -> str | None:
    """The captured text up to the end of its clause, particles dropped; None when empty
    or longer than ``max_chars``."""
    value = re.split(ZH_VALUE_END, raw, maxsplit=1)[0].strip()
    value = value.rstrip("了的啦呢吧啊呀哦嘛")
    if not value or len(value) > max_chars or not re.search(r"\w", value):
        return None
    return value


_ZH_ROLES = (
    "会计",
    "司机",
    "警察",
    "经理",
    "销售",
    "编辑",
    "翻译",
    "主播",
    "模特",
    "导游",
    "保安",
    "柜员",
    "急救员",
    "前台",
    "客服",
    "厨子",
    "老板",
    "公务员",
    "自由职业",
    "博主",
    "作家",
)
_ZH_ROLE_ENDINGS = ("师", "员", "生", "家", "者", "工", "医", "士", "长", "手", "商")


def _zh_name(match: Groups, event: Event) -> Found | None:
    value = zh_value(match["v"], max_chars=10)
    if value is None:
        return None
    return Found(MemoryKind.PROFILE, f"用户叫{value}", "name", 0.85, value=value)


def _zh_am(match: Groups, event: Event) -> Found | None:
    value = zh_value(match["v"], max_chars=15)
    if value is None or value.startswith(("不", "说", "想", "在", "来", "为", "觉得", "真")):
        return None
    value = re.sub(r"^(一名|一个|一位|个|名)", "", value)
    if not value:
        return None
    if value.endswith("人") and len(value) <= 6:
        return Found(MemoryKind.PROFILE, f"用户是{value}", "home town", 0.7, value=value)
    if not value.endswith(_ZH_ROLE_ENDINGS) and not value.endswith(_ZH_ROLES):
        return None  # "猪肉我是一口不碰的": 是 stresses, it names no role
    return Found(MemoryKind.PROFILE, f"用户是{value}", "occupation", 0.75, value=value)


def _zh_work(match: Groups, event: Event) -> Found | None:
    value = zh_value(match["v"], max_chars=20)
    return Found(MemoryKind.PROFILE, f"用户在{value}工作", "employer", 0.8) if value else None


def _zh_live(match: Groups, event: Event) -> Found | None:
    value = zh_value(match["v"], max_chars=15)
    return Found(MemoryKind.PROFILE, f"用户住在{value}", "residence", 0.8) if value else None


def _zh_from(match: Groups, event: Event) -> Found | None:
    value = zh_value(match["v"], max_chars=15)
    return Found(MemoryKind.PROFILE, f"用户来自{value}", "home town", 0.75) if value else None


def _zh_like(match: Groups, event: Event) -> Found | None:
    value = zh_value(match["v"])
    if value is None:
        return None
    verb = match["verb"]
    topic = re.sub(r"^(吃|喝|看|玩|听)", "", value) or value
    return Found(MemoryKind.PREFERENCE, f"用户{verb}{value}", f"preference: {topic}", 0.65)


def _zh_my_x_is(match: Groups, event: Event) -> Found | None:
    thing = match["x"]
    value = zh_value(match["v"])
    if value is None:
        return None
    if thing.startswith(("最喜欢的", "最爱的")):
        subject = "favourite " + re.sub(r"^(最喜欢的|最爱的)", "", thing)
        return Found(MemoryKind.PREFERENCE, f"用户的{thing}是{value}", subject, 0.8)
    kind = MemoryKind.PROFILE if thing in {"名字", "生日", "年龄", "职业"} else MemoryKind.FACT
    subject = {"名字": "name", "职业": "occupation", "生日": "birth date"}.get(thing, thing)
    return Found(kind, f"用户的{thing}是{value}", subject, 0.7)


def _zh_have(match: Groups, event: Event) -> Found | None:
    value = zh_value(match["v"])
    return Found(MemoryKind.FACT, f"用户{match['verb']}{value}", None, 0.7) if value else None


def _zh_decision(match: Groups, event: Event) -> Found | None:
    value = zh_value(match["v"], max_chars=40)
    if value is None:
        return None
    kind = MemoryKind.PROJECT if PROJECT_WORDS.search(match.string) else MemoryKind.FACT
    return Found(kind, f"决定{value}", None, 0.65)


def _zh_episode(match: Groups, event: Event) -> Found | None:
    words = {"昨天": "yesterday", "今天": "today", "昨晚": "last night"}
    when = words.get(match["when"])
    date = resolve_date(when, event.ts) if when else f"In the {match['when']}"
    text = re.sub(r"我们", "用户和其他人", match.string.strip())
    text = re.sub(r"我", "用户", text)
    return Found(MemoryKind.EPISODIC, f"{date}: {text}", None, 0.55, episodic_date=date)


_ZH_PET = (
    "狗|猫|小狗|小猫|鸟|鱼|兔子|仓鼠|儿子|女儿|孩子|哥哥|姐姐|弟弟|妹妹|男朋友|女朋友|老公|老婆"
)
ZH_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = tuple(
    (re.compile(pattern), rule)
    for pattern, rule in (
        (r"我(?:叫|的名字是|的名字叫)(?P<v>.+)", _zh_name),
        (
            r"我(?:现在|目前)?(?:在|于)(?P<v>[^\uff0c,。.\uff01!\uff1f?在]{1,20}?)(?:工作|上班|任职)",
            _zh_work,
        ),
        (r"我(?:现在|目前)?(?:住在|生活在|搬到了?)(?P<v>.+)", _zh_live),
        (r"我(?:来自|出生在|出生于|老家在)(?P<v>.+)", _zh_from),
        (r"我(?:很|特别|非常|也|最)?(?P<verb>喜欢|爱|讨厌|不喜欢|偏好)(?P<v>.+)", _zh_like),
        (r"我的(?P<x>[^\uff0c,。.\uff01!\uff1f?是]{1,10})是(?P<v>.+)", _zh_my_x_is),
        (
            rf"我(?P<verb>有|养了|养着)(?P<v>(?:一|两|三|几)?(?:只|条|个|位)?(?:{_ZH_PET}).*)",
            _zh_have,
        ),
        (r"(?:我们|我)(?:最后|最终|已经)?决定(?:了)?(?P<v>.+)", _zh_decision),
        (r"^(?P<when>昨天|昨晚|上周|上个月|去年|上周末)[\uff0c,]?(?:我|我们).+", _zh_episode),
        (r"(?:我|^|[\uff0c,]\s*)(?:现在|目前)?是(?P<v>.+)", _zh_am),
    )
)
