# Chinese test text uses full-width punctuation on purpose.
# ruff: noqa: RUF001
"""The built-in recognizers on English and Chinese text: what they flag and what they must not."""

from __future__ import annotations

import datetime as dt
import random
import re

import pytest

from agentctx.privacy.findings import EntityType, Finding, Recognizer
from agentctx.privacy.recognizers import (
    CreditCardRecognizer,
    EmailRecognizer,
    EmployeeIDRecognizer,
    IPAddressRecognizer,
    PersonRecognizer,
    PhoneRecognizer,
    ResidentIDRecognizer,
    SecretRecognizer,
    StudentIDRecognizer,
    URLCredentialsRecognizer,
    default_recognizers,
)
from agentctx.privacy.recognizers.context import (
    THRESHOLD,
    KeywordGate,
    casefolded,
    glued,
    glued_before,
    keyword_pattern,
)
from agentctx.privacy.recognizers.finance import luhn_valid
from agentctx.privacy.recognizers.identity import resident_id_valid
from agentctx.privacy.recognizers.secrets import high_entropy, shannon_entropy

VALID_ID = "11010519491231002X"  # the check character of 11010519491231002 is X


def flagged(recognizer: Recognizer, text: str) -> list[str]:
    """The substrings ``recognizer`` flags at or above the threshold."""
    out = []
    for f in recognizer.analyze(text):
        assert isinstance(f, Finding)
        assert 0.0 <= f.score <= 1.0
        assert f.recognizer == recognizer.name
        assert f.entity_type in recognizer.entity_types
        if f.score >= THRESHOLD:
            out.append(text[f.start : f.end])
    return out


def all_flagged(text: str) -> list[tuple[str, str]]:
    """(entity type, substring) for every recognizer, names included."""
    return [
        (f.entity_type, text[f.start : f.end])
        for r in default_recognizers(names=True)
        for f in r.analyze(text)
        if f.score >= THRESHOLD
    ]


def test_default_recognizers_satisfy_the_protocol() -> None:
    plain = default_recognizers()
    assert all(isinstance(r, Recognizer) for r in plain)
    # Names are on by default (only where the text marks them as names).
    assert any(isinstance(r, PersonRecognizer) for r in plain)
    without = default_recognizers(names=False)
    assert EntityType.PERSON not in {t for r in without for t in r.entity_types}
    assert len({r.name for r in plain}) == len(plain)


# --- email ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mail john.doe+tag@example.com today", ["john.doe+tag@example.com"]),
        ("邮箱：zhang.san@qq.com，谢谢", ["zhang.san@qq.com"]),
        ("write to a_b@mail.example.co.uk.", ["a_b@mail.example.co.uk"]),
        ("image@2x.png and lodash@4.17.21 and user@localhost", []),
        ("postgresql://admin:pa55@db.example.com/app", []),
    ],
)
def test_email(text: str, expected: list[str]) -> None:
    assert flagged(EmailRecognizer(), text) == expected


