"""PIIRedactor: text and JSON redaction, configuration, the log filter, Presidio, speed."""

from __future__ import annotations

import logging
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from agentctx import ContextEngine
from agentctx.errors import MissingExtra
from agentctx.ids import is_valid_id
from agentctx.privacy.analyzer import RegexRecognizer
from agentctx.privacy.config import CustomPattern, RedactionConfig
from agentctx.privacy.findings import Finding
from agentctx.privacy.logging import PIIRedactingFilter, install_log_redaction
from agentctx.privacy.operators import decrypt_tokens
from agentctx.privacy.pii import (
    CLEAN_IDENTIFIERS_KEPT,
    CLEAN_TEXTS_KEPT,
    PIIRedactor,
    redactor_from_config,
)
from agentctx.privacy.redactor import PassThroughRedactor, Redactor

# Leading lookbehinds are avoided on purpose: a pattern that starts with a literal lets the
# regex engine skip ahead with a fast search, which is most of the throughput.
EMAIL = RegexRecognizer("email", "EMAIL", r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+", score=0.9)
PHONE = RegexRecognizer("phone", "PHONE", r"1[3-9]\d{9}(?!\d)", score=0.8)
RESIDENT_ID = RegexRecognizer("cn-id", "CN_RESIDENT_ID", r"[1-9]\d{16}[\dXx](?![\dXx])", score=0.85)
RECOGNIZERS = [EMAIL, PHONE, RESIDENT_ID]
KEY = "tenant-key-0123456789abcdef"


def test_is_a_redactor() -> None:
    assert isinstance(PIIRedactor(RECOGNIZERS), Redactor)


def test_redact_text_replaces_and_reports_types() -> None:
    redactor = PIIRedactor(RECOGNIZERS)
    result = redactor.redact_text("我是张三, 手机 13812345678, 邮箱 zs@example.com, 13900001111")
    assert result.value == "我是张三, 手机 [PHONE], 邮箱 [EMAIL], [PHONE]"
    assert result.entity_types == frozenset({"PHONE", "EMAIL"})


def test_nothing_found_returns_the_same_object() -> None:
    redactor = PIIRedactor(RECOGNIZERS)
    text = "".join(["a perfectly ordinary sentence, ", "nothing to hide"])
    result = redactor.redact_text(text)
    assert result.value is text and result.entity_types == frozenset()
    value: dict[str, Any] = {"a": ["x", {"b": "y"}], "n": 3}
    clean = redactor.redact_json(value)
    assert clean.value is value and clean.entity_types == frozenset()


def test_redact_json_redacts_keys_and_keeps_structure() -> None:
    redactor = PIIRedactor(RECOGNIZERS)
    untouched_branch = {"note": "fine", "ok": True}
    value: dict[str, Any] = {
        "user": {"email": "ann@example.com", "age": 31, "tags": ["vip", "call 13812345678"]},
        "ann@example.com": "key redacted",
        "ids": ("11010519491231002X", None, 2.5),
        "quiet": untouched_branch,
        "flag": False,
    }
    snapshot = repr(value)
    result = redactor.redact_json(value)
    # A key gets a stable token: the same address is the same key in every write.
    key = redactor.redact_identifier("ann@example.com").value
    assert key.startswith("EMAIL-")
    assert result.value == {
        "user": {"email": "[EMAIL]", "age": 31, "tags": ["vip", "call [PHONE]"]},
        key: "key redacted",
        "ids": ("[CN_RESIDENT_ID]", None, 2.5),
        "quiet": untouched_branch,
        "flag": False,
    }
    assert result.entity_types == frozenset({"EMAIL", "PHONE", "CN_RESIDENT_ID"})
    # Key order kept, the renamed key in its place.
    assert list(result.value) == ["user", key, "ids", "quiet", "flag"]
    assert result.value["quiet"] is untouched_branch  # unchanged branches are not copied
    assert repr(value) == snapshot  # the input is not modified
    assert redactor.redact_json("a@b.co").value == "[EMAIL]"
    assert redactor.redact_json(7).value == 7


def test_keys_that_collide_after_redaction_keep_every_entry() -> None:
    redactor = PIIRedactor(RECOGNIZERS)
    token_a = redactor.redact_identifier("a@example.com").value
    token_b = redactor.redact_identifier("b@example.com").value
    assert token_a != token_b  # different addresses, different keys
    # Addresses are case-insensitive, so two spellings give one token; and a key may
    # already be another key's token.
    value = {"b@example.com": 1, "B@example.com": 2, token_a: 0, "a@example.com": 3, "x": 4}
    clean = redactor.redact_json(value).value
    assert len(clean) == 5
    # Keys left as they were keep their names; renamed ones are numbered in the sorted
    # order of their original text, whatever the insertion order.
    assert clean == {
        f"{token_b}#2": 1,
        token_b: 2,
        token_a: 0,
        f"{token_a}#2": 3,
        "x": 4,
    }
    shuffled = {"x": 4, "a@example.com": 3, "B@example.com": 2, token_a: 0, "b@example.com": 1}
    assert redactor.redact_json(shuffled).value == clean
    assert "example.com" not in repr(clean)


def test_a_list_of_records_analyzes_each_short_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool's list of records repeats its keys and many values: each short text is
    analyzed once per redaction, and every copy is redacted as the first."""
    redactor = PIIRedactor(RECOGNIZERS)
    records = [
        {"path": f"src/mod_{i % 7}.py", "owner": "ann@example.com", "kind": "file", "size": i}
        for i in range(200)
    ]
    long_text = "a long description of the file that is well over the limit " * 3
    records.append({"path": long_text, "owner": long_text, "kind": "file", "size": 0})
    analyzed: list[str] = []
    real = redactor.analyzer.analyze

    def counting(text: str) -> Any:
        analyzed.append(text)
        return real(text)

    monkeypatch.setattr(redactor.analyzer, "analyze", counting)
    result = redactor.redact_json(records)
    # Keys (4), paths (7), the address and "file": once each; the long text each time.
    assert len(analyzed) == 4 + 7 + 1 + 1 + 2
    assert analyzed.count(long_text) == 2
    assert all(r["owner"] == "[EMAIL]" for r in result.value[:200])
    assert result.entity_types == frozenset({"EMAIL"})
    one_by_one = [PIIRedactor(RECOGNIZERS).redact_json(r).value for r in records]
    assert result.value == one_by_one


def test_keys_use_the_configured_hash_operator() -> None:
    config = RedactionConfig(operator="hash", hash_key=SecretStr("k" * 32))
    redactor = PIIRedactor.from_config(config)
    (key,) = redactor.redact_json({"ann@example.com": 1}).value
    assert key == redactor.redact_text("ann@example.com").value
    assert key.startswith("[EMAIL:")


def test_identifiers_get_stable_distinct_tokens() -> None:
    redactor = PIIRedactor(RECOGNIZERS)
    first = redactor.redact_identifier("call:ann@example.com").value
    again = redactor.redact_identifier("call:ann@example.com").value
    other = redactor.redact_identifier("call:bob@example.com").value
    assert first == again != other
    assert "ann" not in first and first.startswith("call:EMAIL-")
    # A token is a valid identifier, and redacting it again changes nothing.
    assert is_valid_id(first)
    assert redactor.redact_identifier(first).value == first
    # A configured key changes every token.
    keyed = PIIRedactor(RECOGNIZERS, identifier_key="k" * 32)
    assert keyed.redact_identifier("call:ann@example.com").value != first


class CountingRecognizer(RegexRecognizer):
    """The email recognizer, counting the texts it is run on."""

    def __init__(self) -> None:
        super().__init__("email", "EMAIL", EMAIL.pattern, score=0.9)
        self.runs = 0

    def analyze(self, text: str) -> list[Finding]:
        self.runs += 1
        return super().analyze(text)


def test_identifiers_found_clean_are_not_analyzed_again() -> None:
    counting = CountingRecognizer()
    redactor = PIIRedactor([counting])
    for _ in range(3):
        assert redactor.redact_identifier("req-01J9ZQ").value == "req-01J9ZQ"
        assert redactor.redact_identifier("read_file").entity_types == frozenset()
    assert counting.runs == 2  # once each
    # What holds personal data is never remembered: analyzed, and redacted, every time.
    tokens = {redactor.redact_identifier("call:ann@example.com").value for _ in range(3)}
    assert counting.runs == 5
    assert len(tokens) == 1 and "ann" not in next(iter(tokens))
    # Another allow-list finds other things: its redactor remembers on its own.
    allowing = redactor.with_allow_list(["ann@example.com"])
    assert allowing.redact_identifier("ann@example.com").value == "ann@example.com"
    assert redactor.redact_identifier("ann@example.com").value != "ann@example.com"
    assert allowing.redact_identifier("req-01J9ZQ").value == "req-01J9ZQ"
    assert counting.runs == 8
    # Bounded: past CLEAN_IDENTIFIERS_KEPT values it starts over.
    for i in range(CLEAN_IDENTIFIERS_KEPT + 1):
        redactor.redact_identifier(f"id-{i}")
    runs = counting.runs
    redactor.redact_identifier("id-0")
    assert counting.runs == runs + 1
    redactor.redact_identifier(f"id-{CLEAN_IDENTIFIERS_KEPT}")
    assert counting.runs == runs + 1


def test_short_json_strings_found_clean_are_not_analyzed_again_in_later_values() -> None:
    """The keys and short values of one tool's results recur in every result (and the
    fields of every audit log line): found clean once, they are not analyzed again, in
    their redactor's own scope, within CLEAN_TEXTS_KEPT apart from the identifiers. What
    holds personal data is analyzed, and redacted, every time."""
    counting = CountingRecognizer()
    redactor = PIIRedactor([counting])
    record = {"path": "src/app.py", "kind": "file", "owner": "ann@example.com"}
    first = redactor.redact_json(record).value
    runs = counting.runs
    assert runs == 6  # three keys, three values
    for _ in range(3):
        assert redactor.redact_json(record).value == first
    assert counting.runs == runs + 3  # the address, each time
    assert "ann@example.com" not in str(first) and first["path"] == "src/app.py"
    # Long strings are not remembered.
    long_value = {"path": "x" * 200}
    redactor.redact_json(long_value)
    runs = counting.runs
    redactor.redact_json(long_value)
    assert counting.runs == runs + 1
    # What one allow-list leaves alone, another redactor still redacts.
    allowing = redactor.with_allow_list(["bob@example.com"])
    assert allowing.redact_json({"to": "bob@example.com"}).value == {"to": "bob@example.com"}
    assert redactor.redact_json({"to": "bob@example.com"}).value != {"to": "bob@example.com"}
    # Bounded apart from the identifiers: many values do not push a request id out.
    redactor.redact_identifier("req-01J9ZQ")
    for i in range(CLEAN_TEXTS_KEPT + 1):
        redactor.redact_json({"k": f"v{i}"})
    assert len(redactor._clean_texts) <= CLEAN_TEXTS_KEPT
    runs = counting.runs
    redactor.redact_identifier("req-01J9ZQ")
    assert counting.runs == runs
    redactor.forget_texts()
    redactor.redact_json(record)
    assert counting.runs == runs + 6


def test_redactors_with_allow_lists_remember_within_one_bound() -> None:
    """Each allow-list's redactor remembers for itself (what one allows, another
    redacts), and all of them together at most CLEAN_IDENTIFIERS_KEPT identifiers: a
    server with a redactor per agent or session holds one bounded memory, not one per
    redactor."""
    counting = CountingRecognizer()
    base = PIIRedactor([counting])
    allowing = base.with_allow_list(["ann@example.com"])
    assert allowing.redact_identifier("ann@example.com").value == "ann@example.com"
    assert allowing.redact_identifier("ann@example.com").value == "ann@example.com"
    assert base.redact_identifier("ann@example.com").value != "ann@example.com"
    assert counting.runs == 2  # the allowed address once, then the base's analysis
    others = [base.with_allow_list([f"team{i}@agent.example"]) for i in range(4)]
    for i in range(CLEAN_IDENTIFIERS_KEPT):
        for redactor in (base, *others):
            redactor.redact_identifier(f"req-{i}")
    assert len(base._clean) <= CLEAN_IDENTIFIERS_KEPT  # the memory they share
    last = f"req-{CLEAN_IDENTIFIERS_KEPT - 1}"
    runs = counting.runs
    others[-1].redact_identifier(last)  # the last identifier remembered
    assert counting.runs == runs  # under its own redactor
    base.forget_texts()  # forgets for every redactor made from it
    others[-1].redact_identifier(last)
    assert counting.runs == runs + 1


def test_a_users_deletion_makes_every_redactor_forget_what_it_remembers(
    tmp_path: Path,
) -> None:
    """The identifiers a redactor remembers as clean are the user's (authors, request
    ids): once the user's data is deleted, neither the engine's redactor nor a session's
    (with its allow-list) keeps them."""
    counting = CountingRecognizer()
    with ContextEngine(
        url=f"sqlite:///{tmp_path / 'a.db'}",
        home=tmp_path / "home",
        embedder=None,
        redactor=PIIRedactor([counting]),
    ) as engine:
        plain = engine.create_session(user_id="ann")
        allowing = engine.create_session(user_id="ann", config={"pii_allow_list": ["x@y.io"]})
        for session in (plain, allowing):
            session.add_message("user", "hello", author="ann-laptop")
        assert "ann-laptop" in {author for _scope, author in engine.redactor._clean}
        engine.delete_user_data("ann")
        assert not {author for _scope, author in engine.redactor._clean} & {"ann-laptop"}
        for user in ("bob", "cy"):
            config = {"pii_allow_list": ["x@y.io"]} if user == "cy" else None
            session = engine.create_session(user_id=user, config=config)
            runs = counting.runs
            session.add_message("user", "hello", author="ann-laptop")
            assert counting.runs == runs + 2, user  # the text and the author: forgotten


def test_a_request_id_the_engine_makes_is_stored_as_made(tmp_path: Path) -> None:
    """A one-event turn's request id is made by the engine and holds no personal data:
    a configured pattern that happens to match it does not garble it into a token, and
    the event carries the id its turn row keeps. A turn's passes the gate as before."""
    hex_run = CustomPattern(name="hex", entity_type="HEX_ID", pattern=r"[0-9a-f]{8}-[0-9a-f]{4}")
    with ContextEngine(
        url=f"sqlite:///{tmp_path / 'a.db'}",
        home=tmp_path / "home",
        embedder=None,
        redaction={"patterns": [hex_run]},
    ) as engine:
        session = engine.create_session(user_id="u1")
        made = session.add_message("user", "hello")
        assert made.request_id is not None and is_valid_id(made.request_id)
        assert "HEX_ID" not in made.request_id and not made.redacted_types
        assert made.request_id == session.turns()[-1].request_id
        # A turn's request id (made or given) passes the gate as the turn begins; its
        # events carry what the turn row keeps.
        with session.turn(request_id="0a1b2c3d-0e0f") as turn:
            given = turn.add_message("user", "hello")
            again = turn.add_message("assistant", "hello to you")
        assert given.request_id is not None and given.request_id.startswith("HEX_ID-")
        assert given.request_id == again.request_id == session.turns()[-1].request_id
        with session.turn() as turn:
            inside = turn.add_message("user", "in a turn")
        assert inside.request_id == session.turns()[-1].request_id


