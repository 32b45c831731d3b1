"""The active and compact zones (seed 000, sections 2.1 and 2.3).

Guarantees: the open turn's images are all shown in full; once a turn ends, its
anchor (first), result (last), error and pinned frames stay images and every other
image is shown as exactly one ``[Visual_Placeholder: img_…]``; images without a turn
(legacy data) are never compacted; an open turn cannot be compacted.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from sqlalchemy import select
from visual_screens import (
    BIG,
    error_dialog,
    image_urls,
    open_engine,
    placeholders,
    screen_turn,
    screenshot,
)

from agentctx.compaction.visual import VISUAL_JOB, classify_frames
from agentctx.errors import TurnError
from agentctx.events import EventDraft, EventType, ImageData, ImagePart, TextPart
from agentctx.storage.schema import jobs

# Images sent as stored (older turns' kept frames too), so a URL names its bytes.
FULL = {"image_max_width": None, "history_image_detail": "auto"}


def shown(urls: list[str]) -> list[bytes]:
    return [base64.b64decode(url.partition(",")[2]) for url in urls]


def test_open_turn_shows_every_image_and_ended_turn_keeps_anchor_and_result(
    db_url: str, home: Path
) -> None:
    frames = [screenshot(scene) for scene in (0, 1, 2, 4, 7)]
    with open_engine(db_url, home, jobs="inline", context=FULL) as engine:
        session = engine.create_session(user_id="u1")
        with session.turn() as turn:
            turn.add_message("user", "Export the report")
            parts: list[ImagePart] = []
            for index, frame in enumerate(frames):
                call = turn.add_tool_call("computer", {"step": index})
                parts += turn.add_tool_result(call.call_id, f"step {index}", images=[frame]).images
                # Active zone: every image so far in full, no placeholder.
                window = session.build_context(budget=BIG, strategy="full")
                assert shown(image_urls(window)) == frames[: index + 1]
                assert placeholders(window) == []
        ids = [p.image_id for p in parts]
        assert len(set(ids)) == len(frames)  # distinct screens, no dedup

        window = session.build_context(budget=BIG, strategy="full")
        assert shown(image_urls(window)) == [frames[0], frames[-1]]
        assert placeholders(window) == ids[1:-1]  # each process frame exactly once
        images = session.images()
        assert [f.frame for f in images] == ["anchor", "process", "process", "process", "result"]
        assert [f.is_compressed for f in images] == [False, True, True, True, False]
        assert all(f.turn_id == turn.turn_id for f in images)


def test_error_frames_in_the_middle_of_a_turn_stay(db_url: str, home: Path) -> None:
    frames = [screenshot(0), screenshot(1), error_dialog(2), screenshot(4), screenshot(5)]
    event_error = error_dialog(7)
    with open_engine(db_url, home, jobs="inline", context=FULL) as engine:
        session = engine.create_session(user_id="u1")
        with session.turn() as turn:
            turn.add_message("user", "Save the file")
            kinds = []
            for index, frame in enumerate(frames):
                call = turn.add_tool_call("computer", {"step": index})
                turn.add_tool_result(
                    call.call_id,
                    "failed" if index == 2 else "ok",
                    images=[frame],
                    is_error=index == 2,
                )
                kinds.append("error" if index == 2 else "process")
                if index == 3:  # an error event carrying a screenshot, mid-turn
                    turn.add_event(
                        EventType.ERROR,
                        "the app crashed",
                        payload={"message": "crash"},
                        images=[event_error],
                    )
            turn.add_message("assistant", "Could not save.")
        window = session.build_context(budget=BIG, strategy="full")
        assert shown(image_urls(window)) == [frames[0], frames[2], event_error, frames[4]]
        ids = [f.image_id for f in session.images()]
        assert [f.frame for f in session.images()] == [
            "anchor",
            "process",
            "error",
            "process",
            "error",
            "result",
        ]
        assert placeholders(window) == [ids[1], ids[3]]


def test_single_image_turn_keeps_it_and_pinned_frames_stay(db_url: str, home: Path) -> None:
    with open_engine(db_url, home, jobs="inline", context=FULL) as engine:
        session = engine.create_session(user_id="u1")
        screen_turn(session, [screenshot(0)])
        assert [(f.frame, f.is_compressed) for f in session.images()] == [("anchor", False)]
        frames = [screenshot(s) for s in (1, 2, 4, 5, 7)]
        turn_id, _ = screen_turn(session, frames, pinned=[2])
        window = session.build_context(budget=BIG, strategy="full")
        assert shown(image_urls(window)) == [screenshot(0), frames[0], frames[2], frames[4]]
        these = [f for f in session.images() if f.turn_id == turn_id]
        assert [f.frame for f in these] == ["anchor", "process", "pinned", "process", "result"]
        assert placeholders(window) == [these[1].image_id, these[3].image_id]


def test_images_without_a_turn_are_never_compacted(db_url: str, home: Path) -> None:
    legacy = [screenshot(s) for s in (0, 1, 2, 4)]
    with open_engine(db_url, home, jobs="inline", context=FULL) as engine:
        session = engine.create_session(user_id="u1")
        session.import_legacy(
            *(
                EventDraft(
                    type=EventType.USER_INPUT,
                    parts=(TextPart(text=f"old screen {i}"), ImageData(data=data)),
                )
                for i, data in enumerate(legacy)
            )
        )
        # Turns after it end and run their jobs; the legacy images stay as they were.
        screen_turn(session, [screenshot(5), screenshot(7), screenshot(8)])
        engine.jobs.run_pending()
        old = [f for f in session.images() if f.turn_id is None]
        assert len(old) == 4
        assert all(f.frame is None and not f.is_compressed for f in old)
        window = session.build_context(budget=BIG, strategy="full")
        assert shown(image_urls(window))[:4] == legacy
        assert not set(placeholders(window)) & {f.image_id for f in old}
        assert len(placeholders(window)) == 1  # only the new turn's middle frame


def test_open_turn_cannot_be_compacted_and_job_is_queued_only_for_image_turns(
    db_url: str, home: Path
) -> None:
    with open_engine(db_url, home) as engine:  # jobs="manual": nothing runs on its own
        session = engine.create_session(user_id="u1")
        with session.turn() as turn:
            for scene in (0, 1, 2):
                call = turn.add_tool_call("computer", {})
                turn.add_tool_result(call.call_id, "ok", images=[screenshot(scene)])
            with pytest.raises(TurnError, match="active"):
                engine.visual.compact_turn("u1", session.id, turn.turn_id)
            assert not any(f.is_compressed for f in session.images())
        with session.turn() as plain:
            plain.add_message("user", "thanks")
            plain.add_message("assistant", "you're welcome")
        with engine.db.read() as conn:
            visual_turns = set(
                conn.execute(
                    select(jobs.c.turn_id).where(jobs.c.kind.endswith(":" + VISUAL_JOB))
                ).scalars()
            )
        assert visual_turns == {turn.turn_id}
        # Until the job runs, the ended turn still shows every image.
        window = session.build_context(budget=BIG, strategy="full")
        assert len(image_urls(window)) == 3 and placeholders(window) == []
        engine.jobs.run_pending()
        window = session.build_context(budget=BIG, strategy="full")
        assert len(image_urls(window)) == 2 and len(placeholders(window)) == 1
        # The pure rule agrees with what the job wrote.
        events = session.events(turn_id=turn.turn_id)
        assert [f.kind for f in classify_frames(events)] == [f.frame for f in session.images()]


def test_compaction_switched_off_keeps_every_image(db_url: str, home: Path) -> None:
    with open_engine(db_url, home, jobs="inline", visual={"compaction": False}) as engine:
        session = engine.create_session(user_id="u1")
        screen_turn(session, [screenshot(s) for s in (0, 1, 2, 4)])
        window = session.build_context(budget=BIG, strategy="full")
        assert len(image_urls(window)) == 4 and placeholders(window) == []
        assert all(f.frame is None for f in session.images())