# --- phone ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("电话：+86 138-1234-5678，请回电", ["+86 138-1234-5678"]),
        ("手机13812345678", ["13812345678"]),
        ("call 0086 139 1234 5678 now", ["0086 139 1234 5678"]),
        ("Call me at (415) 555-2671.", ["(415) 555-2671"]),
        ("London office +44 20 7946 0958", ["+44 20 7946 0958"]),
        ("tel: 415 555 2671", ["415 555 2671"]),
        ("座机 010-62751234", ["010-62751234"]),
        # North American numbers by structure, whatever the separator; area codes not
        # (yet) assigned are still someone's number.
        ("call me on 415.555.0132, thanks", ["415.555.0132"]),
        ("call me on +1 415 555 0132", ["+1 415 555 0132"]),
        ('"phone": "+1-729-946-3028"', ["+1-729-946-3028"]),
        ("call me on (451) 971-8154.", ["(451) 971-8154"]),
        ("reach me at 1-415-555-0132", ["1-415-555-0132"]),
        ("from Europe dial 0044 20 7946 0958", ["0044 20 7946 0958"]),
    ],
)
def test_phone_positive(text: str, expected: list[str]) -> None:
    assert flagged(PhoneRecognizer(), text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "订单号 2021001234567 已发货",
        "meeting on 2024-01-15, report 20240115",
        "price ¥1,299.00 or $1,299.99",
        "upgrade to 1.2.3.4 or v2.10.1",
        "reference 4155552671 in the log",  # ten digits, no context, no phone shape
        "2021001234",
        "value 138123456789 is too long",  # twelve digits starting like a mobile
        "x13812345678y",
        "running version 1.234.567.8901",  # a NANP shape next to a version word
        "dial 911-555-1234 for the demo",  # N11 area codes are service numbers
        "(411) 555-0100",
        # "00" or "+" then 0 is no international prefix: no country code starts with 0;
        # nor is one followed by fewer than six digits.
        "Can you check the status of order #0000123 and ticket #0004567?",
        "batch +0 12345678 done",
        "order #0012345 and #0023456 shipped",
    ],
)
def test_phone_negative(text: str) -> None:
    assert flagged(PhoneRecognizer(), text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A phone word introduces the next number only: not one after a clause break...
        ("电话 15703257598，共 7067846483 条", ["15703257598"]),
        ("我在波市，电话 17647471582，时间戳 1671540366。", ["17647471582"]),
        ("phone 13812345678, then 4929 8852 3078 9786 rows", ["13812345678"]),
        # ... nor one after another number or another label.
        ("电话 17647471582 时间戳 1671540366", ["17647471582"]),
        ("电话 147 3830 8734，学号 2221083782", ["147 3830 8734"]),
        ("电话 199-4125-4213 学号：2023934648", ["199-4125-4213"]),
        # The word still reaches a number a few characters on in its own clause.
        ("联系电话：0755 8888 1234", ["0755 8888 1234"]),
    ],
)
def test_phone_context_stays_in_its_clause(text: str, expected: list[str]) -> None:
    assert flagged(PhoneRecognizer(), text) == expected


def test_phone_context_lowers_and_raises() -> None:
    phone = PhoneRecognizer()
    (plain,) = phone.analyze("13812345678")
    (called,) = phone.analyze("联系电话 13812345678")
    (ordered,) = phone.analyze("订单 13812345678")
    assert called.score > plain.score > ordered.score
    assert ordered.score < THRESHOLD


# --- resident ID ---------------------------------------------------------------------


def test_resident_id_validation() -> None:
    assert resident_id_valid(VALID_ID)
    assert resident_id_valid(VALID_ID.lower())
    assert not resident_id_valid("110105194912310021")  # wrong check digit
    assert not resident_id_valid("910105194912310028")  # region must start 1-8
    # Same body with an impossible date (Feb 30) and the matching check digit.
    body = "11010519490230002"
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    check = "10X98765432"[sum(int(c) * w for c, w in zip(body, weights, strict=True)) % 11]
    assert not resident_id_valid(body + check)
    # A birth date in the future is not plausible.
    assert not resident_id_valid(VALID_ID, today=dt.date(1940, 1, 1))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"身份证号：{VALID_ID}，请核对", [VALID_ID]),
        (f"ID card {VALID_ID.lower()}.", [VALID_ID.lower()]),
        (f"订单{VALID_ID}", [VALID_ID]),  # still valid: check digit and date
        ("身份证号：110105194912310021", []),  # wrong check digit
        (f"{VALID_ID}0", []),  # part of a longer number
    ],
)
def test_resident_id(text: str, expected: list[str]) -> None:
    assert flagged(ResidentIDRecognizer(), text) == expected


# --- student / employee IDs ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("学号：2021001234", ["2021001234"]),
        ("我的学号是 2021001234。", ["2021001234"]),
        ("学生证号:S20210012", ["S20210012"]),
        ("Student ID: 2021001234", ["2021001234"]),
        ("student number 20210012 enrolled", ["20210012"]),
        ("2021001234", []),
        ("the id is 2021001234", []),
        ("学号：无，电话：13812345678", []),  # the clause ended before the number
        ("学号：ABCDEFG1", []),  # fewer than four digits
        ("学号：2021", []),  # too short
    ],
)
def test_student_id(text: str, expected: list[str]) -> None:
    assert flagged(StudentIDRecognizer(), text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("工号：E1234567", ["E1234567"]),
        ("员工编号 880012", ["880012"]),
        ("Employee ID: EMP-1234 no, employee_id=EMP12345", ["EMP12345"]),
        ("STAFF ID 00123456", ["00123456"]),
        ("E1234567", []),
    ],
)
def test_employee_id(text: str, expected: list[str]) -> None:
    assert flagged(EmployeeIDRecognizer(), text) == expected


# --- credit cards --------------------------------------------------------------------