def test_allow_list_per_engine_and_per_agent() -> None:
    redactor = PIIRedactor(RECOGNIZERS, allow=["support@agent.example"])
    text = "Contact Support@Agent.example or ann@example.com, hotline 4008001234 / 13812345678"
    assert redactor.redact_text(text).value == (
        "Contact Support@Agent.example or [EMAIL], hotline 4008001234 / [PHONE]"
    )
    agent = redactor.with_allow_list(["13812345678"])
    assert agent.redact_text(text).value == (
        "Contact Support@Agent.example or [EMAIL], hotline 4008001234 / 13812345678"
    )
    assert agent.operators is redactor.operators
    assert redactor.redact_text(text).value.endswith("[PHONE]")


def test_from_config(monkeypatch: pytest.MonkeyPatch) -> None:
    config = RedactionConfig(
        labels="zh",
        operators={"CN_RESIDENT_ID": "encrypt", "PHONE": "mask"},
        encryption_key=SecretStr(KEY),
        allow_list=("help@agent.example",),
        patterns=(
            CustomPattern(
                name="student",
                entity_type="STUDENT_ID",
                pattern=r"(?<!\d)\d{8}(?!\d)",
                score=0.3,
                context=("学号",),
            ),
        ),
        min_score=0.5,
    )
    redactor = PIIRedactor.from_config(config, recognizers=RECOGNIZERS)
    text = "订单 20239999, 学号 20231234, id 11010519491231002X, 13812345678, help@agent.example"
    result = redactor.redact_text(text)
    out = result.value
    assert out.startswith("订单 20239999, 学号 [学号_已脱敏], id [ENC:CN_RESIDENT_ID:")
    assert out.endswith(", *******5678, help@agent.example")
    assert "11010519491231002X" not in out
    assert decrypt_tokens(out, KEY).startswith("订单 20239999, 学号 [学号_已脱敏], id 110105")
    assert result.entity_types == frozenset({"STUDENT_ID", "CN_RESIDENT_ID", "PHONE"})


