"""The audit JSON-lines file: one per engine home, shared by engines on the same home,
let go when the last of them closes, and never a reason for a write to fail."""

from __future__ import annotations

import json
import logging
import logging.config
import shutil
from pathlib import Path

import pytest
from sqlalchemy import text

from agentctx import ContextEngine


def _actions(home: Path) -> list[tuple[str, str | None]]:
    lines = (home / "audit.jsonl").read_text().splitlines()
    return [(entry["action"], entry["user_id"]) for entry in map(json.loads, lines)]


def test_each_engine_writes_only_its_own_audit_file(tmp_path: Path) -> None:
    home_a, home_b = tmp_path / "a", tmp_path / "b"
    with ContextEngine(home=str(home_a)) as a, ContextEngine(home=str(home_b)) as b:
        a.create_session(user_id="alice").add_message("user", "hi")
        b.create_session(user_id="bob").add_message("user", "hello")
    assert {user for _, user in _actions(home_a)} == {"alice"}
    assert {user for _, user in _actions(home_b)} == {"bob"}


def test_engines_on_one_home_share_the_file_until_the_last_closes(tmp_path: Path) -> None:
    home = tmp_path / "shared"
    first = ContextEngine(home=str(home))
    second = ContextEngine(home=str(home))
    first.create_session(user_id="u1")
    first.close()
    # The second engine still writes (the first's close left the shared file open) ...
    second.create_session(user_id="u2")
    second.close()
    users = [user for action, user in _actions(home) if action == "session_create"]
    assert users == ["u1", "u2"]  # ... and each record is written once
    # After the last close nothing in the process writes there any more.
    with ContextEngine(home=str(tmp_path / "other")) as other:
        other.create_session(user_id="u3")
    assert "u3" not in {user for _, user in _actions(home)}


def test_a_removed_home_after_close_breaks_no_later_engine(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    with ContextEngine(home=str(gone)) as engine:
        engine.create_session(user_id="u1")
    shutil.rmtree(gone)
    # A server's logging setup closes every handler in the process; a handler left
    # behind by the closed engine would reopen its removed file on the next record.
    logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
    home = tmp_path / "live"
    with ContextEngine(home=str(home)) as engine:
        session = engine.create_session(user_id="u2")
        session.add_message("user", "still fine")
        assert len(session.events()) == 1
    assert not gone.exists()
    assert ("append", "u2") in _actions(home)


def test_a_failing_audit_file_loses_no_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    with ContextEngine(home=str(home)) as engine:
        session = engine.create_session(user_id="u1")
        # The file cannot be written any more: its directory is gone, and the handler
        # is closed (as a logging reconfiguration does), so the next record reopens it.
        (home / "audit.jsonl").unlink()
        for handler in logging.getLogger("agentctx.audit").handlers:
            handler.close()
        (home / "audit.jsonl").mkdir()  # a directory where the file was: open fails
        session.add_message("user", "kept")
        assert [e.text for e in session.events()] == ["kept"]
        with engine.db.read() as conn:
            actions = [row[0] for row in conn.execute(text("SELECT action FROM audit"))]
        assert "append" in actions  # the table has the record the file could not take
    assert "audit.jsonl" in capsys.readouterr().err  # and the failure was reported
