# ruff: noqa: RUF001 - Chinese templates use full-width punctuation on purpose.
"""The labelled corpus of ``agentctx bench redact``: planted PII and hard negatives.

Every text is built from a skeleton holding numbered slots; each slot is filled with a
generated value whose exact character span is recorded, so the labels are correct by
construction (``text[start:end] == value``). Texts come in three kinds:

* ``sentence``: chat-like English (Faker ``en_US``) and Chinese (Faker ``zh_CN``) lines;
* ``json``: serialized tool outputs (nested dicts and lists, ``ensure_ascii=False``);
* every text may also carry hard negatives: look-alikes that must *not* be flagged.

Hard negatives: order numbers (订单号), dates, prices, version strings, timestamps
(ISO 8601 and 10-digit Unix seconds), UUIDs, 10-digit numbers with no context, 18-character
resident IDs with a wrong check digit, and 16-digit card-like numbers failing Luhn.
UUIDs are negatives: they name requests and objects, not people, and masking them would
break the tool outputs an agent needs to read back.

The same seed gives the same corpus; nothing reaches the network.
"""

from __future__ import annotations

import ipaddress
import json
import random
import re
import string
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any, Literal

from agentctx.errors import MissingExtra
from agentctx.privacy.findings import EntityType

if TYPE_CHECKING:
    from faker import Faker

Lang = Literal["en", "zh"]
Kind = Literal["sentence", "json"]

#: The entity types the corpus plants (PERSON is not planted: names appear as filler).
PLANTED_TYPES: tuple[str, ...] = (
    EntityType.EMAIL,
    EntityType.PHONE,
    EntityType.CN_RESIDENT_ID,
    EntityType.STUDENT_ID,
    EntityType.EMPLOYEE_ID,
    EntityType.CREDIT_CARD,
    EntityType.IP_ADDRESS,
    EntityType.URL_CREDENTIALS,
    EntityType.SECRET,
)

NEGATIVE_KINDS: tuple[str, ...] = (
    "order_number",
    "date",
    "price",
    "version",
    "timestamp",
    "uuid",
    "bare_10_digits",
    "cn_id_bad_check",
    "card_bad_luhn",
)


@dataclass(frozen=True, slots=True)
class Span:
    """One labelled span: ``text[start:end] == value``; ``label`` is an entity type or
    a hard-negative kind."""

    label: str
    start: int
    end: int
    value: str


@dataclass(frozen=True, slots=True)
class CorpusText:
    """One text of the corpus with its planted entities and hard negatives."""

    text: str
    lang: Lang
    kind: Kind
    entities: tuple[Span, ...] = ()
    negatives: tuple[Span, ...] = ()


@dataclass(frozen=True, slots=True)
class Corpus:
    """A generated corpus and the seed that reproduces it."""

    seed: int
    texts: tuple[CorpusText, ...]

    @property
    def entity_count(self) -> int:
        """Planted entities across all texts."""
        return sum(len(t.entities) for t in self.texts)

    @property
    def negative_count(self) -> int:
        """Hard negatives across all texts."""
        return sum(len(t.negatives) for t in self.texts)

    @property
    def utf8_bytes(self) -> int:
        """Size of all texts in UTF-8."""
        return sum(len(t.text.encode("utf-8")) for t in self.texts)


# ---------------------------------------------------------------- check digits


_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


