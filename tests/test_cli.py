"""The ``agentctx`` command line, run in-process against real SQLite files and PostgreSQL."""

from __future__ import annotations

import json
import shlex
import sqlite3
import time
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from agentctx import ContextEngine, EventType, SessionNotFound
from agentctx.cli.main import app
from agentctx.demo import DEMO_USER
from agentctx.storage.migrate import head_revision
from agentctx.storage.schema import blob_refs
from conftest import make_png

runner = CliRunner()


def cli(url: str, home: Path, *args: str, columns: int = 250) -> tuple[int, str, str]:
    """Run ``agentctx --url URL --home HOME ARGS…`` on a console ``columns`` wide.

    Returns (exit code, stdout, stderr).
    """
    result = runner.invoke(
        app, ["--url", url, "--home", str(home), *args], env={"COLUMNS": str(columns)}
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'agentctx.db'}"


def record_session(engine: ContextEngine, user_id: str, turns: int = 2) -> str:
    """A session with a few turns, tool calls and one screenshot per turn; returns its id."""
    session = engine.create_session(user_id=user_id, agent_id="helper")
    for index in range(turns):
        with session.turn() as turn:
            turn.add_message("user", f"request {index}")
            call = f"call_{index}"
            turn.add_tool_call("screenshot", {"region": "full"}, call_id=call)
            turn.add_tool_result(call, content="ok", images=[make_png(seed=index)])
            turn.add_message("assistant", f"done {index}")
    return session.id


def counts(out: str) -> dict[str, int]:
    """``name   N`` lines (the sweep report) as a dict."""
    pairs = (line.rsplit(maxsplit=1) for line in out.splitlines() if line.strip())
    return {name.strip(): int(value) for name, value in pairs}


def blob_files(home: Path) -> list[Path]:
    return [p for p in (home / "blobs").rglob("*") if p.is_file()]


def tamper(url: str, user_id: str, session_id: str, seq: int) -> None:
    """Change one stored event's payload behind the engine's back, with raw SQL."""
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        with conn:
            updated = conn.execute(
                "UPDATE events SET payload = ? WHERE user_id = ? AND session_id = ? AND seq = ?",
                ('{"forged": true}', user_id, session_id, seq),
            ).rowcount
        conn.close()
    else:
        with psycopg.connect(url) as conn:
            updated = conn.execute(
                "UPDATE events SET payload = %s::jsonb "
                "WHERE user_id = %s AND session_id = %s AND seq = %s",
                ('{"forged": true}', user_id, session_id, seq),
            ).rowcount
    assert updated == 1


# db ----------------------------------------------------------------------------------------


def test_db_status_and_migrate(tmp_path: Path) -> None:
    url, home = sqlite_url(tmp_path), tmp_path / "home"
    code, out, _ = cli(url, home, "db", "status")
    assert code == 0
    assert "empty" in out
    assert not (tmp_path / "agentctx.db").exists()  # looking did not create it

    code, out, _ = cli(url, home, "db", "migrate")
    assert code == 0
    assert f"empty -> {head_revision()}" in out

    code, out, _ = cli(url, home, "db", "migrate")
    assert code == 0
    assert f"{head_revision()} (up to date" in out
    code, out, _ = cli(url, home, "db", "status")
    assert "up to date" in out


# demo --------------------------------------------------------------------------------------


def test_demo_records_a_session_that_verifies(db_url: str, home: Path) -> None:
    code, out, err = cli(db_url, home, "demo")
    assert code == 0, err
    assert "chain intact" in out
    assert "matches its content address" in out

    with ContextEngine(url=db_url, home=home) as engine:
        [info] = engine.list_sessions(DEMO_USER).items
        session = engine.get_session(info.session_id, user_id=DEMO_USER)
        events = session.events()
        assert session.verify().ok
        assert len(session.turns()) >= 2
        assert f"{len(events)} events in {len(session.turns())} turns" in out
        results = [e for e in events if e.type is EventType.TOOL_RESULT]
        assert any(e.payload["is_error"] and e.images for e in results)
        assert sum(len(e.images) for e in events) >= 3
        assert any(e.type is EventType.STATE_DELTA for e in events)
        assert session.state_version >= 1
        # Every image is a real PNG that comes back byte-for-byte from the blob store.
        for image in (i for e in events for i in e.images):
            data = engine.restore_image(image.image_id, user_id=DEMO_USER)
            assert data.startswith(b"\x89PNG") and len(data) == image.size
        with engine.db.read() as conn:
            refs = conn.execute(
                blob_refs.select().where(blob_refs.c.session_id == session.id)
            ).all()
        distinct = {row.blob_id for row in refs}
        assert f"{len(refs)} references to {len(distinct)} distinct blobs" in out

    code, out, _ = cli(db_url, home, "sessions", "verify", "--all")
    assert code == 0
    assert "checked 1 sessions" in out


