"""Chinese rules for how the user lives: health (``allergy: 花生``, ``health: 高血压``),
diet (``diet``, ``diet: 猪肉``), dated plans (``plan: trip 日本``), projects (``project:
青禾``) and how to answer (``answer style: language``). A retraction (我现在不吃素了,
日本那趟旅行取消了) states the same subject with ``data={"retracted": True}``.
"""

from __future__ import annotations

import re

from agentctx.events import Event
from agentctx.memory.extract.chinese import WHEN, clause, place, third_person
from agentctx.memory.extract.rules_zh import zh_value
from agentctx.memory.extract.statements import Found, Groups, Rule
from agentctx.memory.extract.value_words import (
    ZH_CONDITIONS,
    ZH_DIET_REGIMES,
    ZH_LANGUAGES,
)
from agentctx.memory.models import MemoryKind

_RETRACTED = {"retracted": True}


# Health and diet ----------------------------------------------------------------------------


def _allergy(match: Groups, event: Event) -> Found | None:
    thing = zh_value(match["v"], max_chars=8)
    if thing is None or thing.startswith(("不", "有点", "什么")):
        return None
    if match["gone"]:
        return Found(
            MemoryKind.FACT,
            f"用户对{thing}不再过敏",
            f"allergy: {thing}",
            0.75,
            value=thing,
            data=_RETRACTED,
        )
    return Found(MemoryKind.FACT, f"用户对{thing}过敏", f"allergy: {thing}", 0.85, value=thing)


def _condition(match: Groups, event: Event) -> Found | None:
    condition = zh_value(match["v"], max_chars=8)
    if condition is None:
        return None
    subject = f"health: {condition}"
    if match["gone"]:
        return Found(
            MemoryKind.FACT,
            f"用户的{condition}已经好了",
            subject,
            0.75,
            value=condition,
            data=_RETRACTED,
        )
    return Found(MemoryKind.FACT, f"用户有{condition}", subject, 0.8, value=condition)


def _doctor_says(match: Groups, event: Event) -> Found | None:
    finding = zh_value(match["v"], max_chars=10)
    # "医生说我要多休息" is advice, not a finding.
    if finding is None or finding.startswith(
        ("的", "要", "得", "应该", "需要", "多", "少", "别", "不要")
    ):
        return None
    return Found(MemoryKind.FACT, f"医生说用户{finding}", f"health: {finding}", 0.7, value=finding)


def _regime(match: Groups, event: Event) -> Found:
    regime = match["v"]
    if match["gone"]:
        content = "用户不再吃素了" if "素" in regime else f"用户不再{regime}了"
        if "素" not in regime:
            content = f"用户放弃了{regime}"
        return Found(MemoryKind.PREFERENCE, content, "diet", 0.8, value=regime, data=_RETRACTED)
    text = third_person(clause(match))
    return Found(MemoryKind.PREFERENCE, text, "diet", 0.85, value=regime)


def _avoids(match: Groups, event: Event) -> Found | None:
    food = zh_value(match["v"], max_chars=6)
    if food is None or food.startswith(("素", "了", "下", "完", "饱", "饭")):
        return None
    verb = "喝" if match["verb"] == "喝" else "吃"
    content = f"用户不{verb}{food}"
    return Found(MemoryKind.PREFERENCE, content, f"diet: {food}", 0.8, value=food)


_QUITS = "戒糖|戒酒|戒烟|控糖|戒碳水|戒咖啡|戒奶茶|戒零食"


def _quit(match: Groups, event: Event) -> Found:
    what = match["v"]
    subject = f"diet: {what}"
    if match["gone"]:
        content = f"用户{what}失败了"
        return Found(MemoryKind.PREFERENCE, content, subject, 0.75, value=what, data=_RETRACTED)
    return Found(MemoryKind.PREFERENCE, f"用户在{what}", subject, 0.8, value=what)


def _eats_now(match: Groups, event: Event) -> Found | None:
    food = zh_value(match["v"], max_chars=8)
    if food is None:
        return None
    return Found(MemoryKind.PREFERENCE, f"用户开始吃{food}了", f"diet: {food}", 0.7, value=food)


# Plans and projects -------------------------------------------------------------------------


def _trip(match: Groups, event: Event) -> Found | None:
    place = re.sub(r"^(?:一趟|趟)", "", match["v"])
    when = match["when"] or ""
    # 要 alone is a wish of the moment (我要去趟超市); a plan has a date or is one.
    planned = re.search(r"打算|计划|准备|报了|订了", match.group())
    if not (when or planned) or len(place) < 2 or place.startswith(("哪", "那", "这")):
        return None
    content = f"用户计划{when}去{place}"
    data = {"when": when} if when else {}
    return Found(MemoryKind.EPISODIC, content, f"plan: trip {place}", 0.75, value=place, data=data)