def cn_id_check_digit(first17: str) -> str:
    """The ISO 7064 MOD 11-2 check character of a resident ID's first 17 digits."""
    total = sum(int(d) * w for d, w in zip(first17, _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11]


def cn_id_valid(value: str) -> bool:
    """Whether ``value`` is an 18-character resident ID with a real birth date and check."""
    if not re.fullmatch(r"\d{17}[\dX]", value):
        return False
    try:
        born = date(int(value[6:10]), int(value[10:12]), int(value[12:14]))
    except ValueError:
        return False
    return born.year >= 1900 and cn_id_check_digit(value[:17]) == value[17]


def luhn_valid(digits: str) -> bool:
    """Whether a digit string passes the Luhn check."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def luhn_complete(prefix: str) -> str:
    """``prefix`` plus the one digit that makes it pass Luhn."""
    for d in "0123456789":
        if luhn_valid(prefix + d):
            return prefix + d
    raise AssertionError("unreachable: one digit always completes a Luhn number")


# ---------------------------------------------------------------- value generators

# Real administrative division codes (Beijing Dongcheng, Shanghai Xuhui, Shenzhen Nanshan, ...).
_REGIONS = (
    "110101", "110105", "310104", "310115", "440305", "440106", "510107",
    "330106", "320102", "420106", "610113", "370202", "500103", "120104",
)  # fmt: skip
# (IIN prefix, length): Visa, Mastercard (51-55 and 2221-2720), Amex, Discover, JCB, UnionPay.
_CARD_IINS: tuple[tuple[str, int], ...] = (
    ("4", 16), ("51", 16), ("53", 16), ("55", 16), ("2221", 16), ("2720", 16),
    ("34", 15), ("37", 15), ("6011", 16), ("65", 16), ("3528", 16), ("3589", 16),
    ("62", 16), ("6222", 16), ("6228", 19), ("6212", 19),
)  # fmt: skip
_CN_MOBILE_PREFIXES = ("13", "15", "17", "18", "19", "14", "16")
_SAFE_PUNCT = "!#%*-_.+"


class _Gen:
    """Value generators sharing one ``random.Random`` and two seeded Fakers."""

    def __init__(self, seed: int) -> None:
        try:
            from faker import Faker  # noqa: PLC0415 - optional, bench extra only
        except ImportError as exc:
            raise MissingExtra("bench", "faker") from exc
        self.rng = random.Random(seed)
        self.en: Faker = Faker("en_US")
        self.zh: Faker = Faker("zh_CN")
        self.en.seed_instance(seed)
        self.zh.seed_instance(seed + 1)

    def digits(self, n: int) -> str:
        return "".join(self.rng.choice(string.digits) for _ in range(n))

    def token(self, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    # -- entities

    def email(self, lang: Lang) -> str:
        user = self.en.user_name() if lang == "en" else self.zh.user_name()
        domain = self.rng.choice(
            [self.en.free_email_domain(), self.en.domain_name(), "qq.com", "163.com", "corp.cn"]
        )
        tail = self.digits(self.rng.randint(0, 3))
        # A separator only before digits: a local part may not end with a dot.
        sep = self.rng.choice(["", ".", "_", "+"]) if tail else ""
        return f"{user}{sep}{tail}@{domain}"

    def phone(self, lang: Lang) -> str:
        if lang == "zh" or self.rng.random() < 0.4:
            body = self.rng.choice(_CN_MOBILE_PREFIXES) + self.digits(9)
            a, b, c = body[:3], body[3:7], body[7:]
            return self.rng.choice(
                [body, f"+86 {a} {b} {c}", f"+86-{a}-{b}-{c}", f"{a}-{b}-{c}", f"{a} {b} {c}",
                 f"+86{body}", f"(+86) {body}"]
            )  # fmt: skip
        # NANP area codes: N[0-8]X, never an N11 service code.
        area = str(self.rng.randint(2, 9)) + str(self.rng.randint(0, 8)) + self.digits(1)
        if area[1:] == "11":
            area = area[0] + "10"
        exchange = str(self.rng.randint(2, 9)) + self.digits(2)
        line = self.digits(4)
        return self.rng.choice(
            [f"({area}) {exchange}-{line}", f"{area}-{exchange}-{line}",
             f"+1 {area} {exchange} {line}", f"{area}.{exchange}.{line}",
             f"+1-{area}-{exchange}-{line}"]
        )  # fmt: skip

    def birth_date(self) -> date:
        return date(1950, 1, 1) + timedelta(days=self.rng.randrange(365 * 56))

    def cn_id(self) -> str:
        first17 = self.rng.choice(_REGIONS) + self.birth_date().strftime("%Y%m%d") + self.digits(3)
        return first17 + cn_id_check_digit(first17)

    def student_id(self) -> str:
        year = str(self.rng.randint(2015, 2025))
        return self.rng.choice(
            [year + self.digits(6), "S" + year + self.digits(4), year[2:] + self.digits(8)]
        )

    def employee_id(self) -> str:
        return self.rng.choice(
            ["E" + self.digits(5), "A-" + self.digits(6), self.digits(7), "EMP" + self.digits(6)]
        )

    def card(self) -> str:
        prefix, length = self.rng.choice(_CARD_IINS)
        number = luhn_complete(prefix + self.digits(length - len(prefix) - 1))
        style = self.rng.random()
        if style < 0.4:
            return number
        sep = " " if style < 0.8 else "-"
        groups = (4, 6, 5) if length == 15 else tuple([4] * (length // 4) + [length % 4])
        parts, at = [], 0
        for size in groups:
            if size:
                parts.append(number[at : at + size])
                at += size
        return sep.join(parts)

    def ip(self) -> str:
        if self.rng.random() < 0.6:
            # Skip 0.x and 127.x: a detector may rightly treat them as non-addresses.
            first = self.rng.choice([n for n in range(1, 224) if n != 127])
            rest = (self.rng.randrange(256), self.rng.randrange(256), self.rng.randrange(1, 255))
            return ".".join(str(octet) for octet in (first, *rest))
        address = ipaddress.IPv6Address(
            (0x2001 << 112) | (self.rng.getrandbits(16) << 96) | self.rng.getrandbits(64)
        )
        return address.compressed if self.rng.random() < 0.6 else address.exploded

    def url_credentials(self) -> str:
        scheme = self.rng.choice(
            ["postgresql", "mysql", "redis", "https", "ftp", "amqp", "mongodb"]
        )
        user = self.en.user_name()
        password = self.token(self.rng.randint(8, 16), string.ascii_letters + string.digits + "-_")
        host = self.rng.choice([self.en.domain_name(), f"db{self.rng.randint(1, 9)}.internal"])
        port = self.rng.choice(["", f":{self.rng.randint(1024, 65535)}"])
        path = self.rng.choice(["/app", "/0", "/" + self.en.uri_path(), "/data/export"])
        return f"{scheme}://{user}:{password}@{host}{port}{path}"

    def secret(self) -> tuple[str, str]:
        """(value, how to present it): ``raw`` alone, ``password`` after ``password=``,
        ``api_key`` as a quoted JSON-ish value."""
        kind = self.rng.randrange(6)
        if kind == 0:
            return "sk-" + self.token(48), "raw"
        if kind == 1:
            return "sk-proj-" + self.token(40, string.ascii_letters + string.digits + "_-"), "raw"
        if kind == 2:
            return "ghp_" + self.token(36), "raw"
        if kind == 3:
            return "AKIA" + self.token(16, string.ascii_uppercase + string.digits), "raw"
        if kind == 4:
            pw = self.token(self.rng.randint(10, 18), string.ascii_letters + string.digits)
            return pw + self.rng.choice(_SAFE_PUNCT) + self.digits(2), "password"
        return self.token(32, "abcdef" + string.digits), "api_key"

    # -- hard negatives

    def negative(self, kind: str) -> str:
        rng = self.rng
        if kind == "order_number":
            while True:
                value = rng.choice(["2023", "2024", "2025"]) + self.digits(14)
                # Neither an ID's check digit nor a card's Luhn digit may happen to fit.
                if cn_id_check_digit(value[:17]) != value[17] and not luhn_valid(value):
                    return value
        if kind == "date":
            d = self.birth_date() + timedelta(days=365 * 20)
            return rng.choice(
                [d.isoformat(), f"{d.year}年{d.month}月{d.day}日", d.strftime("%m/%d/%Y")]
            )
        if kind == "price":
            amount = rng.randint(1, 99_999) + rng.randrange(100) / 100
            return rng.choice([f"¥{amount:,.2f}", f"${amount:,.2f}", f"USD {amount:.2f}"])
        if kind == "version":
            major, minor, patch = rng.randint(0, 30), rng.randint(0, 40), rng.randint(0, 200)
            return rng.choice(
                [f"v{major}.{minor}.{patch}", f"{major}.{minor}.{patch}",
                 f"{major}.{minor}.{patch}-rc{rng.randint(1, 5)}",
                 f"10.0.{rng.randint(10000, 26000)}.{rng.randint(1000, 9999)}"]
            )  # fmt: skip
        if kind == "timestamp":
            seconds = rng.randint(1_600_000_000, 1_800_000_000)
            if rng.random() < 0.5:
                return str(seconds)
            clock = f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
            return f"{self.birth_date().isoformat()}T{clock}Z"
        if kind == "uuid":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if kind == "bare_10_digits":
            return str(rng.randint(2, 9)) + self.digits(9)
        if kind == "cn_id_bad_check":
            good = self.cn_id()
            wrong = rng.choice([c for c in _ID_CHECK if c != good[17]])
            return good[:17] + wrong
        if kind == "card_bad_luhn":
            good = luhn_complete("4" + self.digits(14))
            bad = good[:15] + str((int(good[15]) + rng.randint(1, 9)) % 10)
            return " ".join(bad[i : i + 4] for i in range(0, 16, 4))
        raise ValueError(f"unknown negative kind {kind!r}")


# ---------------------------------------------------------------- skeletons

# A slot in a skeleton: ⟦n⟧ inside text; in JSON a slot may also stand for a raw number.
_SLOT = re.compile(r'"⟦R(\d+)⟧"|⟦(\d+)⟧')


@dataclass
class _Slots:
    """Values waiting to replace the slots of one skeleton."""

    values: list[tuple[str, str, bool]] = field(default_factory=list)  # (label, value, negative)

    def add(self, label: str, value: str, *, negative: bool = False, raw: bool = False) -> str:
        self.values.append((label, value, negative))
        return f"⟦{'R' if raw else ''}{len(self.values) - 1}⟧"


def _fill(skeleton: str, slots: _Slots, lang: Lang, kind: Kind) -> CorpusText:
    out: list[str] = []
    entities: list[Span] = []
    negatives: list[Span] = []
    at = 0
    length = 0
    for match in _SLOT.finditer(skeleton):
        out.append(skeleton[at : match.start()])
        length += match.start() - at
        index = int(match.group(1) or match.group(2))
        label, value, negative = slots.values[index]
        span = Span(label, length, length + len(value), value)
        (negatives if negative else entities).append(span)
        out.append(value)
        length += len(value)
        at = match.end()
    out.append(skeleton[at:])
    return CorpusText("".join(out), lang, kind, tuple(entities), tuple(negatives))


def _entity_phrase(g: _Gen, slots: _Slots, etype: str, lang: Lang) -> str:
    """A phrase presenting one entity of ``etype``, with the context words it needs."""
    rng = g.rng
    zh = lang == "zh"
    if etype == EntityType.EMAIL:
        slot = slots.add(etype, g.email(lang))
        return (
            f"邮箱是 {slot}" if zh else rng.choice([f"email me at {slot}", f"my address is {slot}"])
        )
    if etype == EntityType.PHONE:
        slot = slots.add(etype, g.phone(lang))
        return rng.choice([f"电话 {slot}", f"手机号：{slot}"]) if zh else f"call me on {slot}"
    if etype == EntityType.CN_RESIDENT_ID:
        slot = slots.add(etype, g.cn_id())
        return rng.choice([f"身份证号：{slot}", f"身份证 {slot}"]) if zh else f"Chinese ID {slot}"
    if etype == EntityType.STUDENT_ID:
        slot = slots.add(etype, g.student_id())
        return rng.choice([f"学号：{slot}", f"学号 {slot}"]) if zh else f"student ID: {slot}"
    if etype == EntityType.EMPLOYEE_ID:
        slot = slots.add(etype, g.employee_id())
        if zh:
            return rng.choice([f"工号 {slot}", f"工号：{slot}"])
        return rng.choice([f"employee number {slot}", f"employee ID {slot}"])
    if etype == EntityType.CREDIT_CARD:
        slot = slots.add(etype, g.card())
        return f"卡号 {slot}" if zh else rng.choice([f"card {slot}", f"charge {slot}"])
    if etype == EntityType.IP_ADDRESS:
        slot = slots.add(etype, g.ip())
        return f"来自 {slot} 的请求" if zh else f"requests from {slot}"
    if etype == EntityType.URL_CREDENTIALS:
        slot = slots.add(etype, g.url_credentials())
        return f"连接串 {slot}" if zh else f"connect with {slot}"
    value, how = g.secret()
    slot = slots.add(etype, value)
    if how == "password":
        return f"password={slot}"
    if how == "api_key":
        return f'"api_key": "{slot}"'
    return f"密钥 {slot}" if zh else f"the key is {slot}"


def _negative_phrase(g: _Gen, slots: _Slots, kind: str, lang: Lang) -> str:
    slot = slots.add(kind, g.negative(kind), negative=True)
    zh = lang == "zh"
    phrases = {
        "order_number": f"订单号：{slot}" if zh else f"order no. {slot}",
        "date": f"日期 {slot}" if zh else f"on {slot}",
        "price": f"价格 {slot}" if zh else f"it costs {slot}",
        "version": f"版本 {slot}" if zh else f"running version {slot}",
        "timestamp": f"时间戳 {slot}" if zh else f"at {slot}",
        "uuid": f"请求 {slot}" if zh else f"request {slot}",
        "bare_10_digits": f"共 {slot} 条" if zh else f"there were {slot} rows",
        "cn_id_bad_check": f"编号 {slot}" if zh else f"reference {slot}",
        "card_bad_luhn": f"样例 {slot}" if zh else f"sample {slot}",
    }
    return phrases[kind]


def _sentence(g: _Gen, types: Sequence[str], negs: Sequence[str], lang: Lang) -> CorpusText:
    slots = _Slots()
    clauses = [_entity_phrase(g, slots, t, lang) for t in types]
    clauses += [_negative_phrase(g, slots, n, lang) for n in negs]
    g.rng.shuffle(clauses)
    if lang == "zh":
        name, city = g.zh.name(), g.zh.city()
        opener = g.rng.choice(
            [f"你好，我是{name}，", f"{name}：麻烦帮我处理一下，", f"我在{city}，"]
        )
        text = opener + "，".join(clauses) + g.rng.choice(["。谢谢！", "。", "，尽快回复。"])
    else:
        name, company = g.en.name(), g.en.company()
        opener = g.rng.choice([f"Hi, {name} here: ", f"Quick note from {company}, ", "hey - "])
        text = opener + ", ".join(clauses) + g.rng.choice([". Thanks!", ".", ", asap please."])
    return _fill(text, slots, lang, "sentence")


_JSON_KEYS: dict[str, tuple[str, ...]] = {
    EntityType.EMAIL: ("email", "contact_email"),
    EntityType.PHONE: ("phone", "mobile"),
    EntityType.CN_RESIDENT_ID: ("id_card", "resident_id"),
    EntityType.STUDENT_ID: ("student_id",),
    EntityType.EMPLOYEE_ID: ("employee_id", "工号"),
    EntityType.CREDIT_CARD: ("card_number", "pan"),
    EntityType.IP_ADDRESS: ("client_ip", "remote_addr"),
    EntityType.URL_CREDENTIALS: ("dsn", "database_url"),
    EntityType.SECRET: ("api_key", "token", "password"),
}
_NEG_KEYS = {
    "order_number": "order_no", "date": "date", "price": "price", "version": "version",
    "timestamp": "ts", "uuid": "request_id", "bare_10_digits": "count",
    "cn_id_bad_check": "ref", "card_bad_luhn": "sample",
}  # fmt: skip


def _json_doc(g: _Gen, types: Sequence[str], negs: Sequence[str], lang: Lang) -> CorpusText:
    slots = _Slots()
    faker = g.zh if lang == "zh" else g.en
    record: dict[str, Any] = {"name": faker.name(), "city": faker.city()}
    notes: list[str] = []
    for etype in types:
        if g.rng.random() < 0.25:
            # Inside free text of a nested value, with its context words.
            notes.append(_entity_phrase(g, slots, etype, lang))
            continue
        key = g.rng.choice(_JSON_KEYS[etype])
        if etype == EntityType.SECRET:
            value, how = g.secret()
            # The key names what the value is: passwords under "password", keys elsewhere.
            key = "password" if how == "password" else g.rng.choice(("api_key", "token"))
        else:
            value = _value_for(g, etype, lang)
        record[key if key not in record else f"{key}_{len(record)}"] = slots.add(etype, value)
    meta: dict[str, Any] = {}
    for kind in negs:
        value = g.negative(kind)
        raw = value.isdigit() and not value.startswith("0")  # numbers stay JSON numbers
        meta[_NEG_KEYS[kind]] = slots.add(kind, value, negative=True, raw=raw)
    doc: dict[str, Any] = {
        "tool": g.rng.choice(["crm.lookup", "db.query", "search_users", "read_file"]),
        "status": "ok",
        "result": {"records": [record], "meta": meta},
    }
    if notes:
        doc["result"]["notes"] = ("，" if lang == "zh" else "; ").join(notes)
    return _fill(json.dumps(doc, ensure_ascii=False), slots, lang, "json")


def _value_for(g: _Gen, etype: str, lang: Lang) -> str:
    makers: dict[str, Callable[[], str]] = {
        EntityType.EMAIL: lambda: g.email(lang),
        EntityType.PHONE: lambda: g.phone(lang),
        EntityType.CN_RESIDENT_ID: g.cn_id,
        EntityType.STUDENT_ID: g.student_id,
        EntityType.EMPLOYEE_ID: g.employee_id,
        EntityType.CREDIT_CARD: g.card,
        EntityType.IP_ADDRESS: g.ip,
        EntityType.URL_CREDENTIALS: g.url_credentials,
    }
    return makers[etype]()


# Student and employee IDs are bare digit strings whose only signal is the context word;
# in JSON the key is that context, so they go there as values of ``student_id``/``工号`` keys.


def generate_corpus(seed: int = 0, entities: int = 10_000) -> Corpus:
    """A corpus with at least ``entities`` planted entities, spread evenly over the types.

    Texts alternate between English and Chinese and between sentences and JSON tool
    outputs; about every other text also carries one or two hard negatives.
    """
    if entities < 1:
        raise ValueError("entities must be at least 1")
    g = _Gen(seed)
    rng = g.rng
    texts: list[CorpusText] = []
    planted = 0
    negative_turn = 0
    index = 0
    while planted < entities:
        count = min(rng.randint(1, 3), entities - planted)
        types = [PLANTED_TYPES[(planted + i) % len(PLANTED_TYPES)] for i in range(count)]
        negs: list[str] = []
        for _ in range(rng.choice([0, 1, 1, 2])):
            negs.append(NEGATIVE_KINDS[negative_turn % len(NEGATIVE_KINDS)])
            negative_turn += 1
        lang: Lang = "en" if index % 2 == 0 else "zh"
        make = _sentence if (index // 2) % 3 != 2 else _json_doc
        texts.append(make(g, types, negs, lang))
        planted += count
        index += 1
    return Corpus(seed, tuple(texts))
