"""First-person clauses: the parts of a user's sentence that may state something about
the user, in English and Chinese.

The rules (:mod:`agentctx.memory.extract.rules`) read the sentence shapes they know;
people state the same facts in many more. A sentence the rules find nothing in is cut
into clauses here, and a clause is kept as a *candidate statement* when it:

* speaks of the user: an ``I``/``my``/``we`` clause (``我``/``我们``), a family member
  of the user's ("my daughter…", "我女儿…"), or a sentence that leaves the speaker
  out the way chat does ("started as a designer last week", "跳槽了");
* states rather than asks, asks for, wonders or imagines: no question, no request
  ("can you…", "I need…", "帮我…"), no hypothetical ("if I…", "如果…"), no hedge
  ("I think", "maybe"), and not about someone else ("my friend is a plumber");
* is short enough to be one statement.

Which attribute a kept clause is about (a job, a city, an allergy…) and whether it
states one at all is for :mod:`agentctx.memory.extract.categories` to decide. The
clause becomes the memory's text in the third person, so a memory holds the user's own
words and never a value the user did not say.
"""

# ruff: noqa: RUF001 - Chinese punctuation on purpose

from __future__ import annotations

import re
from dataclasses import dataclass

from agentctx.memory.extract import chinese, english
from agentctx.memory.extract.statements import words

_CJK = re.compile(r"[\u4e00-\u9fff]")
_MIN_WORDS, _MAX_WORDS = 2, 24
_MIN_CHARS_ZH, _MAX_CHARS_ZH = 3, 40

# English ----------------------------------------------------------------------------------

_EN_SPLIT = re.compile(
    r"(?<=[.!?])\s+|\s*[;:]\s*|,\s+(?!(?:calling it|called|named) )|\s+[-\u2013\u2014]+\s+|"
    r"\.{2,}\s*|\u2026\s*|"
    r"\s+(?=(?:but|and|so|because|cause|cuz|though|although|while|since) (?:I|I'm|I've|"
    r"we|we're|my)\b)|\s+(?=and (?:have|has|had|need|needs|want|wants|got|gotta) )|"
    r"\s+\b(?:btw|lol|haha+|lmao|tbh)\b|"
    # An emoji ends a thought the way a full stop does ("got married 💍 now I have to…").
    r"\s*[\u2600-\u27bf\U0001f300-\U0001faff]+\s*",
    re.IGNORECASE,
)
_EN_LEAD = re.compile(
    r"^(?:(?:and|but|so|also|ok|okay|well|oh|yeah|yes|anyway|update|hmm+|um+|ah+|btw|nah|"
    r"no|yep|yup|haha+|lol|omg)\b[\s,]*)+",
    re.IGNORECASE,
)
_EN_SPEAKER = re.compile(r"\b(?:I|I'm|Im|I've|Ive|I'd|I'll|my|we|we're|we've|our)\b", re.I)
# Irregular verbs in the past: a clause that starts with one has left its speaker out
# ("gave up on Spanish", "swam 25m today") as surely as one in -ed does.
_IRREGULAR_PAST = words(
    """
    got went came took made left began became grew knew met ran sold bought thought
    told said found felt gave kept lost paid sent spent taught won wrote drove flew ate
    fell forgot quit split set put cut broke chose spoke woke wore hung held led brought
    caught fought sought built bent lent meant dealt slept swam sang drank rode hid
    """
)
# Words after "user" that are no verb in the base form: "user is", "user will", "user's".
_NOT_BASE_VERBS = _IRREGULAR_PAST | words(
    """
    is was has had will would can could should may might must did does and or no not
    others also just still never always really only now then too
    """
)