def _trip_off(match: Groups, event: Event) -> Found:
    place = match["v"]
    return Found(
        MemoryKind.EPISODIC,
        f"用户去{place}的计划取消了",
        f"plan: trip {place}",
        0.75,
        value=place,
        data=_RETRACTED,
    )


def _plan(match: Groups, event: Event) -> Found | None:
    what = zh_value(match["v"], max_chars=12)
    if what is None:
        return None
    when = match["when"] or ""
    topic = re.sub(r"^(?:准备|去|要|做|当|考)", "", what) or what
    data = {"when": when} if when else {}
    return Found(
        MemoryKind.EPISODIC,
        third_person(clause(match)),
        f"plan: {topic}",
        0.7,
        value=what,
        data=data,
    )


def _dated(match: Groups, event: Event) -> Found:
    what, when = match["what"], match["v"]
    return Found(
        MemoryKind.EPISODIC,
        f"用户的{what}在{when}",
        f"plan: {what}",
        0.75,
        value=when,
        data={"when": when},
    )


def _rescheduled(match: Groups, event: Event) -> Found:
    what = match["v"]
    sentence = match.string.strip().rstrip("。.\uff01!")
    return Found(
        MemoryKind.EPISODIC,
        third_person(sentence),
        f"plan: {what}",
        0.7,
        value=what,
        data={"when": match["when"]},
    )


def _project(match: Groups, event: Event) -> Found | None:
    name = zh_value(match["v"].strip('“”"《》「」'), max_chars=10)
    if name is None:
        return None
    # From the statement's start through the end of the name's clause: "我自己在写一本武侠
    # 小说, 叫《雪刀》" keeps the name.
    end = match.start + len(match.group())
    tail = re.split(r"[\uff0c,。.\uff01!\uff1f?\uff1b;\u2026]", match.string[end:], maxsplit=1)[0]
    content = third_person(match.string[match.start : end] + tail)
    return Found(MemoryKind.PROJECT, content, f"project: {name.lower()}", 0.8, value=name)


def _project_dropped(match: Groups, event: Event) -> Found:
    name = match["v"].strip('“”"《》「」')
    return Found(
        MemoryKind.PROJECT,
        third_person(clause(match)),
        f"project: {name.lower()}",
        0.75,
        value=name,
        data=_RETRACTED,
    )


# How to answer ------------------------------------------------------------------------------


def _answer_language(match: Groups, event: Event) -> Found:
    language = match["v"]
    return Found(
        MemoryKind.PREFERENCE,
        f"用户希望用{language}回答",
        "answer style: language",
        0.85,
        value=language,
    )


def _answer_length(match: Groups, event: Event) -> Found:
    word = match["v"]
    return Found(
        MemoryKind.PREFERENCE, f"用户希望回答{word}", "answer style: length", 0.8, value=word
    )


