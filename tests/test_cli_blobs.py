"""``agentctx blobs …`` run in-process against a real home folder (SQLite, blob files)."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from agentctx import ContextEngine
from agentctx.cli.main import app
from agentctx.events import utcnow
from agentctx.storage.schema import blob_refs
from conftest import make_png

runner = CliRunner()


def cli(home: Path, *args: str, url: str | None = None) -> tuple[int, str, str]:
    """Run ``agentctx [--url URL] --home HOME ARGS…``; returns (exit code, stdout, stderr)."""
    prefix = ["--url", url] if url else []
    result = runner.invoke(app, [*prefix, "--home", str(home), *args], env={"COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def record_turn(engine: ContextEngine, user_id: str = "alice", images: int = 3) -> str:
    """A session with one ended turn holding ``images`` distinct screenshots; its id."""
    session = engine.create_session(user_id=user_id, agent_id="helper")
    with session.turn() as turn:
        turn.add_message("user", "open the settings page")
        for index in range(images):
            call = f"call_{index}"
            turn.add_tool_call("screenshot", {"step": index}, call_id=call)
            # Seeds far apart so perceptual dedup keeps every frame.
            turn.add_tool_result(call, content="ok", images=[make_png(seed=index * 20)])
        turn.add_message("assistant", "done")
    return session.id


def field(out: str, name: str) -> str:
    """The value of a ``name   value`` line of the restore report."""
    match = re.search(rf"^{name}\s+(.+)$", out, re.MULTILINE)
    assert match is not None, out
    return match.group(1).strip()


def counts(out: str) -> dict[str, int]:
    """The cleanup report's ``name   N`` lines as a dict."""
    pairs = (line.rsplit(maxsplit=1) for line in out.splitlines() if line.strip())
    return {name.strip(): int(value) for name, value in pairs}


@pytest.fixture
def recorded(home: Path) -> tuple[str, list[tuple[str, str]]]:
    """(session id, [(image id, blob id)] in log order) of alice's three-image turn."""
    with ContextEngine(home=home, session_ttl=None) as engine:
        session_id = record_turn(engine)
        frames = engine.get_session(session_id, user_id="alice").images()
    return session_id, [(frame.image_id, frame.blob_id) for frame in frames]


# restore -----------------------------------------------------------------------------------


def test_restore_writes_the_original_bytes(
    home: Path, tmp_path: Path, recorded: tuple[str, list[tuple[str, str]]]
) -> None:
    _, images = recorded
    image_id, blob_id = images[0]
    target = tmp_path / "out" / "shot.png"
    target.parent.mkdir()

    code, out, err = cli(
        home, "blobs", "restore", image_id, "--user", "alice", "--out", str(target)
    )
    assert code == 0, err
    data = target.read_bytes()
    assert data == make_png(seed=0)
    digest = hashlib.sha256(data).hexdigest()
    assert digest == blob_id  # blobs are content-addressed by their sha256
    assert field(out, "sha256") == digest
    assert field(out, "file") == str(target)
    assert field(out, "size") == f"{len(data):,} bytes"
    assert field(out, "pixels") == "320x200 (PNG)"
    assert not list(target.parent.glob(".*.tmp"))  # the temporary file was renamed away


def test_restore_default_file_name_is_the_image_id(
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    recorded: tuple[str, list[tuple[str, str]]],
) -> None:
    _, images = recorded
    image_id, blob_id = images[2]
    workdir = tmp_path / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir)

    code, out, err = cli(home, "blobs", "restore", image_id, "-u", "alice")
    assert code == 0, err
    written = workdir / f"{image_id}.png"
    assert [p.name for p in workdir.iterdir()] == [written.name]
    assert hashlib.sha256(written.read_bytes()).hexdigest() == blob_id
    assert field(out, "file") == str(written)


def test_restore_of_another_users_or_unknown_image_exits_2(
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    recorded: tuple[str, list[tuple[str, str]]],
) -> None:
    _, images = recorded
    image_id, _ = images[0]
    monkeypatch.chdir(tmp_path)

    code, out, err = cli(home, "blobs", "restore", image_id, "--user", "mallory")
    assert code == 2
    assert out == ""
    assert err.strip() == f"error: blob {image_id!r} not found [blob_not_found]"
    code, _, err = cli(home, "blobs", "restore", "img_" + "0" * 24, "--user", "alice")
    assert code == 2
    assert "not found [blob_not_found]" in err
    assert "Traceback" not in err
    assert not list(tmp_path.glob("img_*"))  # nothing written for a failed restore