# The speaker left out, as chat does: a clause that starts with a verb in the past, or
# one of the verbs facts are stated with.
_EN_DROPPED_SPEAKER = re.compile(
    r"^(?:just |finally |recently |also |now |still |officially )?(?:[a-z]+ed|"
    + "|".join(sorted(_IRREGULAR_PAST))
    + r"|been|gone|speak|know|work|live|love|hate|prefer|run|running|starting|moving|"
    r"switching|training)\b|"
    # A verb in -ing before its object: "building a treehouse", "doing a bootcamp".
    r"^(?:just |now |still |currently |also )?[a-z]{2,}ing (?:a|an|the|my|our|some|on|to|for|"
    r"with|up|out|in|at)\b",
    re.IGNORECASE,
)
_EN_FAMILY = (
    r"(?:wife|husband|partner|boyfriend|girlfriend|fianc[eé]e?|son|daughter|kids?|child|"
    r"children|baby|mom|mum|mother|dad|father|parents?|brother|sister|siblings?|twins?|"
    r"grand(?:ma|pa|mother|father|son|daughter)|(?:mother|father|sister|brother)-in-law|"
    r"aunt|uncle|cousin|niece|nephew|stepson|stepdaughter)"
)
# Someone else's facts: "my friend is a plumber", "my boss lives in Leeds".
_EN_OTHERS = re.compile(
    r"^(?:my|our|a|his|her|their|your) (?:best |old |new |close )?(?:friend|buddy|mate|"
    r"pal|coworker|co-worker|colleague|boss|manager|neighbou?r|roommate|flatmate|"
    r"housemate|teacher|doctor|classmate|client|customer|landlord|team|lead|cat|dog)s?\b|"
    r"^(?:he|she|they|you|it|this|that|there|these|those)\b",
    re.IGNORECASE,
)
_EN_NOT_STATED = re.compile(
    r"\b(?:can you|could you|would you|will you|help me|i need|we need|i want|i'd like|"
    r"i would like|looking for|i wonder|wondering|any (?:tips|ideas|advice)|"
    r"should i|should we|if i|if we|i wish|i'd|i would|i hope|imagine|someday|"
    r"some day|one day|i might|dream of|dreaming|thinking about|thinking of|considering|"
    r"what if|suppose|pretend|i think|i guess|i feel like|i bet|maybe|probably|perhaps|"
    r"not sure|no idea|jk|kidding|let me|let's|remind me|tell me|give me|show me|"
    r"i have a question|i forgot to|i'll|we'll|i will|we will|just in case|question)\b|"
    # Thanks said as such, not "thank you cards".
    r"^(?:thanks|thank you)\b|\b(?:thanks|thank you)\s*$|"
    # What "it" or "them" is, the clause does not say ("I love it", "we did it!"); far
    # into a clause it is a new thought's subject ("vegan since summer so it's…").
    r"\b(?:it|that|this|them|him|her|one|too)\s*$|^(?:\S+\s+){0,3}(?<!calling )(?:it|them)\b|"
    r"^(?:what|how|why|which|where|when|who|is|are|do|does|did|can|could|would|should|"
    r"will|any|please)\b",
    re.IGNORECASE,
)
_EN_CHANGE = re.compile(
    r"\b(?:instead|switched|switching|changed|moved (?:it |the \w+ )?to|pushed (?:it )?(?:back )?"
    r"to|postponed|rescheduled|renamed|rebranded|now called|new name|replaced|swapped)\b",
    re.IGNORECASE,
)
_EN_WE_ARE = re.compile(r"\b(we|they|you)'re\b", re.IGNORECASE)
_EN_NEGATION = re.compile(
    r"\b(?:no longer|not any ?more|anymore|any more|stopped|quit|quitting|gave up|given "
    r"up|giving up|cancel(?:l)?ed|called off|broke up|split up|moved out|dropped|sold|"
    r"shelved|scrapped|ditched|left|over it|done with)\b",
    re.IGNORECASE,
)

# A standing request of how to answer: "keep your answers short", "use metric units".
_EN_ANSWER_REQUEST = re.compile(
    r"\b(?:please |pls |always |only |just |from now on,? )*(?:use|keep|answer|reply|respond|"
    r"write|talk|switch to|stop using|stop|give)\b[^,.;!?]{0,60}?\b(?:answers?|repl(?:y|ies)|"
    r"responses?|units?|metric|imperial|celsius|fahrenheit|english|chinese|spanish|french|"
    r"german|bullets?|bullet points|short|brief|shorter|detailed|longer|emojis?|formal|"
    r"casual)\b(?:[^,.;!?]{0,30})",
    re.IGNORECASE,
)

_ASPECTS = [
    (name, re.compile(pattern))
    for name, pattern in (
        ("units", r"units?|metric|imperial|celsius|fahrenheit|公制|英制|单位"),
        ("language", r"english|chinese|spanish|french|german|中文|英文|汉语|英语"),
        ("length", r"short|brief|shorter|detailed|longer|简短|短|详细|长"),
        ("format", r"bullets?|list|列表|要点"),
        ("tone", r"emojis?|formal|casual|正式|随意"),
    )
]

# Chinese ----------------------------------------------------------------------------------

_ZH_ANSWER_REQUEST = re.compile(
    r"(?:请|以后|之后|麻烦)?(?:都|一律|尽量)?(?:用|说|回答|回复)[^，。！？]{0,12}(?:回答|回复|中文|英文|"
    r"简短|详细|列表|要点|公制|英制)[^，。！？]{0,8}|(?:回答|回复)[^，。！？]{0,6}(?:简短|短|详细|长)"
    r"[^，。！？]{0,4}"
)