ZH_LIFE_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), rule)
    for pattern, rule in (
        # Health
        (
            r"我(?:现在)?对(?P<v>[^\s\uff0c,。对]{1,8}?)(?:已经)?(?P<gone>不(?:再)?)过敏|"
            r"我(?:现在)?(?P<gone3>不再|已经不)对(?P<v3>[^\s\uff0c,。对]{1,8}?)过敏|"
            r"我(?:对)?(?P<v2>[^\s\uff0c,。对不没]{1,8}?)过敏",
            _allergy,
        ),
        (
            rf"我的(?P<v>{ZH_CONDITIONS}|[\u4e00-\u9fff]{{1,6}}(?:病|症|炎|突出))(?:已经)?(?:完全|彻底|"
            r"基本)?(?P<gone>好了|痊愈了|治好了|康复了)|"
            rf"我(?:有|患有|得了|确诊了?|被诊断出了?|查出了?)(?:点)?(?P<v2>{ZH_CONDITIONS}|"
            r"[\u4e00-\u9fff]{1,6}(?:病|症|炎|突出))",
            _condition,
        ),
        (
            r"医生说我(?P<v>[^\uff0c,。]{2,10})|(?:体检|检查|化验)(?:报告)?(?:说|显示|结果)?我?"
            r"(?P<v2>[\u4e00-\u9fff]{1,4}(?:偏高|偏低|超标|异常|不够|不足|太高|太低))",
            _doctor_says,
        ),
        # Diet
        (
            rf"我(?:现在|已经)?(?P<gone>不再|不)(?P<v>吃素)了|(?P<v2>{ZH_DIET_REGIMES})(?P<gone2>"
            r"坚持不下来|不搞了|放弃了|停了)",
            _regime,
        ),
        (
            rf"我(?:还是|一直|也|现在|平时)?(?:是)?(?P<v>吃素)|我是(?P<v2>素食者|素食主义者|纯素食者)|"
            rf"我(?:在|正在|现在)?(?:搞|做|吃|实行|坚持|尝试|改成|改为|开始)了?(?P<v3>{ZH_DIET_REGIMES})",
            _regime,
        ),
        (
            r"我(?:从来|一直|也|现在|平时)?不(?P<verb>吃|喝|碰)(?P<v>[^\s\uff0c,。了的]{1,6})|"
            r"(?P<v2>[\u4e00-\u9fff]{1,4})我(?:是)?(?:一口)?(?:都|也)?不(?:碰|吃)",
            _avoids,
        ),
        (r"(?:开始|又开始)吃(?P<v>[^\uff0c,。]{1,8}?)了", _eats_now),
        (
            rf"(?P<v>{_QUITS})(?P<gone>失败|坚持不下来|破功)|(?P<gone2>坚持不住).{{0,3}}?(?P<v2>{_QUITS})",
            _quit,
        ),
        (rf"我(?:又|重新|开始|决定|已经|也)*(?P<v>{_QUITS})", _quit),
        # Plans
        (
            r"(?P<v>[\u4e00-\u9fff]{2,4}?)(?:那趟|这趟|的)?(?:旅行|旅游|行程|之行|出行)(?:取消|泡汤|黄)了|"
            r"我们?不去(?P<v2>[\u4e00-\u9fff]{2,4})了",
            _trip_off,
        ),
        (
            rf"我(?:们)?(?P<when>{WHEN})?(?:打算|计划|准备|要)?(?P<when2>{WHEN})?(?:去|到){place('v')}",
            _trip,
        ),
        (rf"我报了(?P<when>{WHEN})?的?(?P<v>[^\uff0c,。]{{2,8}})", _plan),
        (
            rf"我们?的(?P<what>婚礼|婚宴|毕业典礼|手术|考试|面试|搬家|旅行|答辩|生日会|派对)(?:定)?"
            rf"(?:在|是)(?P<v>{WHEN})",
            _dated,
        ),
        (rf"(?P<v>[^\s\uff0c,。我]{{2,6}}?)我?改到了?(?P<when>{WHEN})", _rescheduled),
        (
            rf"(?P<when>{WHEN})(?:要|就要|准备)?(?:去)?(?:做|动)(?P<v>[^\uff0c,。]{{0,8}}?手术)",
            _plan,
        ),
        (
            r"我(?:要|就要|准备|打算|计划)(?P<v>(?:准备)?(?:当伴郎|当伴娘|出国|结婚|考研|考公|搬家|"
            r"跳槽|辞职|买房|留学|生二胎|装修))",
            _plan,
        ),
        # Projects
        (
            r"(?P<v>[“\"《]?[\u4e00-\u9fffA-Za-z0-9]{2,8}?[”\"》]?)(?:项目|小程序|App|应用)?"
            r"(?:被砍了|黄了|停了|取消了|暂停了|不做了)",
            _project_dropped,
        ),
        (
            r"我(?:自己)?(?:现在|正在|在|也)*(?:做|开发|写|搞|负责|创作)(?:着)?(?:的)?(?:一个|一款|"
            r"一本|一部|个|本)?[^\uff0c,。叫]{0,10}?[\uff0c,]?\s*(?:名字)?(?:叫|名为|名叫|叫做)"
            r"(?P<v>[“\"《「]?[^”\"》」\uff0c,。]{1,10})",
            _project,
        ),
        (
            r"(?:被调去|调去|转去|改去|开始)(?:做|负责)(?P<v>[\u4e00-\u9fffA-Za-z0-9]{2,6})[\uff0c,]\s*"
            r"(?:一个|是个|一款)",
            _project,
        ),
        # How to answer
        (
            rf"用(?P<v>{ZH_LANGUAGES})(?:来)?(?:回答|回复|跟我说|和我说|回我|交流|聊)",
            _answer_language,
        ),
        (
            r"(?:以后|回答|回复|说话)[^\uff0c,。]{0,3}?(?P<v>简短|简洁|精简|详细|短)(?:一?点|一些|些)?",
            _answer_length,
        ),
    )
)
"""Patterns of the Chinese health, diet, plan, project and answer-style statements."""