def test_luhn() -> None:
    assert luhn_valid("4111111111111111")
    assert not luhn_valid("4111111111111112")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("card 4111 1111 1111 1111 exp 12/29", ["4111 1111 1111 1111"]),
        ("卡号：6222021234567894", ["6222021234567894"]),
        ("amex 3782-822463-10005", ["3782-822463-10005"]),
        ("mastercard 5555555555554444", ["5555555555554444"]),
        ("2-series 2223003122003222", ["2223003122003222"]),
        ("4111111111111111", ["4111111111111111"]),  # no context: lower but flagged
        ("card 4111 1111 1111 1112", []),  # fails Luhn
        ("订单号 2021001234567", []),
        ("card 1234567890123452", []),  # Luhn-valid, unknown prefix
        ("4111-1111-1111-1111-2222", []),  # part of a longer dashed number
        # 19-digit UnionPay numbers: four groups of four and one of three.
        ("卡号 6228 4524 9069 0090 060，尽快", ["6228 4524 9069 0090 060"]),
        ('"pan": "6212-4524-0526-9593-595"', ["6212-4524-0526-9593-595"]),
        ("charge 6228010211675416491, ok", ["6228010211675416491"]),
        # A card followed by a short number: the card alone.
        ("card 4111 1111 1111 1111 12 times", ["4111 1111 1111 1111"]),
        # A price in the previous clause says nothing about the card.
        ("it costs $32,564.41, charge 3434-568606-54326", ["3434-568606-54326"]),
        ("price $12 4111111111111111", []),  # ... but one in the same clause does
    ],
)
def test_credit_card(text: str, expected: list[str]) -> None:
    assert flagged(CreditCardRecognizer(), text) == expected


def test_credit_card_scores() -> None:
    cards = CreditCardRecognizer()
    (bare,) = cards.analyze("4111111111111111")
    (named,) = cards.analyze("credit card 4111111111111111")
    (ordered,) = cards.analyze("订单 4111111111111111")
    assert named.score > bare.score > THRESHOLD > ordered.score


# --- IP addresses --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("server 192.168.1.10, retry", ["192.168.1.10"]),
        ("IP地址：10.0.0.254。", ["10.0.0.254"]),
        ("resolver 8.8.8.8", ["8.8.8.8"]),  # single-digit octets with an IP word
        ("addr 2001:db8::8a2e:370:7334 up", ["2001:db8::8a2e:370:7334"]),
        ("link fe80::1%eth0 and ::ffff:192.0.2.1", ["fe80::1%eth0", "::ffff:192.0.2.1"]),
        ("version 1.2.3.4", []),
        ("版本 10.20.30.40", []),
        ("v1.2.3.4 and 1.2.3.4.5", []),
        ("released 1.2.3.4", []),
        ("999.1.1.1 and 01.2.3.4", []),
        ("at 12:30:45 in std::vector and abc::def", []),
        ("MAC 00:1A:2B:3C:4D:5E", []),
        # Version or price words in a neighbouring clause do not count against an address.
        ("requests from 48.231.118.12, running version 2.1", ["48.231.118.12"]),
        ("版本 3.10.193-rc2，来自 82.240.107.242 的请求", ["82.240.107.242"]),
        ("价格 $80,266.45，来自 175.197.219.80 的请求", ["175.197.219.80"]),
        ("来自 40.23.39.184 的请求，版本 v2.36", ["40.23.39.184"]),
        # In the same clause they still do.
        ("running 10.20.30.40 version", []),
        ("price $5 for 203.0.113.7", []),
    ],
)
def test_ip_address(text: str, expected: list[str]) -> None:
    assert flagged(IPAddressRecognizer(), text) == expected


# --- URL credentials -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DATABASE_URL=postgresql://admin:s3cr3t@db.example.com/app", ["admin:s3cr3t"]),
        ("连接 redis://default:p@ss@cache:6379/0", ["default:p@ss"]),
        ("https://example.com:8080/path and git@github.com:org/repo", []),
        ("ssh://git@example.com/repo", []),
    ],
)
def test_url_credentials(text: str, expected: list[str]) -> None:
    assert flagged(URLCredentialsRecognizer(), text) == expected


