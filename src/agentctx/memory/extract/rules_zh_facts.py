"""Chinese rules for the facts people state most: name changes, family, work, city,
languages, skills, health, diet, plans, projects and how to answer. They run before the
general rules of :mod:`rules_zh` and use the same subjects as the English ones
(``language: 粤语``, ``family: daughter: 朵朵``, ``allergy: 花生``, ``diet``), so a fact
said in either language is one memory.
"""

from __future__ import annotations

import re
from dataclasses import replace

from agentctx.events import Event
from agentctx.memory.extract.rules_zh import zh_value
from agentctx.memory.extract.statements import CORRECTS, Found, Groups, Rule
from agentctx.memory.extract.vocabulary import (
    TECH,
    TECH_AS_WRITTEN,
    ZH_CONDITIONS,
    ZH_DIET_REGIMES,
    ZH_INSTRUMENTS,
    ZH_LANGUAGES,
    ZH_RELATION_PATTERN,
    ZH_RELATIONS,
    ZH_TIME,
)
from agentctx.memory.models import MemoryKind

_RETRACTED = {"retracted": True}
_SURNAMES = (
    "王李张刘陈杨赵黄周吴徐孙胡朱高林何郭马罗梁宋郑谢韩唐冯于董萧程曹袁邓许傅沈曾彭吕苏卢蒋蔡"
    "贾丁魏薛叶阎余潘杜戴夏钟汪田任姜范方石姚谭廖邹熊金陆郝孔白崔康毛邱秦江史顾侯邵孟龙万段钱"
    "汤尹黎易常武乔贺赖龚文"
)
_END = r"(?=[\uff0c,。.\uff01!\uff1f?\uff1b;、\u2026\s]|$)"
_NAME = rf"(?P<v>[^\s\uff0c,。.\uff01!\uff1f?\uff1b;、\u2026“”\"]{{1,4}}){_END}"


# A place: two to four characters, then what follows a place in a sentence.
def _place(group: str) -> str:
    """A place named ``group``: two to four characters, then what follows a place."""
    return (
        rf"(?P<{group}>[\u4e00-\u9fff]{{2,4}}?)(?=[\uff0c,。.\uff01!\uff1f?\uff1b;、\u2026\s]|了|这|"
        r"那|的|住|生活|工作|上班|玩|旅行|旅游|度假|出差|看|逛|已|快|好|留学|读书|上学|开会|参加|"
        r"探亲|见|拜访|过年|[一二三四五六七八九十几\d]|$)"
    )


_TIME = rf"(?:{ZH_TIME}|上个?月|上周|去年|最近|前段时间|刚|刚刚)"
_GENERIC_ORGS = frozenset({"公司", "银行", "医院", "大学", "学校", "集团", "行", "单位", "家里"})
_GENERIC_ORG_START = ("一家", "一个", "家", "某", "这家", "那家", "这个", "那个", "个")


def _third(text: str) -> str:
    """A clause in the user's words, in the third person."""
    return re.sub(r"我(?!们)", "用户", re.sub(r"我们", "用户和家人", text)).strip()


def _clause(match: Groups) -> str:
    """The clause the match is in, from the match's start to the clause's end."""
    rest = match.string[match.start :]
    return re.split(r"[\uff0c,。.\uff01!\uff1f?\uff1b;\u2026]", rest, maxsplit=1)[0]


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
    if name is None:
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


def _employer(match: Groups, event: Event) -> Found | None:
    org = match["v"].strip()
    if org in _GENERIC_ORGS or org.startswith(_GENERIC_ORG_START):
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
    if finding is None or finding.startswith("的"):
        return None
    return Found(MemoryKind.FACT, f"医生说用户{finding}", f"health: {finding}", 0.7, value=finding)


def _regime(match: Groups, event: Event) -> Found:
    regime = match["v"]
    if match["gone"]:
        content = "用户不再吃素了" if "素" in regime else f"用户不再{regime}了"
        if "素" not in regime:
            content = f"用户放弃了{regime}"
        return Found(MemoryKind.PREFERENCE, content, "diet", 0.8, value=regime, data=_RETRACTED)
    text = _third(_clause(match))
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
    place = match["v"]
    when = match["when"] or ""
    planned = re.search(r"打算|计划|准备|要|报了|订了", match.group())
    if not (when or planned) or place.startswith(("哪", "那", "这")):
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
        MemoryKind.EPISODIC, _third(_clause(match)), f"plan: {topic}", 0.7, value=what, data=data
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
        _third(sentence),
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
    content = _third(match.string[match.start : end] + tail)
    return Found(MemoryKind.PROJECT, content, f"project: {name.lower()}", 0.8, value=name)


def _project_dropped(match: Groups, event: Event) -> Found:
    name = match["v"].strip('“”"《》「」')
    return Found(
        MemoryKind.PROJECT,
        _third(_clause(match)),
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


def _tech_word(group: str) -> str:
    """A programming language or tool's name, as a group named ``group``."""
    return rf"(?P<{group}>[A-Za-z][A-Za-z0-9+#.]*)"


_PLAYS = r"(?P<verb>弹|拉|吹|打)"
ZH_FACT_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = tuple(
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
            rf"我(?:的)?(?P<rel>儿子|女儿|孩子|闺女)(?P<name>[\u4e00-\u9fff]{{2}})?(?P<when>{_TIME})"
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
            rf"我(?:现在|目前|已经|也)?(?:住在?|生活在|定居在?){_place('v')}|我在{_place('v2')}"
            rf"(?:住|生活|定居)|(?:我|我们|我家)(?:{_TIME}|已经|又)*(?:搬到|搬去|搬来|调到)了?"
            rf"{_place('v3')}|把我调到{_place('v4')}|(?:^|[\uff0c,])\s*现在住(?:在)?{_place('v5')}",
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
            rf"我(?:们)?(?P<when>{_TIME})?(?:打算|计划|准备|要)?(?P<when2>{_TIME})?(?:去|到){_place('v')}",
            _trip,
        ),
        (rf"我报了(?P<when>{_TIME})?的?(?P<v>[^\uff0c,。]{{2,8}})", _plan),
        (
            rf"我们?的(?P<what>婚礼|婚宴|毕业典礼|手术|考试|面试|搬家|旅行|答辩|生日会|派对)(?:定)?"
            rf"(?:在|是)(?P<v>{_TIME})",
            _dated,
        ),
        (rf"(?P<v>[^\s\uff0c,。我]{{2,6}}?)我?改到了?(?P<when>{_TIME})", _rescheduled),
        (
            rf"(?P<when>{_TIME})(?:要|就要|准备)?(?:去)?(?:做|动)(?P<v>[^\uff0c,。]{{0,8}}?手术)",
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
"""Patterns of the Chinese fact statements and their rules."""
