"""Operators: placeholders (English and Chinese), masking, keyed hashing, reversible encryption."""

from __future__ import annotations

import re

import pytest
from pydantic import SecretStr

from agentctx.errors import AgentCtxError, ConfigError
from agentctx.privacy.config import KEY_ENV, RedactionConfig
from agentctx.privacy.findings import Finding
from agentctx.privacy.operators import (
    DecryptionError,
    EncryptOperator,
    HashOperator,
    Labels,
    MaskOperator,
    OperatorSet,
    ReplaceOperator,
    decrypt_tokens,
)

KEY = "tenant-key-0123456789abcdef"
OTHER_KEY = "another-tenant-key-9876543210"
TEXT = "mail ann@example.com, phone 13812345678, id 11010519491231002X"
FINDINGS = [
    Finding("EMAIL", 5, 20, 0.9, "t"),
    Finding("PHONE", 28, 39, 0.9, "t"),
    Finding("CN_RESIDENT_ID", 44, 62, 0.9, "t"),
]


def test_findings_cover_the_planted_values() -> None:
    assert [TEXT[f.start : f.end] for f in FINDINGS] == [
        "ann@example.com",
        "13812345678",
        "11010519491231002X",
    ]


def test_replace_with_english_placeholders() -> None:
    out = OperatorSet(ReplaceOperator()).apply(TEXT, FINDINGS)
    assert out == "mail [EMAIL], phone [PHONE], id [CN_RESIDENT_ID]"


def test_replace_with_chinese_labels() -> None:
    out = OperatorSet(ReplaceOperator(Labels("zh"))).apply(TEXT, FINDINGS)
    assert out == "mail [邮箱_已脱敏], phone [手机号_已脱敏], id [身份证号_已脱敏]"
    labels = Labels("zh")
    assert labels.placeholder("STUDENT_ID") == "[学号_已脱敏]"
    assert labels.placeholder("PERSON") == "[姓名_已脱敏]"
    assert labels.placeholder("BADGE") == "[BADGE_已脱敏]"
    assert Labels("en", {"PHONE": "<tel>"}).placeholder("PHONE") == "<tel>"
    with pytest.raises(ConfigError):
        Labels("fr")


def test_mask_keeps_the_last_four() -> None:
    mask = MaskOperator()
    assert mask.apply("13812345678", "PHONE") == "*******5678"
    assert mask.apply("ann@example.com", "EMAIL") == "***********.com"
    # Never more than half of a short value stays readable.
    assert mask.apply("123456", "X") == "***456"
    assert mask.apply("ab", "X") == "*b"
    assert mask.apply("a", "X") == "*"
    assert MaskOperator(keep=0).apply("secret", "X") == "******"
    out = OperatorSet(mask).apply(TEXT, FINDINGS)
    assert "13812345678" not in out and "*******5678" in out and out.startswith("mail ****")


def test_hash_is_stable_per_key_and_differs_across_keys() -> None:
    one = HashOperator(KEY)
    token = one.apply("ann@example.com", "EMAIL")
    assert re.fullmatch(r"\[EMAIL:[0-9a-f]{10}\]", token)
    assert HashOperator(KEY).apply("ann@example.com", "EMAIL") == token
    assert one.apply("ANN@example.com", "EMAIL") == token  # emails are case-insensitive
    assert one.apply("bob@example.com", "EMAIL") != token
    assert HashOperator(OTHER_KEY).apply("ann@example.com", "EMAIL") != token
    assert HashOperator(SecretStr(KEY)).apply("ann@example.com", "EMAIL") == token
    assert len(HashOperator(KEY, chars=16).apply("x", "PHONE")) == len("[PHONE:]") + 16
    assert "ann" not in token and "example" not in token