# --- secrets -------------------------------------------------------------------------

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dGhpc2lzYXNpZ25hdHVyZQ"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "OPENAI_API_KEY sk-proj-abcdefghijklmnopqrstuvwx1234",
            ["sk-proj-abcdefghijklmnopqrstuvwx1234"],
        ),
        ("use ghp_" + "a1B2" * 9 + " please", ["ghp_" + "a1B2" * 9]),
        ("AWS AKIAIOSFODNN7EXAMPLE.", ["AKIAIOSFODNN7EXAMPLE"]),
        ("slack xoxb-1234567890-abcdefghij", ["xoxb-1234567890-abcdefghij"]),
        ("gitlab glpat-abcdefghij0123456789", ["glpat-abcdefghij0123456789"]),
        ("google AIza" + "Sy" + "A1b2C3d4" * 4 + "xyz", ["AIza" + "Sy" + "A1b2C3d4" * 4 + "x"]),
        (f"Authorization: Bearer {JWT}", [JWT]),
        ("Authorization: Bearer abcDEF123456ghiJKL789", ["abcDEF123456ghiJKL789"]),
        (f"key file:\n{PEM}\n", [PEM]),
        ("password=hunter2xyz! next", ["hunter2xyz!"]),
        ('{"db_password": "abc"}', ["abc"]),
        ("密码：123456，请保管", ["123456"]),
        ("口令是 letmein", ["letmein"]),
        ('"api_key": "a8F3kd93JfnW02LmQ7xZ"', ["a8F3kd93JfnW02LmQ7xZ"]),
        ("密钥 Zq9vK2mN8xR4tY7pL3wB", ["Zq9vK2mN8xR4tY7pL3wB"]),
        # A value assigned to a key name counts even when short or not very random.
        ("API-KEY=value123 here", ["value123"]),
        ("export OPENAI_API_KEY=abcd1234", ["abcd1234"]),
        ("x-api-key: hunter22secret", ["hunter22secret"]),
        ("client_secret='s3cr3tvalue'", ["s3cr3tvalue"]),
        ('auth_token="x9f8e7d6c5"', ["x9f8e7d6c5"]),
        ("密钥：Zq9v2K", ["Zq9v2K"]),
    ],
)
def test_secret_positive(text: str, expected: list[str]) -> None:
    assert flagged(SecretRecognizer(), text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "the key insight is that caching helps",
        "token count: 12345",
        "api_key: aaaaaaaaaaaaaaaaaaaaaaaa",  # long but not random
        "primary key abcdefghijklmnopqrstuv",  # letters only
        "password: ******",
        "password=${DB_PASSWORD}",
        "password: null",
        "a sk-short token",
        "mask-abcdefghijklmnopqrstuvwxyz012",  # "sk-" inside a word
        "secret_name=my-db-creds",  # a name that only starts like a key name
        "token: expired",  # a token name needs letters and digits
        "next_page_token=abc",  # too short
        "secret: true",
        "OPENAI_API_KEY=$OPENAI_KEY",  # a reference to the key, not the key
    ],
)
def test_secret_negative(text: str) -> None:
    assert flagged(SecretRecognizer(), text) == []


def test_entropy() -> None:
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)
    assert high_entropy("a8F3kd93JfnW02LmQ7xZ")
    assert not high_entropy("a8F3kd93")  # too short
    assert not high_entropy("abab1abab1abab1abab1")  # repetitive


# --- names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("姓名：张三，性别：男", ["张三"]),
        ("你好，我叫李四。", ["李四"]),
        ("收件人 欧阳娜娜", ["欧阳娜娜"]),
        ("name: John Smith", ["John Smith"]),
        ("Hi, my name is Mary Jane Watson.", ["Mary Jane Watson"]),
        ("Dear Mr. Smith,", ["Smith"]),
        ("张三和李四去了公园", []),  # no marker
        ("John Smith wrote the report", []),
        ("name: agentctx", []),
        # A person named as one, in the ways people do it in chat.
        ("His name is Kai.", ["Kai"]),
        ("my son's name is Leo", ["Leo"]),
        ("her name's Lily", ["Lily"]),
        ("Call me Dave.", ["Dave"]),
        ("We called him Kai after my grandfather.", ["Kai"]),
        ("we named her Lily", ["Lily"]),
        ("我儿子叫小凯，今年六岁", ["小凯"]),
        ("我女儿的名字叫朵朵", ["朵朵"]),
        ("我们给他取名叫小凯", ["小凯"]),
        # The same person named again in the text, unmarked.
        ("我儿子叫安安，安安三岁了", ["安安", "安安"]),
        ("My name is Dave Smith. Dave likes tea.", ["Dave Smith", "Dave"]),
        ("收件人 欧阳娜娜，娜娜的电话", ["欧阳娜娜", "娜娜"]),
        # A thing's name, a day, or no name at all.
        ("we named it Apollo. Apollo rocks", []),
        ("the file name is Report", []),
        ("call her Monday", []),
        ("Call me back tomorrow", []),
        ("这个项目叫阿波罗", []),
        ("他叫什么", []),
        # Markers the substring test once missed: "naming" holds no "name", a tab after a title.
        ("we are naming her Alice", ["Alice"]),
        ("Mr\tSmith called", ["Smith"]),
        # A marker on one line of a long output, and one said on the line after it.
        ("x = 1\n" * 400 + "# author: my name is Dave Smith\n" + "y = 2\n" * 400, ["Dave Smith"]),
        ("def name():\n    Mr. Smith", ["Smith"]),
    ],
)
def test_person(text: str, expected: list[str]) -> None:
    assert flagged(PersonRecognizer(), text) == expected


