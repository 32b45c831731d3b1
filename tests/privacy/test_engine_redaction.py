"""Redaction switched on through settings: no planted value reaches any storage or log."""

# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from sqlalchemy import select

from agentctx import AgentConfig, ConfigError, ContextEngine, EventType, InvalidInput
from agentctx.privacy import PIIRedactor
from agentctx.privacy.redactor import Redacted
from agentctx.storage.schema import ALL_TABLES

PLANTED = {
    "EMAIL": "zhang.wei@example.com",
    "PHONE": "13812345678",
    "CN_RESIDENT_ID": "11010519491231002X",
    "CREDIT_CARD": "4111111111111111",
    "SECRET": "sk-proj-4fTq9ZxLm2Vb8NcR7sKd1HyW",
}


def _all_rows_text(engine: ContextEngine) -> str:
    with engine.db.read() as conn:
        return json.dumps(
            [
                [str(value) for value in row]
                for table in ALL_TABLES
                for row in conn.execute(select(table))
            ],
            ensure_ascii=False,
        )


def test_a_session_with_pii_everywhere_stores_none_of_it(db_url: str, home: Path) -> None:
    log_file = home / "app.log"
    home.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_file, encoding="utf-8")
    app_logger = logging.getLogger("agentctx.tests.app")
    app_logger.addHandler(handler)
    app_logger.setLevel(logging.INFO)
    try:
        with ContextEngine(
            url=db_url, home=home, redaction={"enabled": True}, max_inline_bytes=1024
        ) as engine:
            assert isinstance(engine.redactor, PIIRedactor)
            session = engine.create_session(
                user_id="u1",
                state={"contact": PLANTED["EMAIL"]},
                metadata={"phone": PLANTED["PHONE"]},
            )
            with session.turn() as turn:
                turn.add_message(
                    "user",
                    f"我的手机号是 {PLANTED['PHONE']}，邮箱 {PLANTED['EMAIL']}，"
                    f"身份证号 {PLANTED['CN_RESIDENT_ID']}",
                    metadata={"note": f"card {PLANTED['CREDIT_CARD']}"},
                )
                call = turn.add_tool_call("crm_lookup", {"email": PLANTED["EMAIL"]})
                # Large enough to be offloaded to the blob store: the blob must be clean too.
                big = f"customer record: card number {PLANTED['CREDIT_CARD']}\n" + "x" * 2000
                turn.add_tool_result(
                    call.call_id,
                    content=big,
                    data={"customer": {"phone": PLANTED["PHONE"], "api_key": PLANTED["SECRET"]}},
                )
                turn.add_event(EventType.PLANNER, "next", payload={"to": PLANTED["EMAIL"]})
            session.update_state({"id_card": PLANTED["CN_RESIDENT_ID"]})
            app_logger.info("contacting %s at %s", PLANTED["EMAIL"], PLANTED["PHONE"])
            logging.getLogger("agentctx.sessions").warning("key %s", PLANTED["SECRET"])

            events = session.events()
            assert "[EMAIL]" in events[0].text and "[PHONE]" in events[0].text
            assert set(events[0].redacted_types) >= {"EMAIL", "PHONE", "CN_RESIDENT_ID"}
            stored = _all_rows_text(engine)
            for name, value in PLANTED.items():
                assert value not in stored, name
    finally:
        app_logger.removeHandler(handler)
        handler.close()

    scanned = []
    for path in home.rglob("*"):
        if path.is_file() and path != log_file:  # the app's own logger is not agentctx's
            data = path.read_bytes()
            scanned.append(path)
            for name, value in PLANTED.items():
                assert value.encode() not in data, (name, path)
    if db_url.startswith("sqlite:///"):
        db_path = Path(db_url.removeprefix("sqlite:///"))
        for path in db_path.parent.glob(db_path.name + "*"):  # the database, its WAL and shm
            data = path.read_bytes()
            for name, value in PLANTED.items():
                assert value.encode() not in data, (name, path)
    # The offloaded tool output and the audit log were there to scan.
    assert any("blobs" in path.parts for path in scanned)
    assert home / "audit.jsonl" in scanned


