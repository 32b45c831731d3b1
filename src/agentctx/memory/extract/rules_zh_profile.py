"""Chinese rules for who the user is: name (and a message's own corrections), family,
work, city, languages and skills. They run before the general rules of :mod:`rules_zh`
and use the same subjects as the English ones (``language: 粤语``, ``family: daughter:
朵朵``), so a fact said in either language is one memory.
"""

from __future__ import annotations

import re
from dataclasses import replace

from agentctx.events import Event
from agentctx.memory.extract.chinese import WHEN, place
from agentctx.memory.extract.rules_zh import zh_value
from agentctx.memory.extract.statements import (
    CORRECTS,
    NAMELESS,
    Found,
    Groups,
    Rule,
    names_nobody,
)
from agentctx.memory.extract.value_words import (
    TECH,
    TECH_AS_WRITTEN,
    ZH_INSTRUMENTS,
    ZH_LANGUAGES,
    ZH_RELATION_PATTERN,
    ZH_RELATIONS,
)
from agentctx.memory.models import MemoryKind

_RETRACTED = {"retracted": True}
_SURNAMES = (
    "王李张刘陈杨赵黄周吴徐孙胡朱高林何郭马罗梁宋郑谢韩唐冯于董萧程曹袁邓许傅沈曾彭吕苏卢蒋蔡"
    "贾丁魏薛叶阎余潘杜戴夏钟汪田任姜范方石姚谭廖邹熊金陆郝孔白崔康毛邱秦江史顾侯邵孟龙万段钱"
    "汤尹黎易常武乔贺赖龚文"
)
_END = r"(?=[\uff0c,。.\uff01!\uff1f?\uff1b;、\u2026\s]|$)"
# A name, or the placeholder the redaction gate left for one ("我女儿叫[PERSON]": a daughter).
_NAME = rf"(?P<v>{NAMELESS}|[^\s\uff0c,。.\uff01!\uff1f?\uff1b;、\u2026“”\"]{{1,4}}){_END}"


_GENERIC_ORGS = frozenset({"公司", "银行", "医院", "大学", "学校", "集团", "行", "单位", "家里"})
_GENERIC_ORG_START = ("一家", "一个", "家", "某", "这家", "那家", "这个", "那个", "个")


# Name and corrections ------------------------------------------------------------------------


def _correction(match: Groups, event: Event) -> Found | None:
    value = zh_value(match["v"], max_chars=10)
    if value is None:
        return None
    # Stands for the value of the statement it corrects, in the same message.
    return Found(MemoryKind.PROFILE, value, None, 0.8, value=value, data={CORRECTS: True})


def _renamed(match: Groups, event: Event) -> Found:
    name = match["v"]
    return Found(MemoryKind.PROFILE, f"用户叫{name}", "name", 0.85, value=name)


# Family -------------------------------------------------------------------------------------


def zh_family_member(word: str, name: str | None) -> Found:
    """The family member ``word`` (女儿, 老婆) of the user, named ``name`` if known."""
    relation = ZH_RELATIONS.get(word, word)
    if name is None or names_nobody(name):
        return Found(MemoryKind.FACT, f"用户有{word}", f"family: {relation}", 0.7, value=word)
    return Found(
        MemoryKind.FACT, f"用户的{word}叫{name}", f"family: {relation}: {name}", 0.8, value=name
    )


def _named(match: Groups, event: Event) -> Found | None:
    name = match["v"]
    if name.startswith(("什么", "啥", "我")):
        return None
    return zh_family_member(match["rel"], name)


def _has_family(match: Groups, event: Event) -> Found:
    found = zh_family_member(match["rel"], None)
    return replace(found, content=f"用户有{match['n'] or ''}{match['rel']}")


def _starts_school(match: Groups, event: Event) -> tuple[Found, ...]:
    rel, name = match["rel"], match["name"] or None
    when, what = match["when"], match["what"]
    who = f"用户的{rel}{name or ''}"
    plan = Found(
        MemoryKind.EPISODIC,
        f"{who}{when}上{what}",
        f"plan: school {name or ZH_RELATIONS.get(rel, rel)}",
        0.75,
        value=when,
        data={"when": when},
    )
    return (zh_family_member(rel, name), plan)


def _does_for_work(match: Groups, event: Event) -> Found | None:
    work = zh_value(match["v"], max_chars=8)
    if work is None:
        return None
    return Found(MemoryKind.PROFILE, f"用户是做{work}的", "occupation", 0.75, value=work)


def _mentioned(match: Groups, event: Event) -> Found:
    return zh_family_member(match["rel"], None)


# Work and place -----------------------------------------------------------------------------


def _job_at(match: Groups, event: Event) -> tuple[Found, ...] | None:
    org = match["org"].strip()
    role = zh_value(match["v"], max_chars=8)
    if role is None or len(role) < 2 or role.startswith(("什么", "啥", "饭", "作业", "家务")):
        return None
    found = [Found(MemoryKind.PROFILE, f"用户的工作是{role}", "occupation", 0.8, value=role)]
    if org and org not in _GENERIC_ORGS and not org.startswith(_GENERIC_ORG_START):
        found.insert(0, Found(MemoryKind.PROFILE, f"用户在{org}工作", "employer", 0.8, value=org))
    return tuple(found)