# --- everything together -------------------------------------------------------------


def test_mixed_document_offsets() -> None:
    text = (
        f"用户张三（学号：2021001234，身份证 {VALID_ID}）的邮箱是 zs@example.com，"
        "手机 138-1234-5678。Card 4111 1111 1111 1111 on server 10.1.2.3; "
        "password=hunter2. 订单号 2021001234567，2024-01-15，¥1,299.00，v2.10.1。"
    )
    # Two recognizers may find the same ID (checksum and label): the analyzer keeps one.
    found = set(all_flagged(text))
    assert sorted(found) == sorted(
        [
            (EntityType.STUDENT_ID, "2021001234"),
            (EntityType.CN_RESIDENT_ID, VALID_ID),
            (EntityType.EMAIL, "zs@example.com"),
            (EntityType.PHONE, "138-1234-5678"),
            (EntityType.CREDIT_CARD, "4111 1111 1111 1111"),
            (EntityType.IP_ADDRESS, "10.1.2.3"),
            (EntityType.SECRET, "hunter2."),
        ]
    )


def test_plain_prose_has_no_findings() -> None:
    text = (
        "The agent booked 2 tickets for 2024-01-15 at 10:30, total $1,299.99 "
        "(order 2021001234567). "
        "系统版本 v2.10.1，价格 ¥1,299.00，编号 2021001234，日期 20240115。"
    ) * 20
    assert all_flagged(text) == []


# ------------------------------------------------------------ fast paths pinned


def _reference_keyword_pattern(words: tuple[str, ...], space: str = r"[\s_\-]*") -> str:
    # The earlier, ungrouped form of keyword_pattern: one look-back per word.
    firsts: set[str] = set()
    alternatives: list[str] = []
    for word in sorted(set(words), key=len, reverse=True):
        first, rest = word[0], re.escape(word[1:]).replace(r"\ ", space)
        firsts.update({first.lower(), first.upper()})
        edge = r"(?<![A-Za-z].)" if first.isascii() and first.isalpha() else ""
        alternatives.append(rf"(?<={re.escape(first)}){edge}{rest}")
    charset = "".join(re.escape(c) for c in sorted(firsts))
    return rf"[{charset}](?i:{'|'.join(alternatives)})"


KEYWORD_SETS = [
    ("api_key", "api-key", "apikey", "secret", "token", "key", "credential", "auth", "密钥"),
    ("password", "passwd", "passphrase", "pwd", "密码", "口令"),
    ("工号", "员工号", "员工编号", "职工号", "employee id", "employee no", "staff id", "staff no"),
    ("学号", "学生证号", "student id", "student number", "student no", "student #"),
]


@pytest.mark.parametrize("words", KEYWORD_SETS)
def test_grouped_keyword_pattern_finds_what_the_ungrouped_one_did(words: tuple[str, ...]) -> None:
    rng = random.Random(7)
    pieces = [*words, *(w.upper() for w in words), *(w.title() for w in words)]
    pieces += ["a", "K", "s", "x", " ", "_", "-", "\n", "1", "员", ":", "e", "no", "discard"]
    # Letters that match ASCII ones case-insensitively but fold differently (or longer).
    pieces += ["\u0131", "\u017f", "\u212a", "\u0130", "\u00df"]
    pieces += [
        w.replace("i", "\u0131").replace("s", "\u017f").replace("k", "\u212a") for w in words
    ]
    fast = re.compile(keyword_pattern(words))
    slow = re.compile(_reference_keyword_pattern(words))
    gate = KeywordGate(words)
    for _ in range(600):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        expected = [m.span() for m in slow.finditer(text)]
        assert [m.span() for m in fast.finditer(text)] == expected
        # The gate's search by fragments finds the same matches as a full scan.
        assert [m.span() for m in gate.finditer(fast, text)] == expected