_ZH_SPLIT = re.compile(r"[，,。！!？?；;：:、~～]|\u2026+|\.{2,}|——|\s+")
_ZH_LEAD = re.compile(r"^(?:对了|那个|嗯+|啊|哦|噢|哈+|其实|不过|但是|而且|所以|然后|另外|还有)+")
_ZH_FAMILY = (
    r"(?:女儿|儿子|孩子|小孩|宝宝|老公|老婆|丈夫|妻子|爱人|对象|男朋友|女朋友|未婚[夫妻]|"
    r"爸爸|妈妈|父亲|母亲|爸妈|父母|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆|姥姥|姥爷|"
    r"公公|婆婆|岳父|岳母|家人)"
)
_ZH_SPEAKER = re.compile(rf"我|^{_ZH_FAMILY}")
# The speaker left out: a clause that starts with a verb of change or a time, or states a
# practice with its duration ("韩语学了三个月了").
_ZH_DROPPED_SPEAKER = re.compile(
    r"[^，。]{1,6}?(?:学|练|做|干|用|玩|弹|滑|跑|写)了[一二三四五六七八九十两几半\d]+(?:个)?多?(?:年|个月|月|周|星期)|"
    r"^(?:刚|已经|终于|最近|现在|目前|上个?月|下个?月|下周[一二三四五六日]?|明天|后天|今年|去年|明年)?"
    r"(?:[一二三四五六七八九十\d]{1,3}号)?(?:跳槽|辞职|离职|入职|转行|"
    r"改行|搬家|搬到|搬去|换了|改成|改到|改为|开始|戒了|报了|报名|订了|定了|考过|学会|在学|"
    r"查出|检查出|体检|减脂|减肥|在减|"
    r"在做|在写|在开发|在搞|改学|改练|改用|换成|换到|分手|结婚|订婚|怀孕|确诊|取消|住在|住|"
    r"在[^，。]{2,10}(?:住|做|当|上班|工作|读书)|去[^，。]{2,10}(?:报到|上班|入职|工作))"
)
_ZH_OTHERS = re.compile(
    r"我(?:的)?(?:朋友|同事|室友|邻居|老板|领导|上司|同学|客户|老师|房东|闺蜜|哥们|队友|猫|狗)|"
    r"^(?:他|她|它|他们|她们|你|您|这|那|有人)"
)
_ZH_NOT_STATED = re.compile(
    r"帮我|给我|请你|你能|你可以|能不能|可不可以|可以吗|要不要|是不是|会不会|有没有|推荐|告诉我|"
    r"麻烦|让我|要我|叫我(?!小)|想|如果|要是|假如|万一|想当|梦想|希望|也许|可能|大概|应该|我觉得|我想问|我想知道|"
    r"吗$|呢$|吧$|什么|怎么|为什么|哪|几|多少|谢谢|好的|好吧"
)
_ZH_CHANGE = re.compile(r"改到|改成|改为|换成|换到|改名|推迟到|延期到|提前到|挪到|重命名|不叫")
_ZH_NEGATION = re.compile(
    r"不再|再也不|已经不|没再|不[^，。]{0,6}了$|取消|黄了|分手|离职|辞职|放弃|卖了|全忘|忘光|"
    r"好了$|痊愈|跳槽了$|搬家了$|换工作了$"
)


@dataclass(frozen=True, slots=True)
class Clause:
    """A candidate statement: the clause as the user wrote it, in the third person, and
    whether it says a fact stopped being true ("I'm no longer…", "不再…")."""

    text: str
    third_person: str
    negated: bool
    chinese: bool
    changes: bool = False  # "moved to August", "renamed it", "改到八月": it replaces a value
    request: bool = False  # a standing request of how to answer ("keep answers short")
    # About a family member ("my brother is vegan"): it states who they are to the user,
    # or a plan of theirs, never the user's own diet, job or city.
    family: bool = False

    @property
    def answer_aspect(self) -> str | None:
        """What a request of how to answer is about (``units``, ``language``, ``length``,
        ``format``, ``tone``): one value each, a later request replaces the earlier."""
        if not self.request:
            return None
        lowered = self.text.lower()
        return next((name for name, cue in _ASPECTS if cue.search(lowered)), "style")