def test_agentctx_log_records_are_redacted(tmp_path: Path) -> None:
    log_file = tmp_path / "agentctx.log"
    handler = logging.FileHandler(log_file, encoding="utf-8")
    logger = logging.getLogger("agentctx")
    logger.addHandler(handler)
    try:
        with ContextEngine(home=tmp_path / "home", redaction={"enabled": True}):
            logging.getLogger("agentctx.jobs").warning(
                "job for %s failed: %s", PLANTED["EMAIL"], f"token {PLANTED['SECRET']}"
            )
        handler.flush()
        text = log_file.read_text(encoding="utf-8")
        assert "job for [EMAIL] failed" in text
        assert PLANTED["EMAIL"] not in text and PLANTED["SECRET"] not in text
    finally:
        logger.removeHandler(handler)
        handler.close()
        for log_filter in list(logger.filters):
            logger.removeFilter(log_filter)


def test_redaction_is_on_by_default_and_can_be_switched_off(tmp_path: Path) -> None:
    with ContextEngine(home=tmp_path / "on") as engine:
        session = engine.create_session(user_id="u1")
        event = session.add_message("user", f"mail me at {PLANTED['EMAIL']}")
        assert event.text == "mail me at [EMAIL]"
        assert event.redacted_types == ("EMAIL",)
    with ContextEngine(home=tmp_path / "off", redaction={"enabled": False}) as engine:
        session = engine.create_session(user_id="u1")
        assert session.add_message("user", PLANTED["EMAIL"]).text == PLANTED["EMAIL"]


SUPPORT = "help@shop.example.com"
HOTLINE = "13900001111"


def test_agent_and_session_allow_lists_keep_their_values(tmp_path: Path) -> None:
    with ContextEngine(home=tmp_path) as engine:
        engine.register_agent(AgentConfig(agent_id="support", pii_allow_list=(SUPPORT,)))
        text = f"write to {SUPPORT} or call {HOTLINE}; mine is {PLANTED['EMAIL']}"

        plain = engine.create_session(user_id="u1", agent_id="support")
        assert plain.add_message("user", text).text == (
            f"write to {SUPPORT} or call [PHONE]; mine is [EMAIL]"
        )
        scoped = engine.create_session(
            user_id="u1",
            agent_id="support",
            config={"pii_allow_list": [HOTLINE]},
            state={"hotline": HOTLINE, "customer": PLANTED["EMAIL"]},
        )
        assert scoped.state == {"hotline": HOTLINE, "customer": "[EMAIL]"}
        with scoped.turn() as turn:
            event = turn.add_message("assistant", text)
        assert event.text == f"write to {SUPPORT} or call {HOTLINE}; mine is [EMAIL]"
        # A handle loaded later resolves the same allow-lists from the stored rows.
        again = engine.get_session(scoped.id, user_id="u1")
        assert again.update_state({"note": f"{HOTLINE} / {PLANTED['PHONE']}"})["note"] == (
            f"{HOTLINE} / [PHONE]"
        )
        # Another agent's sessions do not inherit the support agent's list.
        other = engine.create_session(user_id="u1", agent_id="sales")
        assert other.add_message("user", SUPPORT).text == "[EMAIL]"


def test_a_malformed_session_allow_list_is_refused(tmp_path: Path) -> None:
    with ContextEngine(home=tmp_path) as engine:
        for bad in ("help@x.com", [1, 2], [""]):
            with pytest.raises(InvalidInput, match="pii_allow_list"):
                engine.create_session(user_id="u1", config={"pii_allow_list": bad})
        assert engine.list_sessions("u1").items == []


def test_allow_lists_need_a_redactor_that_supports_them(tmp_path: Path) -> None:
    class Upper:
        def redact_text(self, text: str) -> Redacted:
            return Redacted(text.upper())

        def redact_json(self, value: object) -> Redacted:
            return Redacted(value)

    with ContextEngine(home=tmp_path, redactor=Upper()) as engine:
        assert engine.create_session(user_id="u1").add_message("user", "hi").text == "HI"
        with pytest.raises(ConfigError, match="allow-lists"):
            engine.create_session(user_id="u1", config={"pii_allow_list": [SUPPORT]})
