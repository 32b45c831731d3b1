"""``agentctx memory …`` run in-process against a real home folder (and PostgreSQL).

Sessions are recorded with memory disabled, so nothing is extracted before the
command line asks for it; the commands open their own engine from ``--home``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from agentctx import ContextEngine
from agentctx.cli.main import app
from agentctx.cli.memory import parse_duration, parse_when
from agentctx.events import utcnow

runner = CliRunner()
HASHING = '{"provider": "hashing"}'
MEMORY_ID = re.compile(r"mem_[0-9a-f]{32}")


def cli(home: Path, *args: str, url: str | None = None) -> tuple[int, str, str]:
    """Run ``agentctx [--url URL] --home HOME memory ARGS…``; (exit code, stdout, stderr)."""
    prefix = ["--url", url] if url else []
    result = runner.invoke(
        app,
        [*prefix, "--home", str(home), "memory", *args],
        env={"COLUMNS": "200", "AGENTCTX_EMBEDDINGS": HASHING},
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def open_engine(home: Path, url: str | None = None) -> ContextEngine:
    """An engine that records without extracting (memory off, as the default is)."""
    return ContextEngine(
        url=url,
        home=home,
        memory={"enabled": False},
        session_ttl=None,
        embeddings={"provider": "hashing"},
    )


def record(engine: ContextEngine, user_id: str, *said: str) -> str:
    """A session where the user says each of ``said`` in a turn of its own; its id."""
    session = engine.create_session(user_id=user_id, agent_id="helper")
    for text in said:
        with session.turn() as turn:
            turn.add_message("user", text)
            turn.add_message("assistant", "Noted.")
    return session.id


def counts(out: str) -> dict[str, int]:
    """The ``name   N`` summary lines of an extract report as a dict."""
    found = re.findall(r"^(sessions|created|merged|staled|skipped)\s+(\d+)\s*$", out, re.M)
    return {name: int(value) for name, value in found}


def rows(out: str) -> dict[str, list[str]]:
    """Table rows by memory id: the whitespace-separated cells of the line."""
    return {
        match.group(0): line.split()
        for line in out.splitlines()
        if (match := MEMORY_ID.search(line)) is not None
    }


def field(out: str, name: str) -> str:
    match = re.search(rf"^{name}\s+(.+)$", out, re.MULTILINE)
    assert match is not None, out
    return match.group(1).strip()


@pytest.fixture
def sessions(home: Path) -> dict[str, str]:
    """alice (a nurse who prefers short answers) and bob (lives in Berlin), unextracted."""
    with open_engine(home) as engine:
        return {
            "alice": record(engine, "alice", "I work as a nurse.", "I prefer short answers."),
            "bob": record(engine, "bob", "I live in Berlin."),
        }


def memory_ids(home: Path, user: str, *args: str) -> list[str]:
    code, out, err = cli(home, "list", "--user", user, *args)
    assert code == 0, err
    return list(rows(out))


# extract --since (the scheduled batch) ------------------------------------------------------


def test_extract_since_a_day_creates_memories_and_is_idempotent(db_url: str, home: Path) -> None:
    """On SQLite and PostgreSQL: the batch extracts every recent session once; a rerun
    (an overlapping schedule) creates nothing new."""
    with open_engine(home, db_url) as engine:
        alice = record(engine, "alice", "I work as a nurse.", "I prefer short answers.")
        bob = record(engine, "bob", "I live in Berlin.")
    code, out, err = cli(home, "list", "-u", "alice", url=db_url)
    assert code == 0, err
    assert "has no active memories" in out

    code, out, err = cli(home, "extract", "--since", "1d", url=db_url)
    assert code == 0, err
    assert counts(out) == {"sessions": 2, "created": 3, "merged": 0, "staled": 0, "skipped": 0}
    per_session = {line.split()[1]: line.split() for line in out.splitlines() if alice in line}
    assert per_session[alice][:3] == ["alice", alice, "2"]
    assert any(line.split()[:3] == ["bob", bob, "1"] for line in out.splitlines())

    code, out, err = cli(home, "list", "-u", "alice", url=db_url)
    assert code == 0, err
    listed = rows(out)
    assert len(listed) == 2
    assert "User works as a nurse" in out and "User wants short answers" in out
    for cells in listed.values():
        assert cells[-4:-2] == ["1", "active"]  # version 1, active

    code, out, err = cli(home, "extract", "--since", "P1D", url=db_url)
    assert code == 0, err
    assert counts(out) == {"sessions": 2, "created": 0, "merged": 0, "staled": 0, "skipped": 0}
    code, out, _ = cli(home, "list", "-u", "alice", url=db_url)
    assert set(rows(out)) == set(listed)


def test_extract_since_respects_the_range_and_the_user(
    home: Path, sessions: dict[str, str]
) -> None:
    # Everything was said within the last minute: a range ending an hour ago is empty.
    code, out, err = cli(home, "extract", "--since", "1d", "--until", "1h")
    assert code == 0, err
    assert "no sessions with events" in out
    future = (utcnow() + timedelta(hours=2)).astimezone().isoformat()  # a local offset
    code, out, err = cli(home, "extract", "--since", future)
    assert code == 0, err
    assert "no sessions with events" in out
    assert memory_ids(home, "alice") == []

    # A bare date is midnight UTC; --user keeps the batch to one user.
    code, out, err = cli(home, "extract", "--since", "2020-01-01", "--user", "bob")
    assert code == 0, err
    assert counts(out)["sessions"] == 1 and counts(out)["created"] == 1
    assert sessions["bob"] in out and sessions["alice"] not in out
    assert memory_ids(home, "alice") == []
    assert len(memory_ids(home, "bob")) == 1

    until = (utcnow() + timedelta(minutes=5)).replace(tzinfo=None).isoformat()  # naive: UTC
    code, out, err = cli(home, "extract", "--since", "12h", "--until", until)
    assert code == 0, err
    assert counts(out) == {"sessions": 2, "created": 2, "merged": 0, "staled": 0, "skipped": 0}
    assert len(memory_ids(home, "alice")) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "yesterday"], "--since: 'yesterday' is neither"),
        (["--since", "P1M"], "--since: 'P1M' is neither"),  # months have no fixed length
        (["--since", "1d", "--until", "2d"], "--until"),
        (["--since", "1d", "--until", "not-a-time"], "--until: 'not-a-time'"),
        ([], "give --since WHEN"),
        (["--session", "s1"], "--session needs --user"),
        (["--user", "alice", "--session", "s1", "--since", "1d"], "not both"),
    ],
)
def test_extract_rejects_bad_input_with_exit_2(home: Path, args: list[str], message: str) -> None:
    code, out, err = cli(home, "extract", *args)
    assert code == 2
    assert out == ""
    assert err.startswith("error: ") and message in err
    assert len(err.strip().splitlines()) == 1


# extract one session ------------------------------------------------------------------------


def test_extract_one_session(home: Path, sessions: dict[str, str]) -> None:
    code, out, err = cli(home, "extract", "--user", "alice", "--session", sessions["alice"])
    assert code == 0, err
    assert counts(out) == {"created": 2, "merged": 0, "staled": 0, "skipped": 0}
    assert len(memory_ids(home, "alice")) == 2
    assert memory_ids(home, "bob") == []  # only the named session

    code, out, _ = cli(home, "extract", "-u", "alice", "-s", sessions["alice"])
    assert counts(out)["created"] == 0


def test_extract_of_another_users_session_exits_2(home: Path, sessions: dict[str, str]) -> None:
    code, out, err = cli(home, "extract", "--user", "mallory", "--session", sessions["alice"])
    assert code == 2
    assert out == ""
    assert "not found [session_not_found]" in err
    assert memory_ids(home, "alice") == [] and memory_ids(home, "mallory") == []


# list, search, show --------------------------------------------------------------------------


@pytest.fixture
def extracted(home: Path, sessions: dict[str, str]) -> dict[str, str]:
    """After the batch: {"nurse": id, "short": id, "berlin": id}."""
    code, _, err = cli(home, "extract", "--since", "1d")
    assert code == 0, err
    with open_engine(home) as engine:
        by_text = {
            memory.content: memory.memory_id
            for user in ("alice", "bob")
            for memory in engine.memory.list(user)
        }
    return {
        "nurse": by_text["User works as a nurse"],
        "short": by_text["User wants short answers"],
        "berlin": next(mid for text, mid in by_text.items() if "Berlin" in text),
    }


def test_list_filters_by_kind_status_and_limit(home: Path, extracted: dict[str, str]) -> None:
    code, out, err = cli(home, "list", "-u", "alice", "--kind", "profile")
    assert code == 0, err
    assert list(rows(out)) == [extracted["nurse"]]
    cells = rows(out)[extracted["nurse"]]
    assert cells[1] == "profile" and "0.80" in cells
    assert "Memories (1)" in out

    assert len(memory_ids(home, "alice", "--limit", "1")) == 1
    assert memory_ids(home, "alice", "--status", "stale") == []
    assert memory_ids(home, "alice", "--kind", "skill") == []

    code, _, err = cli(home, "list", "-u", "alice", "--kind", "gossip")
    assert code == 2 and "--kind" in err
    code, _, err = cli(home, "list", "-u", "alice", "--limit", "0")
    assert code == 2 and "--limit" in err


def test_search_ranks_the_matching_memory_first(home: Path, extracted: dict[str, str]) -> None:
    code, out, err = cli(home, "search", "--user", "alice", "nurse")
    assert code == 0, err
    found = rows(out)
    assert next(iter(found)) == extracted["nurse"]
    assert extracted["berlin"] not in found  # bob's memory is never searched for alice
    score = float(found[extracted["nurse"]][0])
    assert 0 < score <= 1

    code, out, err = cli(home, "search", "-u", "bob", "nurse")
    assert code == 0, err
    assert extracted["nurse"] not in out

    code, _, err = cli(home, "search", "-u", "alice", "  ")
    assert code == 2 and "QUERY" in err


def test_show_prints_fields_provenance_and_history(
    home: Path, sessions: dict[str, str], extracted: dict[str, str]
) -> None:
    memory_id = extracted["nurse"]
    code, out, err = cli(home, "show", memory_id, "--user", "alice")
    assert code == 0, err
    assert field(out, "memory") == memory_id
    assert field(out, "kind") == "profile"
    assert field(out, "subject") == "occupation"
    assert field(out, "status") == "active"
    assert field(out, "version") == "1"
    assert field(out, "content") == "User works as a nurse"
    assert field(out, "support") == "1 session(s)"
    source = next(line.split() for line in out.splitlines() if sessions["alice"] in line)
    assert source[2] == "1"  # the seq of "I work as a nurse."
    assert "History (1)" in out
    assert re.search(r"^\s*1\s+create\s+extracted\s", out, re.MULTILINE)


# delete and ownership ------------------------------------------------------------------------


def test_delete_hides_the_memory_but_keeps_its_history(
    home: Path, extracted: dict[str, str]
) -> None:
    nurse, short = extracted["nurse"], extracted["short"]
    for memory_id in (nurse, short):
        code, out, err = cli(home, "delete", memory_id, "--user", "alice")
        assert code == 0, err
        assert out.strip() == f"deleted memory {memory_id} (version 2)"

    code, out, err = cli(home, "list", "-u", "alice")
    assert code == 0, err
    assert rows(out) == {} and "has no active memories" in out
    code, out, _ = cli(home, "search", "-u", "alice", "nurse")
    assert nurse not in out
    assert set(memory_ids(home, "alice", "--status", "deleted")) == {nurse, short}
    assert set(memory_ids(home, "alice", "--status", "all")) == {nurse, short}

    code, out, err = cli(home, "show", nurse, "-u", "alice")
    assert code == 0, err
    assert field(out, "status") == "deleted"
    assert "History (2)" in out
    assert re.search(r"^\s*2\s+delete\s+deleted\s", out, re.MULTILINE)

    # Deleting again changes nothing.
    code, out, err = cli(home, "delete", nurse, "-u", "alice")
    assert code == 0, err
    assert "already deleted" in out
    code, out, _ = cli(home, "show", nurse, "-u", "alice")
    assert field(out, "version") == "2" and "History (2)" in out


def test_another_users_or_unknown_memory_exits_2(home: Path, extracted: dict[str, str]) -> None:
    nurse = extracted["nurse"]
    for command in ("show", "delete"):
        code, out, err = cli(home, command, nurse, "--user", "bob")
        assert code == 2
        assert out == ""
        assert err.strip() == f"error: memory {nurse!r} not found [memory_not_found]"
    code, _, err = cli(home, "show", "mem_" + "0" * 32, "-u", "alice")
    assert code == 2 and "[memory_not_found]" in err
    assert "Traceback" not in err

    code, out, _ = cli(home, "show", nurse, "-u", "alice")  # untouched by bob's attempt
    assert field(out, "status") == "active" and field(out, "version") == "1"


# opt-out -------------------------------------------------------------------------------------


def test_opt_out_stops_declarative_extraction_until_undone(
    home: Path, extracted: dict[str, str]
) -> None:
    code, out, err = cli(home, "opt-out", "--user", "alice")
    assert code == 0, err
    assert "opted out of declarative memory" in out and "2 active memories are kept" in out
    with open_engine(home) as engine:
        assert engine.memory.opted_out("alice")
        later = record(engine, "alice", "I live in Lisbon.")

    code, out, err = cli(home, "extract", "-u", "alice", "-s", later)
    assert code == 0, err
    assert counts(out)["created"] == 0 and counts(out)["skipped"] >= 1
    assert len(memory_ids(home, "alice")) == 2  # kept, nothing added

    code, out, err = cli(home, "opt-out", "--user", "alice", "--undo")
    assert code == 0, err
    assert "opted back into declarative memory" in out
    with open_engine(home) as engine:
        assert not engine.memory.opted_out("alice")
        again = record(engine, "alice", "I live in Porto.")
    code, out, err = cli(home, "extract", "-u", "alice", "-s", again)
    assert code == 0, err
    assert counts(out)["created"] == 1
    code, out, _ = cli(home, "search", "-u", "alice", "Porto")
    assert "Porto" in out


# time arguments ------------------------------------------------------------------------------

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1d", timedelta(days=1)),
        ("12h", timedelta(hours=12)),
        ("1d12h", timedelta(days=1, hours=12)),
        ("90m", timedelta(minutes=90)),
        ("2w", timedelta(weeks=2)),
        ("P1D", timedelta(days=1)),
        ("PT12H", timedelta(hours=12)),
        ("p1dt6h30m", timedelta(days=1, hours=6, minutes=30)),
        ("P1W", timedelta(weeks=1)),
        ("PT0.5H", timedelta(minutes=30)),
    ],
)
def test_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected
    assert parse_when(text, now=NOW, option="--since") == NOW - expected


@pytest.mark.parametrize("text", ["P", "PT", "P1DT", "P1M", "P1Y", "1x", "d", "1d2", "", "1 day"])
def test_not_durations(text: str) -> None:
    assert parse_duration(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-01", datetime(2026, 11, 1, tzinfo=UTC)),
        ("2026-11-01T08:30:00", datetime(2026, 11, 1, 8, 30, tzinfo=UTC)),
        ("2026-11-01T08:30:00+01:00", datetime(2026, 11, 1, 7, 30, tzinfo=UTC)),
        ("2026-11-01T08:30:00Z", datetime(2026, 11, 1, 8, 30, tzinfo=UTC)),
        ("now", NOW),
    ],
)
def test_points_in_time_are_utc(text: str, expected: datetime) -> None:
    moment = parse_when(text, now=NOW, option="--since")
    assert moment == expected and moment.utcoffset() == timedelta(0)


def test_bad_point_in_time_exits_2() -> None:
    with pytest.raises(typer.Exit) as raised:
        parse_when("2026-13-01", now=NOW, option="--until")
    assert raised.value.exit_code == 2
    for too_far in ("99999999d", "9999999999d"):
        with pytest.raises(typer.Exit):
            parse_when(too_far, now=NOW, option="--since")