def first_person_clauses(sentence: str) -> list[Clause]:
    """The clauses of ``sentence`` that may state something about its speaker, and
    requests of how to be answered ("keep your answers short", "请用中文回答")."""
    request = _answer_request(sentence)
    if request is not None:
        return [request]
    if _CJK.search(sentence):
        return [c for c in (_zh_clause(p) for p in _ZH_SPLIT.split(sentence)) if c is not None]
    return [c for c in (_en_clause(p) for p in _EN_SPLIT.split(sentence) if p) if c is not None]


def _answer_request(sentence: str) -> Clause | None:
    """A standing request of how to be answered, as a clause of the user's."""
    text = sentence.strip(" .!~")
    if _CJK.search(text):
        match = _ZH_ANSWER_REQUEST.search(text)
        if match is None:
            return None
        asked = match.group(0)
        rewritten = f"用户希望：{chinese.third_person(asked)}"
        return Clause(asked, rewritten, negated=False, chinese=True, request=True)
    match = _EN_ANSWER_REQUEST.search(text)
    if match is None or len(text.split()) > _MAX_WORDS:
        return None
    asked = match.group(0)
    return Clause(asked, f"User asks: {asked}", negated=False, chinese=False, request=True)


def _en_clause(part: str) -> Clause | None:
    text = _EN_LEAD.sub("", part.strip(" \"'.!~*()")).strip(" ,")
    words = text.split()
    if not _MIN_WORDS <= len(words) <= _MAX_WORDS or text.endswith("?"):
        return None
    if _EN_OTHERS.search(text) or _EN_NOT_STATED.search(text):
        return None
    family = re.match(rf"(?:my|our) {_EN_FAMILY}\b", text, re.IGNORECASE) is not None
    if not (family or _EN_SPEAKER.search(text) or _EN_DROPPED_SPEAKER.match(text)):
        return None
    rewritten = _agreeing(english.third_person(_EN_WE_ARE.sub(r"\1 are", text)))
    if rewritten.lower().startswith("their "):
        rewritten = "User's " + rewritten[len("their ") :]
    elif not rewritten.lower().startswith("user") and _EN_DROPPED_SPEAKER.match(text):
        doing = re.match(r"(?:\w+ )?\w+ing\b", rewritten) is not None
        rewritten = f"User is {rewritten}" if doing else f"User {rewritten}"
    rewritten = rewritten[0].upper() + rewritten[1:]
    return Clause(
        text,
        rewritten,
        bool(_EN_NEGATION.search(text)),
        chinese=False,
        changes=bool(_EN_CHANGE.search(text)),
        family=family,
    )


_USER_VERB = re.compile(
    r"\b(user (?:(?:[a-z]+ly|no longer|never|still|also|just|always|only|often|sometimes|"
    r"even|now) )?)([a-z]+(?:'[a-z]+)?)\b",
    re.IGNORECASE,
)


def _agreeing(text: str) -> str:
    """``text`` with "user" agreeing with its verb: "user work" -> "user works"."""

    def third(match: re.Match[str]) -> str:
        verb = match.group(2)
        lower = verb.lower()
        if lower in _NOT_BASE_VERBS or lower.endswith(("s", "ed", "ing", "'s", "n't")):
            return match.group(0)
        if lower in {"have", "do", "go"}:
            return match.group(1) + {"have": "has", "do": "does", "go": "goes"}[lower]
        if lower.endswith(("sh", "ch", "x", "o")):
            return match.group(1) + verb + "es"
        if re.search(r"[^aeiou]y$", lower):
            return match.group(1) + verb[:-1] + "ies"
        return match.group(1) + verb + "s"

    return _USER_VERB.sub(third, text)


def _zh_clause(part: str) -> Clause | None:
    text = _ZH_LEAD.sub("", part.strip())
    if not _MIN_CHARS_ZH <= len(text) <= _MAX_CHARS_ZH or not _CJK.search(text):
        return None
    if _ZH_OTHERS.search(text) or _ZH_NOT_STATED.search(text):
        return None
    if not (_ZH_SPEAKER.search(text) or _ZH_DROPPED_SPEAKER.match(text)):
        return None
    family = re.match(rf"(?:我们?(?:的|家)?)?{_ZH_FAMILY}", text) is not None
    rewritten = chinese.third_person(text)
    if re.match(_ZH_FAMILY, text):
        rewritten = f"用户的{rewritten}"
    elif not rewritten.startswith("用户"):
        rewritten = f"用户{rewritten}" if _ZH_DROPPED_SPEAKER.match(text) else rewritten
    return Clause(
        text,
        rewritten,
        bool(_ZH_NEGATION.search(text)),
        chinese=True,
        changes=bool(_ZH_CHANGE.search(text)),
        family=family,
    )


__all__ = ["Clause", "first_person_clauses"]
