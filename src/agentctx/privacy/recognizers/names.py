"""Person names, only where the text itself marks them as names.

Names cannot be told from ordinary words by shape, so this recognizer looks only
behind explicit markers: "姓名:张三", "我叫李四", "name: John Smith",
"my name is John Smith", "his daughter's name is Chloe", "call me Dave", "we called him
Kai", "Dear Mr. Smith", "我儿子叫小凯", "取名叫朵朵", and before Chinese forms of
address: "张三同学", "李四先生", "王女士". A thing's name is no person's: "we named it
Apollo" and "the file name is Report" are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agentctx.privacy.findings import EntityType, Finding
from agentctx.privacy.recognizers.context import casefolded
from agentctx.privacy.shape import TextShape

_SINGLE_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任"
    "沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔"
    "向汤常温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌"
    "毕单季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦"
    "麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂全佟应臧闵苟邬边卞姬师和仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩"
    "明佘池查麻苑迟邝"
)
_COMPOUND_SURNAMES = (
    "欧阳",
    "司马",
    "诸葛",
    "上官",
    "东方",
    "皇甫",
    "慕容",
    "司徒",
    "令狐",
    "夏侯",
    "尉迟",
    "长孙",
    "宇文",
    "公孙",
    "端木",
)
# Given-name characters: any Han character except those that usually start the next word.
_GIVEN = r"(?:(?![的是在和与了也都就说要去来今年岁先女同老师])[\u4e00-\u9fff])"
_CHINESE = re.compile(
    r"(?:姓名|名字|我叫|本人|联系人|收件人|收货人|患者|学生姓名)[ \t]*[:\uff1a]?[ \t]*"
    rf"((?:{'|'.join(_COMPOUND_SURNAMES)}|[{_SINGLE_SURNAMES}]){_GIVEN}{{1,2}})"
)
_SURNAME = rf"(?:{'|'.join(_COMPOUND_SURNAMES)}|[{_SINGLE_SURNAMES}])"
_GIVEN_NAME = re.compile(f"^{_SURNAME}")  # what is left of a full name is its given name
_CHINESE_FULL_NAME = re.compile(rf"{_SURNAME}{_GIVEN}{{1,2}}")


def chinese_full_name(value: str) -> bool:
    """Whether ``value`` is, as a whole, a Chinese full name: a surname, then one or two
    given-name characters ("张伟", "欧阳娜娜")."""
    return _CHINESE_FULL_NAME.fullmatch(value) is not None


# A surname, up to two given-name characters, then a form of address. Chinese has no
# spaces, so the name must start the text, follow a non-Han character, or follow a word
# that usually precedes a name (联系, 给, 和 …): "最高同学" is no "高同学".
_CUES = (
    "同学",
    "先生",
    "女士",
    "小姐",
    "老师",
    "师傅",
    "阿姨",
    "经理",
    "医生",
    "律师",
    "教授",
    "总监",
)
_BEFORE_NAME = "给请和与是问找叫向对跟把被让由及系位"
_CUED = re.compile(
    rf"(?:(?<![\u4e00-\u9fff])|(?<=[{_BEFORE_NAME}]))({_SURNAME}{_GIVEN}{{0,2}}?)"
    rf"(?:{'|'.join(_CUES)})"
)
# Words that start with a surname character and come before a form of address.
_NOT_NAMES = frozenset(
    (
        *("明天", "今天", "昨天", "后天", "每天", "全体", "各位", "所有", "新来", "老"),
        *("高中", "初中", "小学", "大学", "中学", "男", "女", "两位", "三位", "几位"),
        *("这位", "那位", "该", "本"),
    )
)
_NAME = r"[A-Z][a-z]+(?:[\-'][A-Z][a-z]+)?"
# Capitalized words that follow "call her" without being a name ("call her Monday").
_NOT_A_NAME = (
    r"(?!(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|February|March"
    r"|April|June|July|August|September|October|November|December|Today|Tomorrow|Tonight"
    r"|Back|Later|Now|Again|Please|Thanks)\b)"
)
_ENGLISH = re.compile(
    # A person's name said as one: "my name is", "his son's name is", "her name's".
    r"(?:(?i:\b(?:my|his|her|their|our|your)(?:[ \t]+[a-z]+'s)?[ \t]+name(?:[ \t]+is|'s)"
    r"|\bname[ \t]*[:\uff1a]|\bnamed|\bsigned|\bdear"
    # Naming a person (never "it": "we named it Apollo" names a thing).
    r"|\b(?:call|calls|called|calling|name|names|named|naming)[ \t]+(?:me|him|her|them))[ \t]+"
    rf"{_NOT_A_NAME}(?:(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.?[ \t]+)?({_NAME}(?:[ \t]+{_NAME}){{0,2}})"
    rf"|\b(?:Mr|Mrs|Ms|Dr|Prof)\.?[ \t]+({_NAME}(?:[ \t]+{_NAME})?))"
)
# Somebody close, then "is called": "我儿子叫小凯", "我女儿的名字叫朵朵", and "取名叫…".
_KIN = (
    "儿子|女儿|孩子|宝宝|闺女|老婆|老公|妻子|丈夫|太太|爱人|爸爸|妈妈|父亲|母亲|哥哥|姐姐|弟弟|妹妹"
    "|男朋友|女朋友|对象|朋友|同事|室友|同学|老板|上司"
)
# Characters that end a name said after 叫: particles, pronouns, what usually follows.
_AFTER_NAME = "的是在和与了也都就说要去来今年岁他她它们吧呢啊呀哦嘛很还"
_KIN_NAME = re.compile(
    rf"(?:(?:{_KIN})(?:的名字|的小名|的大名)?(?:叫做|名叫|叫)|(?:取名|起名|名字)(?:叫做|叫|为))"
    rf"[ \t]*((?:(?![{_AFTER_NAME}])[\u4e00-\u9fff]){{1,3}})"
)


# Most texts hold none of the markers: substring tests skip the regex scans for them.
# Every match of ``_ENGLISH`` holds one of them, case-folded ("naming" does not hold
# "name"); "mr"/"ms"/"dr" only with the dot, space or tab that follows them ("address"
# holds "dr").
_ENGLISH_MARKERS = (
    "name",
    "naming",
    "call",
    "signed",
    "dear",
    "mrs",
    *(f"{title}{after}" for title in ("mr", "ms", "dr") for after in ". \t"),
    "prof",
)


class PersonRecognizer:
    """Chinese and English person names behind explicit name markers."""

    name = "person"
    entity_types: tuple[str, ...] = (EntityType.PERSON,)

    @staticmethod
    def possible(shape: TextShape) -> bool:
        """Whether ``shape`` can hold a marked name: an English one is a capital followed
        by a small letter (``_NAME``, ASCII), a Chinese one needs Han characters. A
        tool's JSON holds thousands of short strings with neither (paths, keys, ids)."""
        return shape.has(b"Aa") or not shape.text.isascii()

    def analyze(self, text: str) -> list[Finding]:
        """Every marked person name in ``text``."""
        findings: list[Finding] = []
        # Chinese markers and names are Han characters: an ASCII text holds none.
        if not text.isascii():
            for m in _CHINESE.finditer(text):
                findings.append(Finding(EntityType.PERSON, m.start(1), m.end(1), 0.85, self.name))
            if "叫" in text or "名" in text:
                for m in _KIN_NAME.finditer(text):
                    findings.append(
                        Finding(EntityType.PERSON, m.start(1), m.end(1), 0.8, self.name)
                    )
            if any(map(text.__contains__, _CUES)):
                for m in _CUED.finditer(text):
                    if m.group(1) in _NOT_NAMES:
                        continue
                    findings.append(
                        Finding(EntityType.PERSON, m.start(1), m.end(1), 0.75, self.name)
                    )
        for m in _english_matches(text):
            group = 1 if m.group(1) is not None else 2
            score = 0.85 if group == 1 else 0.7
            findings.append(
                Finding(EntityType.PERSON, m.start(group), m.end(group), score, self.name)
            )
        return findings + self._said_again(text, findings) if findings else findings

    def _said_again(self, text: str, marked: list[Finding]) -> list[Finding]:
        """The other places ``text`` names the people its markers named ("My name is Dave
        Smith. Dave likes tea.", "我儿子叫安安, 安安三岁了"): the whole name, and each
        part of it that can stand alone (an English name's words of three letters or
        more, a Chinese given name of two characters or more)."""
        forms: set[str] = set()
        for finding in marked:
            name = text[finding.start : finding.end]
            forms.add(name)
            if name.isascii():
                forms.update(word for word in name.split() if len(word) >= 3)
            else:
                given = _GIVEN_NAME.sub("", name, count=1)
                if len(given) >= 2:
                    forms.add(given)
        taken = [(f.start, f.end) for f in marked]
        again: list[Finding] = []
        for form in sorted(forms, key=len, reverse=True):  # "Dave Smith" before "Dave"
            edge = r"\b" if form.isascii() else ""
            for m in re.finditer(f"{edge}{re.escape(form)}{edge}", text):
                if any(m.start() < end and start < m.end() for start, end in taken):
                    continue  # within a name already found
                taken.append((m.start(), m.end()))
                again.append(Finding(EntityType.PERSON, m.start(), m.end(), 0.7, self.name))
        return again