def test_encrypt_round_trip() -> None:
    operators = OperatorSet(EncryptOperator(KEY))
    sealed = operators.apply(TEXT, FINDINGS)
    for value in ("ann@example.com", "13812345678", "11010519491231002X"):
        assert value not in sealed
    assert re.search(r"\[ENC:EMAIL:[A-Za-z0-9_-]+\]", sealed)
    assert sealed.startswith("mail [ENC:EMAIL:")
    assert decrypt_tokens(sealed, KEY) == TEXT
    assert decrypt_tokens(sealed, SecretStr(KEY)) == TEXT
    assert decrypt_tokens("nothing sealed", KEY) == "nothing sealed"
    # Deterministic, so a retried write stores the same bytes.
    assert operators.apply(TEXT, FINDINGS) == sealed
    assert EncryptOperator(KEY).apply("13812345678", "PHONE") != EncryptOperator(KEY).apply(
        "13812345679", "PHONE"
    )


def test_unicode_values_round_trip() -> None:
    token = EncryptOperator(KEY).apply("张三 zhang.san@例子.公司", "PERSON")
    assert decrypt_tokens(f"你好 {token}!", KEY) == "你好 张三 zhang.san@例子.公司!"


def test_wrong_key_or_altered_token_fails_with_a_typed_error() -> None:
    sealed = OperatorSet(EncryptOperator(KEY)).apply(TEXT, FINDINGS)
    with pytest.raises(DecryptionError) as info:
        decrypt_tokens(sealed, OTHER_KEY)
    assert isinstance(info.value, AgentCtxError) and info.value.code == "decryption_failed"
    assert "ann@" not in str(info.value)
    # Relabelling a token (the type is authenticated) or flipping a character fails too.
    relabelled = sealed.replace("[ENC:EMAIL:", "[ENC:PHONE:", 1)
    with pytest.raises(DecryptionError):
        decrypt_tokens(relabelled, KEY)
    match = re.search(r"\[ENC:PHONE:([A-Za-z0-9_-]+)\]", sealed)
    assert match is not None
    body = match.group(1)
    flipped = body[:5] + ("A" if body[5] != "A" else "B") + body[6:]
    with pytest.raises(DecryptionError):
        decrypt_tokens(sealed.replace(body, flipped), KEY)
    with pytest.raises(DecryptionError, match="truncated"):
        decrypt_tokens("[ENC:EMAIL:AAAA]", KEY)


def test_short_keys_are_refused() -> None:
    with pytest.raises(ConfigError, match="at least 16"):
        HashOperator("short")
    with pytest.raises(ConfigError):
        EncryptOperator(b"0123")


def test_operator_per_type_with_a_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    config = RedactionConfig(
        operator="replace",
        operators={"PHONE": "mask", "EMAIL": "hash", "CN_RESIDENT_ID": "encrypt"},
        labels="zh",
        hash_key=SecretStr(KEY),
        encryption_key=SecretStr(OTHER_KEY),
    )
    operators = OperatorSet.from_config(config)
    out = operators.apply(
        TEXT + " 学号 20231234", [*FINDINGS, Finding("STUDENT_ID", 66, 74, 1, "t")]
    )
    assert HashOperator(KEY).apply("ann@example.com", "EMAIL") in out
    assert "*******5678" in out
    assert out.endswith("学号 [学号_已脱敏]")
    assert decrypt_tokens(out, OTHER_KEY).count("11010519491231002X") == 1
    assert "SecretStr" in repr(config) and KEY not in repr(config)


def test_keys_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match="hash_key"):
        OperatorSet.from_config(RedactionConfig(operator="hash"))
    with pytest.raises(ConfigError, match="encryption_key"):
        OperatorSet.from_config(RedactionConfig(operators={"EMAIL": "encrypt"}))
    monkeypatch.setenv(KEY_ENV, KEY)
    operators = OperatorSet.from_config(RedactionConfig(operator="encrypt"))
    sealed = operators.apply(TEXT, FINDINGS)
    assert decrypt_tokens(sealed, KEY) == TEXT
    hashed = OperatorSet.from_config(RedactionConfig(operator="hash")).apply(TEXT, FINDINGS)
    assert HashOperator(KEY).apply("13812345678", "PHONE") in hashed


def test_no_findings_returns_the_same_text() -> None:
    text = "plain"
    assert OperatorSet(ReplaceOperator()).apply(text, []) is text
