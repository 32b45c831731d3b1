"""Cold-storage retention (seed 000, section 2.4): ``cleanup(retention_days=30)``.

Guarantees: only the bytes of images no live window needs (every reference compressed)
and older than the retention are removed; their metadata stays, so a restore raises
``ImageExpired`` saying so; the event log is untouched (its hash chain verifies); the
same screenshot sent again is live again; blob files are written atomically; a cleanup
interrupted between expiring and removing files is finished by the next one.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path

import pytest
from visual_screens import (
    BIG,
    distinct_screens,
    image_urls,
    open_engine,
    placeholders,
    screen_turn,
    screenshot,
)

from agentctx.errors import BlobNotFound, ImageExpired, InvalidInput
from agentctx.events import utcnow
from agentctx.storage.blobs import FileBlobStore


def run_together(*actions: Callable[[], object]) -> list[BaseException]:
    """Run ``actions`` in threads released at the same moment; the errors they raised."""
    barrier = threading.Barrier(len(actions))
    errors: list[BaseException] = []

    def run(action: Callable[[], object]) -> None:
        try:
            barrier.wait()
            action()
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(action,)) for action in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def blob_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_cleanup_expires_only_compressed_images(db_url: str, home: Path) -> None:
    anchor = screenshot(3)
    near_anchor = screenshot(3, cursor=(700, 420))  # a process frame reusing the anchor's id
    middle = distinct_screens(10, 3)
    result = screenshot(0)
    frames = [anchor, near_anchor, *middle, result]
    with open_engine(db_url, home, jobs="inline") as engine:
        session = engine.create_session(user_id="u1")
        screen_turn(session, frames)
        images = session.images()
        assert images[1].image_id == images[0].image_id and images[1].dedup_distance is not None
        compressed = [f for f in images if f.is_compressed]
        kept = [f for f in images if not f.is_compressed]
        assert len(compressed) == 4 and len(kept) == 2
        now = utcnow()

        # Within the retention nothing goes.
        with pytest.raises(InvalidInput):
            engine.cleanup(retention_days=0)
        early = engine.cleanup(retention_days=30, now=now + timedelta(days=10))
        assert early.expired == 0 and early.files_removed == 0

        report = engine.cleanup(retention_days=30, now=now + timedelta(days=31))
        gone = {f.blob_id for f in compressed} - {f.blob_id for f in kept}
        assert report.expired == len(gone) == 3
        assert report.files_removed == 3
        assert report.bytes_freed == sum(len(f) for f in middle)
        for blob_id in gone:
            assert not engine.blobs.exists(blob_id)
        # The anchor stays although its near-duplicate (a process frame) was compressed.
        for frame, data in ((images[0], anchor), (images[-1], result)):
            assert engine.restore_image(frame.image_id, user_id="u1") == data
        for frame in images[2:5]:
            with pytest.raises(ImageExpired, match="expired") as caught:
                session.restore_image(frame.image_id)
            assert isinstance(caught.value, BlobNotFound)
            assert caught.value.code == "image_expired"
        assert session.verify().ok
        assert len(session.events()) == 2 + 2 * len(frames)
        # Windows still show placeholders; asking for an expired one does not fail.
        window = session.build_context(
            budget=BIG, strategy="full", restore_images=[images[2].image_id]
        )
        assert len(image_urls(window)) == 2
        # A second cleanup finds nothing new.
        again = engine.cleanup(retention_days=30, now=now + timedelta(days=31))
        assert again.expired == 0 and again.files_removed == 0


def test_the_same_screenshot_again_is_live_again(db_url: str, home: Path) -> None:
    frames = distinct_screens(0, 4)
    with open_engine(db_url, home, jobs="inline") as engine:
        session = engine.create_session(user_id="u1")
        screen_turn(session, frames)
        lost = session.images()[1]
        assert lost.is_compressed
        engine.cleanup(retention_days=30, now=utcnow() + timedelta(days=31))
        with pytest.raises(ImageExpired):
            session.restore_image(lost.image_id)
        # The agent sees that screen again: same bytes, same id, bytes stored again.
        screen_turn(session, [frames[1], distinct_screens(20, 1)[0]])
        assert session.images()[4].image_id == lost.image_id
        assert session.restore_image(lost.image_id) == frames[1]
        assert engine.blobs.exists(lost.blob_id)
        # It is the new turn's anchor, so it survives the next cleanup's expiry too.
        engine.cleanup(retention_days=30, now=utcnow() + timedelta(days=31))
        assert session.restore_image(lost.image_id) == frames[1]
        assert session.verify().ok


class FailingDeletes(FileBlobStore):
    """A real file store whose ``delete`` fails after ``allowed`` removals (a crash)."""

    def __init__(self, root: Path, allowed: int) -> None:
        super().__init__(root)
        self.allowed = allowed

    def delete(self, blob_id: str) -> bool:
        if self.allowed == 0:
            raise OSError("disk went away")
        self.allowed -= 1
        return super().delete(blob_id)


def test_interrupted_cleanup_is_finished_by_the_next(db_url: str, home: Path) -> None:
    frames = distinct_screens(5, 5)
    store = FailingDeletes(home / "blobs", allowed=1)
    with open_engine(db_url, home, jobs="inline", blob_store=store) as engine:
        session = engine.create_session(user_id="u1")
        screen_turn(session, frames)
        compressed = [f for f in session.images() if f.is_compressed]
        later = utcnow() + timedelta(days=31)
        with pytest.raises(OSError):
            engine.cleanup(retention_days=30, now=later)
        # The expiry committed; one file went, two are left behind.
        for frame in compressed:
            with pytest.raises(ImageExpired):
                session.restore_image(frame.image_id)
        assert sum(store.exists(f.blob_id) for f in compressed) == 2
        store.allowed = 100
        report = engine.cleanup(retention_days=30, now=later)
        assert report.expired == 0 and report.files_removed == 2
        assert not any(store.exists(f.blob_id) for f in compressed)
        kept = [f for f in session.images() if not f.is_compressed]
        assert all(session.restore_image(f.image_id) for f in kept)


def test_blob_files_are_written_atomically(db_url: str, home: Path) -> None:
    frames = [*distinct_screens(12, 4), screenshot(1, fmt="JPEG"), screenshot(2, fmt="WEBP")]
    with open_engine(db_url, home, jobs="inline") as engine:
        assert isinstance(engine.blobs, FileBlobStore)
        session = engine.create_session(user_id="u1")
        screen_turn(session, frames)
        files = blob_files(engine.blobs.root)
        assert not [p for p in files if p.name.startswith(".tmp")]
        # Every file is complete: its name is the sha256 of its content.
        assert {p.name for p in files} >= {hashlib.sha256(f).hexdigest() for f in frames}
        for path in files:
            assert hashlib.sha256(path.read_bytes()).hexdigest() == path.name
        engine.cleanup(retention_days=30, now=utcnow() + timedelta(days=31))
        assert not [p for p in blob_files(engine.blobs.root) if p.name.startswith(".tmp")]
        assert placeholders(session.build_context(budget=BIG, strategy="full"))


def test_cleanup_racing_a_resend_never_loses_a_live_image(db_url: str, home: Path) -> None:
    """Cleanup and an agent sending an expiring screenshot again, at once: whichever
    wins, the image ends live (the new turn's anchor) with its bytes restorable."""
    with open_engine(db_url, home, jobs="inline") as engine:
        for round_ in range(3):
            frames = distinct_screens(round_ * 4, 4)
            session = engine.create_session(user_id="u1")
            screen_turn(session, frames[:3])
            target = session.images()[1]
            assert target.is_compressed
            errors = run_together(
                partial(engine.cleanup, retention_days=30, now=utcnow() + timedelta(days=31)),
                partial(screen_turn, session, [frames[1], frames[3]]),
            )
            assert errors == []
            latest = session.images()
            assert latest[3].image_id == target.image_id and latest[3].frame == "anchor"
            assert session.restore_image(target.image_id) == frames[1]
            assert engine.blobs.exists(target.blob_id)