# What follows 入职 or 跳槽 and is no organisation: a time ("入职快俩月了"), a question
# ("入职要准备些啥"), an aspect particle.
_NOT_AN_ORG = re.compile(r"了|啥|什么|吗|呢|吧|^(?:快|要|刚|就|才|已|准备|一|两|俩|几|半|\d)")


def _employer(match: Groups, event: Event) -> Found | None:
    org = match["v"].strip()
    if org in _GENERIC_ORGS or org.startswith(_GENERIC_ORG_START) or _NOT_AN_ORG.search(org):
        return None
    return Found(MemoryKind.PROFILE, f"用户在{org}工作", "employer", 0.8, value=org)


def _residence(match: Groups, event: Event) -> Found:
    place = match["v"]
    moved = "搬" in match.group() or "调" in match.group()
    content = f"用户搬到了{place}" if moved else f"用户住在{place}"
    return Found(MemoryKind.PROFILE, content, "residence", 0.8, value=place)


# Languages and skills ------------------------------------------------------------------------


_MORE_LANGUAGES = re.compile(rf"^(?:和|、|跟|以及|还有)(?:一点|些)?({ZH_LANGUAGES})")


def _language(match: Groups, event: Event) -> tuple[Found, ...]:
    languages = [match["v"]]
    rest = match.string[match.start + len(match.group()) :]
    while (more := _MORE_LANGUAGES.match(rest)) is not None:
        languages.append(more.group(1))
        rest = rest[more.end() :]
    return tuple(_one_language(match, language) for language in languages)


def _one_language(match: Groups, language: str) -> Found:
    subject = f"language: {language}"
    if match["gone"]:
        content = f"用户已经不会说{language}了"
        return Found(MemoryKind.PROFILE, content, subject, 0.75, value=language, data=_RETRACTED)
    text = match.group()
    if "母语" in text or "第一语言" in text:
        content = f"用户的母语是{language}"
    elif "学" in text:
        content = f"用户学过{language}"
    else:
        content = f"用户会说{language}"
    return Found(MemoryKind.PROFILE, content, subject, 0.8, value=language)


def _tech(match: Groups, event: Event) -> Found | None:
    tool = match["v"]
    if tool not in TECH_AS_WRITTEN and tool.lower() not in TECH:
        return None
    return Found(MemoryKind.SKILL, f"用户会用{tool}", f"skill: {tool.lower()}", 0.8, value=tool)


def _good_at(match: Groups, event: Event) -> Found | None:
    skill = zh_value(match["v"], max_chars=6)
    if skill is None:
        return None
    return Found(MemoryKind.SKILL, f"用户擅长{skill}", f"skill: {skill}", 0.75, value=skill)


def _instrument(match: Groups, event: Event) -> Found:
    instrument = match["v"]
    subject = f"skill: {instrument}"
    if match["gone"]:
        content = f"用户不再演奏{instrument}了"
        return Found(MemoryKind.SKILL, content, subject, 0.75, value=instrument, data=_RETRACTED)
    learning = "学" in match.group()
    content = (
        f"用户在学{instrument}" if learning else f"用户会{match['verb'] or '演奏'}{instrument}"
    )
    return Found(MemoryKind.SKILL, content, subject, 0.8, value=instrument)


def _tech_word(group: str) -> str:
    """A programming language or tool's name, as a group named ``group``."""
    return rf"(?P<{group}>[A-Za-z][A-Za-z0-9+#.]*)"