def _english_matches(text: str) -> Iterator[re.Match[str]]:
    """``_ENGLISH.finditer(text)``, run only on the lines that hold a marker.

    A tool's output (a source file, a log) holds "name" or "call" on some of its lines,
    and the pattern, with no literal to skip ahead with, costs about 60 µs per KB it
    scans. Its spaces are ``[ \t]``, so a match never crosses a line end: scanning each
    line that holds a marker, between its line ends (``\\b`` and the look-behinds still
    see the characters around it), finds what scanning the whole text finds.
    """
    folded = casefolded(text)
    if not text.isascii() and (len(folded) != len(text) or "\u0131" in folded):
        # Folding moved the markers' positions ("ß" -> "ss"), or the text holds a dotless
        # i, which the pattern takes for an "i" and folding keeps as it is: scan it all.
        yield from _ENGLISH.finditer(text)
        return
    if not any(map(folded.__contains__, _ENGLISH_MARKERS)):
        return
    hits: list[int] = []
    for marker in _ENGLISH_MARKERS:
        i = folded.find(marker)
        while i >= 0:
            hits.append(i)
            i = folded.find(marker, i + 1)
    line_end = -1
    for hit in sorted(hits):
        if hit < line_end:
            continue  # on the line just scanned
        line_start = text.rfind("\n", 0, hit) + 1
        line_end = text.find("\n", hit)
        if line_end < 0:
            line_end = len(text)
        yield from _ENGLISH.finditer(text, line_start, line_end)
