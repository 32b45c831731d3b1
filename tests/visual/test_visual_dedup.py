"""Perceptual dedup on arrival (seed 000, Phase 3).

Guarantees: a screenshot within ``threshold`` bits (and the colour tolerance) of the
session's previous *stored* image reuses that image's id and stores no bytes of its
own, and the part records the distance; anything else is stored as a new image.
"""

from __future__ import annotations

import base64
import hashlib
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import imagehash
import pytest
from PIL import Image
from visual_screens import (
    HEIGHT,
    WIDTH,
    desktop,
    drifting,
    encode,
    flat,
    open_engine,
    screenshot,
)

from agentctx import ContextEngine
from agentctx.errors import InvalidEvent
from agentctx.events import EventDraft, EventType, ImageData, ImagePart
from agentctx.perception import color_distance, decode, hamming, perceptual_hashes
from agentctx.sessions.session import Session
from agentctx.storage.blobs import FileBlobStore


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def send(session: Session, *frames: bytes) -> list[ImagePart]:
    """One tool result per frame; the stored image parts, in order."""
    parts: list[ImagePart] = []
    for frame in frames:
        call = session.add_tool_call("computer", {"action": "screenshot"})
        event = session.add_tool_result(call.call_id, "ok", images=[frame])
        parts.extend(event.images)
    return parts


def test_near_duplicate_reuses_the_previous_image_and_stores_no_bytes(
    db_url: str, home: Path
) -> None:
    first = drifting(0)
    near = drifting(1)  # a dark panel 80 px wide slid in: a small change
    moved = screenshot(3, cursor=(652, 397))  # the pointer moved a few pixels
    other = screenshot(6)  # another screen altogether
    expected = hamming(perceptual_hashes(first).phash, perceptual_hashes(near).phash)
    assert 0 < expected <= 10 and first != near
    with open_engine(db_url, home) as engine:
        session = engine.create_session(user_id="u1")
        a, b = send(session, first, near)
        assert a.dedup_distance is None
        assert (b.image_id, b.blob_id, b.dedup_distance) == (a.image_id, a.blob_id, expected)
        assert not engine.blobs.exists(sha(near))  # its bytes were never stored
        assert engine.blobs.exists(sha(first))
        # The log says a screenshot was taken: the event re-read carries the reference.
        stored = session.events()[-1].images[0]
        assert stored.image_id == a.image_id and stored.dedup_distance == expected
        frames = session.images()
        assert [(f.image_id, f.dedup_distance) for f in frames] == [
            (a.image_id, None),
            (a.image_id, expected),
        ]
        # Restoring the duplicate's id gives the image it stands for.
        assert engine.restore_image(b.image_id, user_id="u1") == first

        # The cursor moved only: a duplicate of screen 3 (the same scene as drifting(0)).
        session2 = engine.create_session(user_id="u1")
        c, d = send(session2, screenshot(3), moved)
        assert d.image_id == c.image_id and d.dedup_distance is not None
        assert not engine.blobs.exists(sha(moved))

        # Beyond the threshold: a new image with bytes of its own.
        (e,) = send(session, other)
        assert e.image_id != a.image_id and e.dedup_distance is None
        assert engine.blobs.exists(sha(other)) and e.blob_id == sha(other)
        assert engine.restore_image(e.image_id, user_id="u1") == other