def test_keyword_gate_never_misses_a_keyword() -> None:
    words = EmployeeIDRecognizer._words
    gate = KeywordGate(words)
    # "员工号" contains "工号" and "employee no" starts with "employee": both are implied.
    assert gate.fragments == ("employee", "staff", "员工编号", "工号")
    pattern = re.compile(keyword_pattern(words))
    for text in [
        "EMPLOYEE_ID: A123456",
        "Staff-No 12345678",
        "员工编号：20201234",
        "职工号 1234567",
    ]:
        assert pattern.search(text) is not None
        assert gate.present(casefolded(text))
    assert not gate.present(casefolded("the team met on Tuesday; order 20201234"))
    assert EmployeeIDRecognizer().analyze("the team met on Tuesday; 工作 20201234") == []


def test_casefolded_is_cached_per_text() -> None:
    first = "Employee ID A1234567"
    assert casefolded(first) == "employee id a1234567"
    assert casefolded(first) is casefolded(first)
    assert casefolded("STRASSE ß") == "strasse ss"  # another text: folded afresh


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("live key sk_live_" + "a1B2c3D4" * 3, ["sk_live_" + "a1B2c3D4" * 3]),
        ("restricted rk_test_" + "Zz09" * 5, ["rk_test_" + "Zz09" * 5]),
        ("session ASIA" + "ABCDEFGH12345678", ["ASIA" + "ABCDEFGH12345678"]),
        ("pat github_pat_" + "A1b2" * 6, ["github_pat_" + "A1b2" * 6]),
        ("API-KEY: Zq9vK2mN8xR4tY7pL3wB", ["Zq9vK2mN8xR4tY7pL3wB"]),
        ("PASSWD: s3cr3t!", ["s3cr3t!"]),
    ],
)
def test_secret_triggers_cover_every_shape(text: str, expected: list[str]) -> None:
    assert flagged(SecretRecognizer(), text) == expected


def test_secret_finds_nothing_without_triggers() -> None:
    # No known prefix, no keyword: high-entropy strings alone are not secrets.
    assert SecretRecognizer().analyze("commit a8F3kd93JfnW02LmQ7xZ merged by 张三") == []


def test_resident_id_checksum_on_other_unicode_digits() -> None:
    # "\d" also matches full-width digits; those take the slow path and agree with it.
    wide = VALID_ID[0] + "".join(chr(ord(c) + 0xFEE0) for c in VALID_ID[1:17]) + VALID_ID[17]
    assert resident_id_valid(wide) == resident_id_valid(VALID_ID)
    broken = VALID_ID[:16] + ("1" if VALID_ID[16] != "1" else "2") + VALID_ID[17]
    assert not resident_id_valid(broken)


def test_glued_means_an_ascii_letter_or_digit_alongside() -> None:
    text = "a1 x\uff11y \u4e2d12\u4e2d"  # U+FF11 is a full-width one
    assert glued(text, 1, 2)  # "1" right after "a"
    assert glued(text, 4, 5)  # the full-width one, between "x" and "y"
    assert not glued(text, 3, 4)  # "x": a space before, a full-width digit after
    assert not glued(text, 8, 10)  # "12" between Han characters
    assert not glued(text, 0, len(text))
    assert glued_before(text, 1) and not glued_before(text, 0) and not glued_before(text, 3)


def test_keyword_gate_does_not_miss_a_dotted_capital_i() -> None:
    """U+0130 matches "i" case-insensitively but folds to two characters."""
    from agentctx.privacy.recognizers.secrets import SecretRecognizer

    plain = SecretRecognizer().analyze("credential: x9Fk2LmQ8rT4vW7zA1bC")
    dotted = SecretRecognizer().analyze("credent\u0130al: x9Fk2LmQ8rT4vW7zA1bC")
    assert len(plain) == 1
    assert [(f.start, f.end, f.entity_type) for f in dotted] == [
        (f.start, f.end, f.entity_type) for f in plain
    ]