def test_disabled_config_gives_pass_through() -> None:
    assert isinstance(redactor_from_config(RedactionConfig(enabled=False)), PassThroughRedactor)
    with pytest.raises(ValueError):
        RedactionConfig(operator="shred")  # type: ignore[arg-type]


def test_presidio_missing_extra_names_the_pip_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentctx.privacy.presidio import PresidioRecognizer

    # A None entry makes the import fail exactly as if the package were not installed.
    monkeypatch.setitem(sys.modules, "presidio_analyzer", None)
    with pytest.raises(MissingExtra) as info:
        PresidioRecognizer()
    assert str(info.value) == (
        "presidio-analyzer is required for this feature: pip install 'agentctx[presidio]'"
    )
    assert isinstance(info.value, ImportError) and info.value.extra == "presidio"
    with pytest.raises(MissingExtra):
        PIIRedactor.from_config(RedactionConfig(presidio=True), recognizers=RECOGNIZERS)


def _file_logger(name: str, path: Path) -> tuple[logging.Logger, logging.FileHandler]:
    logger = logging.getLogger(name)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    return logger, handler


def test_log_filter_keeps_pii_out_of_a_log_file(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    logger, handler = _file_logger("agentctx.test.pii", path)
    try:
        handler.addFilter(PIIRedactingFilter(PIIRedactor(RECOGNIZERS)))
        logger.info("user ann@example.com signed in")
        logger.info("sms to %s for %s", "13812345678", {"email": "bob@example.com"})
        logger.info("progress 100%% for %d items", 3)
        try:
            raise ValueError("bad id 11010519491231002X")
        except ValueError:
            logger.exception("lookup failed for %s", "carol@example.com")
        child = logging.getLogger("agentctx.test.pii.child")
        child.warning("child logs dave@example.com")  # reaches the handler by propagation
    finally:
        logger.removeHandler(handler)
        handler.close()
    written = path.read_text(encoding="utf-8")
    for planted in (
        "ann@example.com",
        "13812345678",
        "bob@example.com",
        "11010519491231002X",
        "carol@example.com",
        "dave@example.com",
    ):
        assert planted not in written
    assert "INFO user [EMAIL] signed in" in written
    assert "INFO sms to [PHONE] for {'email': '[EMAIL]'}" in written
    assert "INFO progress 100% for 3 items" in written
    assert "ValueError: bad id [CN_RESIDENT_ID]" in written
    assert "Traceback" in written
    assert "WARNING child logs [EMAIL]" in written


def test_install_log_redaction_covers_the_logger_and_its_handlers(tmp_path: Path) -> None:
    path = tmp_path / "installed.log"
    logger, handler = _file_logger("agentctx.test.installed", path)
    try:
        redactor = PIIRedactor(RECOGNIZERS)
        installed = install_log_redaction(redactor, logger)
        assert install_log_redaction(redactor, "agentctx.test.installed") is installed
        assert handler.filters == [installed] and logger.filters == [installed]
        logger.error("payment by %s failed", "ann@example.com")
    finally:
        logger.removeHandler(handler)
        logger.removeFilter(installed)
        handler.close()
    assert path.read_text(encoding="utf-8") == "ERROR payment by [EMAIL] failed\n"


def test_engine_stores_only_redacted_text(tmp_path: Path) -> None:
    home = tmp_path / "home"
    redactor = PIIRedactor(RECOGNIZERS, allow=["help@agent.example"])
    with ContextEngine(home=home, redactor=redactor) as engine:
        session = engine.create_session(user_id="u1", agent_id="helper")
        session.add_message(
            "user",
            "I am ann@example.com, call 13812345678; help@agent.example said hi",
            metadata={"contact": "bob@example.com"},
        )
        (event,) = session.events(last=10)
        assert event.redacted_types == ("EMAIL", "PHONE")
        assert "[EMAIL], call [PHONE]; help@agent.example" in repr(event.parts)
    raw = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    for planted in (b"ann@example.com", b"13812345678", b"bob@example.com"):
        assert planted not in raw
    assert b"help@agent.example" in raw
    with sqlite3.connect(home / "agentctx.db") as db:
        assert db.execute("select count(*) from events").fetchone() == (1,)


def _chat_text(size: int) -> str:
    lines = [
        "Hi, I would like to change my flight to Tuesday morning if possible.",
        "Sure! Let me check the available options for you, one moment please.",
        "我想把航班改到周二上午, 如果可以的话请帮我看一下有没有位置。",
        "The cheapest option departs at 08:40 and costs 1,250 CNY including tax.",
        "You can reach me at traveler.one@example.com or 13812345678 after 6pm.",
        "Thanks, that works. Please also add a vegetarian meal to the booking.",
    ]
    block = "\n".join(lines) + "\n"
    return (block * (size // len(block) + 1))[:size]


def test_a_large_text_is_redacted_whole() -> None:
    # Speed is measured by `agentctx bench redact`; this checks a 4 MB text comes back
    # with every planted value replaced and nothing else touched.
    redactor = PIIRedactor(RECOGNIZERS)
    text = _chat_text(4_000_000)
    result = redactor.redact_text(text)
    planted = text.count("13812345678")
    assert planted > 10_000
    assert "13812345678" not in result.value and "traveler.one@example.com" not in result.value
    assert result.value.count("[PHONE]") == planted
    assert result.value.count("[EMAIL]") == text.count("traveler.one@example.com")
    assert result.value.count("1,250 CNY") == text.count("1,250 CNY")