def test_exact_same_bytes_keep_their_id_without_a_distance(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    shot = screenshot(1)
    a, b = send(session, shot, shot)
    assert b.image_id == a.image_id and b.blob_id == a.blob_id == sha(shot)
    assert a.dedup_distance is None and b.dedup_distance is None
    assert [f.dedup_distance for f in session.images()] == [None, None]


def test_flat_screens_of_different_colours_are_not_duplicates(db_url: str, home: Path) -> None:
    white, red = encode(flat((255, 255, 255))), encode(flat((200, 30, 30)))
    wh, rh = perceptual_hashes(white), perceptual_hashes(red)
    # Grey-level hashes cannot tell them apart; only the colour guard does.
    assert hamming(wh.phash, rh.phash) <= 10
    assert color_distance(wh.mean_color, rh.mean_color) > 24
    with open_engine(db_url, home) as engine:
        session = engine.create_session(user_id="u1")
        a, b = send(session, white, red)
        assert b.image_id != a.image_id and b.dedup_distance is None
        assert engine.restore_image(b.image_id, user_id="u1") == red
    with open_engine(db_url, home / "loose", visual={"dedup": {"color_tolerance": 255}}) as loose:
        session = loose.create_session(user_id="u1")
        a, b = send(session, white, red)
        assert b.image_id == a.image_id and b.dedup_distance is not None


@pytest.mark.parametrize(
    "dedup", [{"threshold": 0}, {"enabled": False}], ids=["threshold-0", "disabled"]
)
def test_dedup_can_be_turned_off(db_url: str, home: Path, dedup: dict[str, object]) -> None:
    first, near = drifting(0), drifting(1)  # duplicates at the default threshold
    with open_engine(db_url, home, visual={"dedup": dedup}) as engine:
        session = engine.create_session(user_id="u1")
        a, b = send(session, first, near)
        assert b.image_id != a.image_id and b.dedup_distance is None
        assert engine.blobs.exists(sha(near))
        assert engine.restore_image(b.image_id, user_id="u1") == near


@pytest.mark.parametrize("algorithm", ["dhash", "ahash"])
def test_other_hash_algorithms(db_url: str, home: Path, algorithm: str) -> None:
    first, near, other = drifting(0), drifting(1), screenshot(0)
    distance = hamming(
        perceptual_hashes(first).get(algorithm), perceptual_hashes(near).get(algorithm)
    )
    far = hamming(perceptual_hashes(first).get(algorithm), perceptual_hashes(other).get(algorithm))
    assert distance <= 10 < far
    with open_engine(db_url, home, visual={"dedup": {"algorithm": algorithm}}) as engine:
        session = engine.create_session(user_id="u1")
        a, b, c = send(session, first, near, other)
        assert (b.image_id, b.dedup_distance) == (a.image_id, distance)
        assert c.image_id not in (a.image_id,) and c.dedup_distance is None


def test_the_baseline_is_the_previous_stored_image_so_drift_does_not_chain(
    db_url: str, home: Path
) -> None:
    """Frames each a few bits from the one before, drifting far from where they began:
    each is compared with the last *stored* image, so the drift ends in new images."""
    threshold = 8
    frames = [drifting(step) for step in range(10)]
    hashes = [perceptual_hashes(f) for f in frames]
    # The model of the rule, computed independently: baseline = last stored frame.
    expected: list[int] = []  # for each frame, the index of the frame whose id it gets
    baseline = 0
    chained_apart = 0  # frames within the threshold of their predecessor, stored anew
    for index in range(len(frames)):
        if index == 0:
            expected.append(0)
            continue
        to_base = hamming(hashes[index].phash, hashes[baseline].phash)
        colour = color_distance(hashes[index].mean_color, hashes[baseline].mean_color)
        if to_base <= threshold and colour <= 24:
            expected.append(baseline)
        else:
            to_prev = hamming(hashes[index].phash, hashes[index - 1].phash)
            chained_apart += to_prev <= threshold
            baseline = index
            expected.append(index)
    assert chained_apart >= 1, "the drift must include a step chaining would have caught"
    assert len(set(expected)) >= 3
    with open_engine(db_url, home, visual={"dedup": {"threshold": threshold}}) as engine:
        session = engine.create_session(user_id="u1")
        parts = send(session, *frames)
        ids = [p.image_id for p in parts]
        assert ids == [ids[e] for e in expected]
        for part, owner in zip(parts, expected, strict=True):
            assert part.blob_id == sha(frames[owner])
        # Every distinct image is restorable as the bytes of its first frame.
        for owner in set(expected):
            assert engine.restore_image(ids[owner], user_id="u1") == frames[owner]


def test_images_of_one_event_and_one_batch_compare_in_order(engine: ContextEngine) -> None:
    first, near, other, near_other = (
        screenshot(3),
        screenshot(3, cursor=(660, 410)),
        screenshot(6),
        screenshot(6, cursor=(100, 120)),
    )
    session = engine.create_session(user_id="u1")
    call = session.add_tool_call("computer", {"action": "screenshot"})
    event = session.add_tool_result(
        call.call_id, "4 shots", images=[first, near, other, near_other]
    )
    a, b, c, d = event.images
    assert b.image_id == a.image_id and b.dedup_distance is not None
    assert c.image_id not in (a.image_id,) and c.dedup_distance is None
    assert d.image_id == c.image_id and d.dedup_distance is not None
    assert not engine.blobs.exists(sha(near)) and not engine.blobs.exists(sha(near_other))
    # Across the events of one append batch too, and against the log before the batch.
    batch = session.append(
        EventDraft(
            type=EventType.USER_INPUT, parts=(ImageData(data=screenshot(6, cursor=(5, 5))),)
        ),
        EventDraft(type=EventType.USER_INPUT, parts=(ImageData(data=screenshot(1)),)),
        EventDraft(
            type=EventType.USER_INPUT, parts=(ImageData(data=screenshot(1, cursor=(9, 9))),)
        ),
    )
    e, f, g = (ev.images[0] for ev in batch)
    assert e.image_id == c.image_id  # the baseline before the batch: the last stored image
    assert f.image_id != c.image_id and f.dedup_distance is None
    assert g.image_id == f.image_id and g.dedup_distance is not None
    assert [fr.image_id for fr in session.images()] == [p.image_id for p in (a, b, c, d, e, f, g)]


def test_near_duplicate_or_unreadable_image_leaves_no_file(engine: ContextEngine) -> None:
    """An image's bytes are written to the blob folder while it is hashed; those of a
    near-duplicate, and of an image whose header reads but whose pixels do not decode,
    are removed again: the folder holds the stored image only, no temporary file."""
    first, near = drifting(0), drifting(1)
    session = engine.create_session(user_id="u1")
    a, b = send(session, first, near)
    assert b.image_id == a.image_id and b.dedup_distance is not None
    truncated = screenshot(9)[:4000]  # the header intact, the pixel data cut short
    with pytest.raises(InvalidEvent, match="not a readable image"):
        send(session, truncated)
    assert isinstance(engine.blobs, FileBlobStore)
    files = [p for p in engine.blobs.root.rglob("*") if p.is_file()]
    assert [p.name for p in files] == [sha(first)]


def test_an_image_append_decodes_the_image_once(
    engine: ContextEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header is read without decoding, and the one decode serves every hash and
    the mean colour (a PNG's by libspng where it is installed, else Pillow's). The
    window's downscaled copy is rendered ahead from a decode of its own, and so is the
    low-detail copy the history shows of the frame once its turn (the append's own) is
    compacted and a newer one holds the full frames; the window that shows the new image
    then decodes nothing."""
    decoders: list[str] = []
    real = Image._getdecoder

    def counting(mode: str, decoder_name: str, *args: Any, **kwargs: Any) -> Any:
        decoders.append(decoder_name)
        return real(mode, decoder_name, *args, **kwargs)

    session = engine.create_session(user_id="u1")
    first, other = screenshot(4), screenshot(5, fmt="JPEG")
    monkeypatch.setattr(Image, "_getdecoder", counting)
    if decode.pyspng is not None:
        spng = decode.pyspng
        monkeypatch.setattr(
            decode,
            "pyspng",
            SimpleNamespace(load=lambda data: decoders.append("spng") or spng.load(data)),
        )
    rendered = engine.context_builder.rendered_images
    width = engine.settings.context.image_max_width
    session.build_context(budget=20_000)  # windows are built for it: copies rendered ahead
    (part,) = send(session, first)
    assert rendered.get(part.blob_id, width, None) is not None  # waits for the copy
    assert rendered.get(part.blob_id, 512, 512) is not None  # and the history's
    # ("raw" is Pillow reading libspng's RGB pixels: a copy, not a decode.)
    assert [d for d in decoders if d != "raw"] == (["spng"] if spng is not None else ["zip"]) * 3
    decoders.clear()
    window = session.build_context(budget=20_000)
    assert sum("image_url" in str(m["content"]) for m in window.messages) == 1
    assert decoders == []
    (part,) = send(session, other)
    assert rendered.get(part.blob_id, width, None) is not None
    assert rendered.get(part.blob_id, 512, 512) is not None
    assert decoders == ["jpeg", "jpeg", "jpeg"]


def test_base64_and_data_url_inputs(engine: ContextEngine) -> None:
    shot, near = screenshot(2), screenshot(2, cursor=(30, 40))
    session = engine.create_session(user_id="u1")
    call = session.add_tool_call("computer", {"action": "screenshot"})
    as_b64 = base64.b64encode(shot).decode()
    as_url = "data:image/png;base64," + base64.b64encode(near).decode()
    (a,) = session.add_tool_result(call.call_id, "ok", images=[as_b64]).images
    call = session.add_tool_call("computer", {"action": "screenshot"})
    (b,) = session.add_tool_result(call.call_id, "ok", images=[as_url]).images
    assert a.blob_id == sha(shot) and (a.width, a.height) == (WIDTH, HEIGHT)
    assert b.image_id == a.image_id and b.dedup_distance is not None
    assert engine.restore_image(a.image_id, user_id="u1") == shot


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP"])
def test_hash_of_the_downscaled_decode_matches_the_full_image(fmt: str) -> None:
    data = encode(desktop(5, size=(2560, 1600)), fmt)
    ours = perceptual_hashes(data)
    with Image.open(io.BytesIO(data)) as image:
        full = image.convert("L")
    assert hamming(ours.phash, str(imagehash.phash(full))) <= 2
    assert hamming(ours.dhash, str(imagehash.dhash(full))) <= 2
    assert hamming(ours.ahash, str(imagehash.average_hash(full))) <= 2
    # And it tells screens apart: another scene is far away.
    assert (
        hamming(ours.phash, perceptual_hashes(encode(desktop(2, size=(2560, 1600)), fmt)).phash)
        > 10
    )


def test_threshold_zero_deduplicates_identical_hashes_only(db_url: str, home: Path) -> None:
    """``threshold=0`` keeps only screens whose hash is identical (the pointer moved a few
    pixels: 0 bits apart); a screen one bit or more away is stored as its own image."""
    first, moved = screenshot(3), screenshot(3, cursor=(652, 397))
    near_a, near_b = drifting(0), drifting(1)
    assert first != moved
    assert hamming(perceptual_hashes(first).phash, perceptual_hashes(moved).phash) == 0
    assert hamming(perceptual_hashes(near_a).phash, perceptual_hashes(near_b).phash) > 0
    with open_engine(db_url, home, visual={"dedup": {"threshold": 0}}) as engine:
        session = engine.create_session(user_id="u1")
        a, b = send(session, first, moved)
        assert b.image_id == a.image_id and b.dedup_distance == 0
        other = engine.create_session(user_id="u1")
        c, d = send(other, near_a, near_b)
        assert d.image_id != c.image_id and d.dedup_distance is None
        assert engine.restore_image(d.image_id, user_id="u1") == near_b


@pytest.mark.parametrize(
    ("mode", "fmt"),
    [("P", "PNG"), ("P", "GIF"), ("1", "PNG"), ("I;16", "PNG")],
    ids=["palette-png", "gif", "bilevel-png", "16bit-png"],
)
def test_every_supported_image_mode_is_accepted_and_hashed(
    engine: ContextEngine, mode: str, fmt: str
) -> None:
    """Palette PNGs (what PNG optimisers write) and GIFs are formats the engine accepts;
    hashing them for dedup must not turn them away as unreadable."""
    image = desktop(2)
    converted = (
        image.convert("P", palette=Image.Palette.ADAPTIVE) if mode == "P" else image.convert(mode)
    )
    data = encode(converted, fmt)
    hashes = perceptual_hashes(data)
    assert len(hashes.phash) == 16
    session = engine.create_session(user_id="u1")
    (part,) = send(session, data)
    assert (part.width, part.height) == (WIDTH, HEIGHT)
    assert engine.restore_image(part.image_id, user_id="u1") == data
    window = session.build_context(budget=500_000, strategy="full")
    assert window.report.images.inline == (part.image_id,)


def test_idempotent_retry_of_a_deduplicated_screenshot(db_url: str, home: Path) -> None:
    """A write retried with its idempotency key is the same write, even when another
    image was stored in between: the retry returns the stored event rather than
    failing because the dedup baseline moved."""
    with open_engine(db_url, home) as engine:
        session = engine.create_session(user_id="u1")
        session.add_message("user", "the dashboard", images=[screenshot(5)])
        retried = screenshot(5, cursor=(40, 40))  # a near-duplicate of the message before
        first = session.add_message("user", "again", images=[retried], idempotency_key="m1")
        assert first.images[0].dedup_distance is not None
        session.add_message("user", "a new screen", images=[screenshot(7)])
        again = session.add_message("user", "again", images=[retried], idempotency_key="m1")
        assert again.event_id == first.event_id and again.images == first.images
        assert len(session.events()) == 3