def test_demo_prints_a_next_step_that_works_as_printed(tmp_path: Path) -> None:
    home = tmp_path / "my home"  # a space: the printed line quotes it
    code, out, err = cli(sqlite_url(tmp_path), home, "demo")
    assert code == 0, err
    [line] = [line for line in out.splitlines() if line.startswith("next: ")]
    command, *args = shlex.split(line.removeprefix("next: "))
    assert command == "agentctx" and args[args.index("--home") + 1] == str(home)
    result = runner.invoke(app, args, env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.stderr
    assert "travel-agent" in result.stdout and "Booked" in result.stdout


# verify ------------------------------------------------------------------------------------


def test_verify_names_the_first_tampered_seq(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home) as engine:
        bad = record_session(engine, "alice")
        good = record_session(engine, "bob")
        n_events = len(engine.get_session(bad, user_id="alice").events())

    code, out, _ = cli(db_url, home, "sessions", "verify", bad, "--user", "alice")
    assert code == 0
    assert f"{n_events} events, chain intact" in out

    tamper(db_url, "alice", bad, seq=3)

    code, out, _ = cli(db_url, home, "sessions", "verify", bad, "--user", "alice")
    assert code == 1
    assert "TAMPERED" in out
    assert "first bad seq 3" in out

    code, out, _ = cli(db_url, home, "sessions", "verify", good, "--user", "bob")
    assert code == 0

    code, out, _ = cli(db_url, home, "sessions", "verify", "--all")
    assert code == 1
    assert f"alice/{bad}: first bad seq 3" in out
    assert good not in out
    assert "checked 2 sessions" in out
    assert "1 broken" in out


def test_verify_all_checks_every_user(tmp_path: Path) -> None:
    url, home = sqlite_url(tmp_path), tmp_path / "home"
    with ContextEngine(url=url, home=home) as engine:
        ids = [record_session(engine, user, turns=1) for user in ("u1", "u2", "u3")]
        total = sum(
            len(engine.get_session(sid, user_id=user).events())
            for sid, user in zip(ids, ("u1", "u2", "u3"), strict=True)
        )
    code, out, _ = cli(url, home, "sessions", "verify", "--all")
    assert code == 0
    assert f"checked 3 sessions, {total} events: all chains intact" in out

    tamper(url, "u3", ids[2], seq=1)
    code, out, _ = cli(url, home, "sessions", "verify", "--all")
    assert code == 1
    assert f"u3/{ids[2]}: first bad seq 1" in out


def test_verify_needs_a_session_or_all(tmp_path: Path) -> None:
    url, home = sqlite_url(tmp_path), tmp_path / "home"
    assert cli(url, home, "sessions", "verify")[0] == 2
    assert cli(url, home, "sessions", "verify", "s1", "--all")[0] == 2
    code, _, err = cli(url, home, "sessions", "verify", "s1")
    assert code == 2
    assert "--user" in err


# errors ------------------------------------------------------------------------------------


def test_expected_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    url, home = sqlite_url(tmp_path), tmp_path / "home"
    with ContextEngine(url=url, home=home) as engine:
        sid = record_session(engine, "alice", turns=1)

    for args in (
        ("sessions", "show", sid, "--user", "mallory"),  # another user's session
        ("sessions", "show", "no-such-session", "--user", "alice"),
        ("sessions", "verify", sid, "--user", "mallory"),
        ("sessions", "export", sid, "--user", "mallory"),
    ):
        code, out, err = cli(url, home, *args)
        assert code == 2, args
        assert out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ")
        assert "not found" in lines[0] and "Traceback" not in err
    # The wrong user gets exactly the message a missing session gets.
    wrong = cli(url, home, "sessions", "show", sid, "--user", "mallory")[2]
    assert wrong == f"error: session {sid!r} not found [session_not_found]\n"

    code, _, err = cli(url, home, "sessions", "list", "--cursor", "not-a-cursor")
    assert code == 2
    assert "invalid cursor" in err

    code, _, err = cli("mysql://localhost/x", home, "sessions", "sweep")
    assert code == 2
    assert "unsupported database" in err


# list --------------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", [250, 80])
def test_list_pages_through_every_user(db_url: str, home: Path, columns: int) -> None:
    with ContextEngine(url=db_url, home=home) as engine:
        created = {
            (user, engine.create_session(user_id=user, agent_id=agent).id)
            for user, agent in [("u1", "a"), ("u2", "a"), ("u1", "b"), ("u3", "a"), ("u2", "b")]
        }

    seen: list[str] = []
    cursor: list[str] = []
    for _ in range(10):
        # Narrow consoles drop columns, never cut ids or the cursor.
        code, out, _ = cli(
            db_url, home, "sessions", "list", "--limit", "2", *cursor, columns=columns
        )
        assert code == 0
        seen += [sid for _, sid in created if sid in out]
        more = [line for line in out.splitlines() if line.startswith("more: --cursor ")]
        if not more:
            break
        cursor = ["--cursor", more[0].removeprefix("more: --cursor ")]
    assert sorted(seen) == sorted(sid for _, sid in created)  # each once, none missed

    code, out, _ = cli(db_url, home, "sessions", "list", "--user", "u1")
    assert code == 0
    assert {sid for user, sid in created if sid in out} == {s for u, s in created if u == "u1"}

    code, out, _ = cli(db_url, home, "sessions", "list", "--agent", "b")
    assert len([sid for _, sid in created if sid in out]) == 2


# show and export ---------------------------------------------------------------------------


def test_show_prints_info_turns_and_newest_events(tmp_path: Path) -> None:
    url, home = sqlite_url(tmp_path), tmp_path / "home"
    with ContextEngine(url=url, home=home) as engine:
        sid = record_session(engine, "alice", turns=3)
        session = engine.get_session(sid, user_id="alice")
        events = session.events()
        turns = session.turns()

    code, out, _ = cli(url, home, "sessions", "show", sid, "--user", "alice", "--last", "2")
    assert code == 0
    assert f"{len(events)} events in {len(turns)} turns" in out
    assert f"{len(events) - 2} older events not shown" in out
    # The newest two events are the last turn's tool result and reply, not its request.
    assert f"done {len(turns) - 1}" in out
    assert f"request {len(turns) - 1}" not in out
    assert [line.split()[0] for line in out.splitlines() if "tool_result" in line] == [
        str(len(events) - 1)
    ]
    for turn in turns:
        assert turn.turn_id[-8:] in out

    code, out, _ = cli(url, home, "sessions", "show", sid, "--user", "alice", "--last", "0")
    assert code == 0
    assert all(f"request {i}" in out for i in range(len(turns)))


def test_export_writes_one_json_line_per_event(tmp_path: Path) -> None:
    url, home = sqlite_url(tmp_path), tmp_path / "home"
    with ContextEngine(url=url, home=home) as engine:
        sid = record_session(engine, "alice", turns=2)
        events = engine.get_session(sid, user_id="alice").events()

    code, out, _ = cli(url, home, "sessions", "export", sid, "--user", "alice")
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == len(events)
    assert [r["seq"] for r in records] == [e.seq for e in events]
    assert [r["event_id"] for r in records] == [e.event_id for e in events]
    assert [r["hash"] for r in records] == [e.hash for e in events]

    target = tmp_path / "out" / "export.jsonl"
    target.parent.mkdir()
    code, out, _ = cli(
        url, home, "sessions", "export", sid, "--user", "alice", "--out", str(target)
    )
    assert code == 0
    assert f"wrote {len(events)} events" in out
    lines = target.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == records
    assert [p.name for p in target.parent.iterdir()] == ["export.jsonl"]  # no temp file left

    missing = tmp_path / "out" / "missing.jsonl"
    code, _, _ = cli(url, home, "sessions", "export", "nope", "--user", "alice", "-o", str(missing))
    assert code == 2
    assert not missing.exists()


# sweep -------------------------------------------------------------------------------------


def test_sweep_deletes_expired_sessions_and_their_blobs(tmp_path: Path) -> None:
    url, home = sqlite_url(tmp_path), tmp_path / "home"
    # Long enough for two turns with screenshots on a busy machine (300 ms was not: the
    # session expired between its turns), then waited out.
    ttl = 2.0
    with ContextEngine(url=url, home=home, session_ttl=timedelta(seconds=ttl)) as engine:
        doomed = record_session(engine, "alice", turns=2)
        n_events = len(engine.get_session(doomed, user_id="alice").events())
        last_activity = time.monotonic()
    with ContextEngine(url=url, home=home) as engine:
        kept = record_session(engine, "bob", turns=1)
    # record_session draws screenshots by turn number: bob's one equals alice's first, so
    # the content-addressed store holds two files, one of them shared.
    assert len(blob_files(home)) == 2
    time.sleep(max(0.0, last_activity + ttl + 0.1 - time.monotonic()))

    code, out, _ = cli(url, home, "sessions", "sweep")
    assert code == 0
    assert counts(out)["expired sessions deleted"] == 1
    assert counts(out)["events deleted"] == n_events
    assert counts(out)["blobs deleted"] == 1  # alice's own; the shared one stays
    assert len(blob_files(home)) == 1

    with ContextEngine(url=url, home=home) as engine:
        with pytest.raises(SessionNotFound):
            engine.get_session(doomed, user_id="alice")
        session = engine.get_session(kept, user_id="bob")
        assert session.verify().ok
        [image] = [i for e in session.events() for i in e.images]
        assert engine.restore_image(image.image_id, user_id="bob") == make_png(seed=0)
    code, out, _ = cli(url, home, "sessions", "sweep")
    assert counts(out)["expired sessions deleted"] == 0


def test_one_shot_commands_run_follow_up_work_inline_unless_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command opens an engine and exits: its follow-up work runs inline (no worker
    threads or model load left behind), unless the configuration names ``jobs``."""
    from agentctx.cli._common import one_shot
    from agentctx.config import load_settings

    monkeypatch.delenv("AGENTCTX_JOBS", raising=False)
    assert load_settings().jobs == "background"
    assert one_shot(load_settings()).jobs == "inline"
    monkeypatch.setenv("AGENTCTX_JOBS", "background")
    assert one_shot(load_settings()).jobs == "background"