def test_restore_of_an_expired_image_says_it_expired(
    db_url: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite and PostgreSQL: after retention removed the middle (compressed) frame,
    restoring it exits 2 saying it expired; the kept frames still restore."""
    with ContextEngine(url=db_url, home=home, session_ttl=None) as engine:
        session_id = record_turn(engine)
        frames = engine.get_session(session_id, user_id="alice").images()
        report = engine.cleanup(30, now=utcnow() + timedelta(days=400))
    assert report.expired == 1
    monkeypatch.chdir(tmp_path)

    middle = frames[1].image_id
    code, out, err = cli(home, "blobs", "restore", middle, "--user", "alice", url=db_url)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "has expired" in err and "[image_expired]" in err
    assert not list(tmp_path.glob(f"{middle}*"))

    code, _, err = cli(home, "blobs", "restore", frames[0].image_id, "-u", "alice", url=db_url)
    assert code == 0, err
    assert (tmp_path / f"{frames[0].image_id}.png").read_bytes() == make_png(seed=0)


def test_restore_into_a_missing_folder_exits_2(
    home: Path, tmp_path: Path, recorded: tuple[str, list[tuple[str, str]]]
) -> None:
    _, images = recorded
    target = tmp_path / "nowhere" / "shot.png"
    code, _, err = cli(home, "blobs", "restore", images[0][0], "-u", "alice", "-o", str(target))
    assert code == 2
    assert "no such folder" in err
    assert not target.parent.exists()


# cleanup -----------------------------------------------------------------------------------


def test_cleanup_prints_counts_and_expires_old_compressed_images(
    home: Path, tmp_path: Path, recorded: tuple[str, list[tuple[str, str]]]
) -> None:
    session_id, images = recorded
    # The screenshots were taken 40 days ago.
    with ContextEngine(home=home, session_ttl=None) as engine, engine.db.write() as conn:
        conn.execute(
            update(blob_refs)
            .where(blob_refs.c.session_id == session_id)
            .values(created_at=utcnow() - timedelta(days=40))
        )
    middle_size = len(make_png(seed=20))

    code, out, err = cli(home, "blobs", "cleanup", "--retention-days", "60")
    assert code == 0, err
    assert counts(out) == {
        "images expired": 0,
        "bytes freed": 0,
        "files removed": 0,
        "retention days": 60,
    }

    code, out, err = cli(home, "blobs", "cleanup")  # the default retention: 30 days
    assert code == 0, err
    assert counts(out) == {
        "images expired": 1,  # only the compressed middle frame: no window needs it
        "bytes freed": middle_size,
        "files removed": 1,
        "retention days": 30,
    }

    code, out, _ = cli(home, "blobs", "cleanup")
    assert counts(out)["images expired"] == 0  # already expired: nothing more to do
    code, _, err = cli(
        home, "blobs", "restore", images[1][0], "-u", "alice", "-o", str(tmp_path / "x.png")
    )
    assert code == 2 and "expired" in err


def test_cleanup_rejects_a_retention_below_one_day(home: Path) -> None:
    code, _, err = cli(home, "blobs", "cleanup", "--retention-days", "0")
    assert code == 2
    assert "--retention-days" in err


# list --------------------------------------------------------------------------------------


def test_list_shows_the_frames_of_an_ended_turn(
    home: Path, recorded: tuple[str, list[tuple[str, str]]]
) -> None:
    session_id, images = recorded
    code, out, err = cli(home, "blobs", "list", "--user", "alice", "--session", session_id)
    assert code == 0, err
    assert "Images (3)" in out
    rows = {
        image_id: line.split()
        for line in out.splitlines()
        for image_id, _ in images
        if image_id in line
    }
    assert len(rows) == 3
    first, middle, last = (rows[image_id] for image_id, _ in images)
    # seq, image, turn, frame, compressed
    assert first[3:5] == ["anchor", "no"]
    assert middle[3:5] == ["process", "yes"]
    assert last[3:5] == ["result", "no"]
    assert int(first[0]) < int(middle[0]) < int(last[0])
    assert first[2] == middle[2] == last[2]  # one turn


def test_list_of_another_users_session_exits_2(
    home: Path, recorded: tuple[str, list[tuple[str, str]]]
) -> None:
    session_id, _ = recorded
    code, out, err = cli(home, "blobs", "list", "-u", "mallory", "-s", session_id)
    assert code == 2
    assert out == ""
    assert "not found [session_not_found]" in err


def test_list_of_a_session_without_images(home: Path) -> None:
    with ContextEngine(home=home, session_ttl=None) as engine:
        session = engine.create_session(user_id="alice", agent_id="helper")
        with session.turn() as turn:
            turn.add_message("user", "hello")
    code, out, err = cli(home, "blobs", "list", "-u", "alice", "-s", session.id)
    assert code == 0, err
    assert "has no images" in out