_PLAYS = r"(?P<verb>弹|拉|吹|打)"
ZH_PROFILE_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), rule)
    for pattern, rule in (
        # A correction of what the message said just before: 打错了, 是陈昊
        (
            r"(?:打错了|说错了|写错了|记错了|口误|不对|更正一下)[^是叫\uff0c,]{0,4}[\uff0c,]?\s*"
            r"(?:应该|准确地说|其实|正确的)?(?:我)?(?:是|叫)(?P<v>[^\uff0c,。.\uff01!]{1,10})",
            _correction,
        ),
        (
            r"改名(?:字)?了?.{0,14}?(?:现在|新名字|改成)(?:是|叫|了)?(?P<v>[\u4e00-\u9fff]{2,4})",
            _renamed,
        ),
        (r"叫我(?P<v>[\u4e00-\u9fff]{1,4}?)(?:就行|就好|吧)", _renamed),
        (rf"我是(?P<v>[{_SURNAMES}][\u4e00-\u9fff]{{1,2}})(?=[\uff0c,。.\uff01!\s]|$)", _renamed),
        (r"我是做(?P<v>[^\uff0c,。]{1,8}?)的", _does_for_work),
        # Family
        (
            rf"我(?:的)?(?P<rel>儿子|女儿|孩子|闺女)(?P<name>[\u4e00-\u9fff]{{2}})?(?P<when>{WHEN})"
            r"(?:就)?(?:要)?(?:开始)?(?:上|读|进)(?P<what>小学|幼儿园|初中|高中|大学|学)",
            _starts_school,
        ),
        (
            r"我(?:有|生了)(?P<n>一个|两个|三个|四个|一|两|三|个)?(?P<rel>女儿|儿子|孩子|哥哥|姐姐|"
            r"弟弟|妹妹|闺女)",
            _has_family,
        ),
        (
            rf"我(?:的)?(?P<rel>{ZH_RELATION_PATTERN})(?:叫|名叫|名字叫|的名字是|的名字叫|小名叫|"
            rf"大名叫){_NAME}",
            _named,
        ),
        (
            rf"(?:是个|生了个|生了一个|是一个)(?P<rel>儿子|女儿|闺女)[\uff0c,]?\s*(?:小名|大名|名字)?"
            rf"叫{_NAME}",
            _named,
        ),
        (
            r"(?:^|[\uff0c,])\s*(?:可是|但是|而且|还有|不过)?我?(?:的)?(?P<rel>老婆|老公|妻子|丈夫|"
            r"太太|爱人|女儿|儿子|哥哥|姐姐|弟弟|妹妹|男朋友|女朋友)(?=在|是|会|快|上周|刚|今年|"
            r"下个月|也|已经|说)",
            _mentioned,
        ),
        # Work
        (
            r"(?:我|^|[\uff0c,]\s*)(?:现在|目前)?在(?P<org>[^\uff0c,。在做当]{2,15}?)(?:做|当|担任)"
            r"(?P<v>[^\uff0c,。]{2,8})",
            _job_at,
        ),
        (
            r"(?:跳槽到了?|入职了?|加入了?)(?P<v>[^\s\uff0c,。去]{2,8}?)(?=[\uff0c,。]|$)|"
            r"去(?P<v2>[^\s\uff0c,。去]{2,8}?)(?:报到|入职)",
            _employer,
        ),
        (
            r"我们(?P<v>[\u4e00-\u9fff]{1,6}?(?:银行|行|集团|公司|医院|大学))(?=这|那|的|今年|最近|"
            r"要|在|又|也|每)",
            _employer,
        ),
        # Place
        (
            rf"我(?:现在|目前|已经|也)?(?:住在?|生活在|定居在?){place('v')}|我在{place('v2')}"
            rf"(?:住|生活|定居)|(?:我|我们|我家)(?:{WHEN}|已经|又)*(?:搬到|搬去|搬来|调到)了?"
            rf"{place('v3')}|把我调到{place('v4')}|(?:^|[\uff0c,])\s*现在住(?:在)?{place('v5')}",
            _residence,
        ),
        # Languages
        (
            rf"我的(?P<v>{ZH_LANGUAGES})(?:已经)?(?:全|都|基本)?(?P<gone>忘)|我(?:已经|现在)?(?:基本)?"
            rf"(?P<gone2>不会)(?:说|讲)(?P<v2>{ZH_LANGUAGES})了",
            _language,
        ),
        (
            rf"我(?:的)?(?:母语|第一语言)是(?P<v>{ZH_LANGUAGES})|(?P<v2>{ZH_LANGUAGES})带(?:点|一点|着)?"
            rf"口音|我(?:现在)?(?:也|还|只|都)?(?:会|能|可以)(?:说|讲|用)?(?:一点|些|点)?"
            rf"(?P<v3>{ZH_LANGUAGES})|我[^\uff0c,。]{{0,4}}?(?:辅修|主修|学|学习|自学)(?:了|过)?"
            rf"(?P<v4>{ZH_LANGUAGES})",
            _language,
        ),
        # Skills
        (
            rf"我(?:平时|现在|一直|也|主要|比较|经常|会|只会)*(?:写|用|会用|会写|会|懂|熟悉|精通|擅长|学过)"
            rf"{_tech_word('v')}|{_tech_word('v2')}我(?:算|还算|比较|挺|很|非常)?(?:熟|熟悉|精通|擅长|"
            r"在行)",
            _tech,
        ),
        (r"我(?:很|比较|特别|非常)?(?:擅长|精通)(?P<v>[\u4e00-\u9fff]{2,6})", _good_at),
        (
            rf"(?P<v>{ZH_INSTRUMENTS})我(?:已经|早就)?不(?P<gone>弹|拉|吹|打)了|我(?:已经)?不(?:再)?"
            rf"(?P<gone2>弹|拉|吹|打)(?P<v2>{ZH_INSTRUMENTS})了",
            _instrument,
        ),
        (
            rf"我(?:会|只会|也会|还会|平时|一直|从小)*{_PLAYS}(?P<v>{ZH_INSTRUMENTS})|"
            rf"(?:我|[\uff0c,]\s*)(?:现在|最近|也)?(?:改学|开始学|在学)(?P<v2>{ZH_INSTRUMENTS})",
            _instrument,
        ),
    )
)
"""Patterns of the Chinese profile statements and their rules."""
