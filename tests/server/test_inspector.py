"""The web inspector at /ui, driven in a real browser (Chromium through Playwright)
against a real server holding real recorded data.

The page only reads the REST API, whose behaviour on both storage backends is
covered in test_routes.py; here one SQLite engine serves every test, so the module
records its data and starts its browser once.

Guarantees checked: the page signs in with a key (form or ``#key=`` fragment, which
leaves the address bar), sends it as a bearer token, returns to the form on 401 and
shows the API's error otherwise; each view shows what the API holds (sessions page by
page and by search, a timeline by turns with tool results beside their calls, errors
marked, compressed images as placeholders that restore into real images, a context
window's sections as one bar segment each and what it left out, topics/summaries/folds
with the events they cover, memories with provenance and history, a web research's report
with its sources, the pages it read and its iterations, the sessions waiting for a
human with their reproduction package); another user's session is not found; data is
shown as text, never parsed as markup.

Web research and the human-in-the-loop flag are recorded on a second engine (with a
search provider: a local Tavily server over local page servers) so the first engine's
session counts stay as they are.

A screenshot of each view goes to ``$AGENTCTX_SCREENSHOTS`` (default
``build/inspector-screenshots/``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from playwright.sync_api import BrowserContext, ConsoleMessage, Page, expect, sync_playwright

from agentctx import ContextEngine
from agentctx.memory.models import Provenance
from compaction.topics_data import POOL, TRIP
from conftest import make_png
from search.agent_web import GOOD, QUESTION, local_web, make_engine, tavily_config
from search.servers import tavily_server
from server.live import Live, serve
from visual.visual_screens import DISTINCT_SCENES, desktop, encode

REPO = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("AGENTCTX_SCREENSHOTS") or REPO / "build" / "inspector-screenshots")
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MARKUP = "Is <b>bold</b> & <img src=x onerror=alert(1)> shown as text?"
KEY_STORAGE = "agentctx.inspector.key"


@dataclass
class Recorded:
    """What the test data holds: ids to visit and the facts the views must show."""

    engine: ContextEngine
    session_id: str  # u1's long session: screenshots, an error, topics, summaries, folds
    extra_sessions: list[str]  # u1's other sessions
    other_session_id: str  # u2's session
    memory_id: str  # with sources and two history entries


def _record(engine: ContextEngine) -> Recorded:
    session = engine.create_session(user_id="u1", agent_id="computer-use")
    # Five different 640x400 screens: the turn end keeps the first, error and last
    # frames and shows the two in between as placeholders.
    frames = [encode(desktop(scene, size=(640, 400))) for scene in DISTINCT_SCENES[:5]]
    with session.turn() as turn:
        turn.add_message("user", "Export the Q3 report as PDF")
        for index, frame in enumerate(frames):
            call = turn.add_tool_call("computer", {"action": "screenshot", "step": index})
            turn.add_tool_result(
                call.call_id,
                "Save failed: permission denied" if index == 2 else f"step {index} done",
                images=[frame],
                is_error=index == 2,
            )
        turn.add_message("assistant", "Exported.")
    with session.turn() as turn:
        turn.add_message("user", MARKUP)
        call = turn.add_tool_call("thumbnail", {"path": "/tmp/q3.pdf"})
        turn.add_tool_result(call.call_id, "thumbnail made", images=[make_png(seed=3)])
        turn.add_event("error", text="the exporter crashed: disk full")
        turn.add_message("assistant", "The disk was full.")
    for role, text in TRIP + POOL:
        session.add_message(role, text)
    engine.jobs.run_pending()  # visual compaction and topic archiving at turn ends
    engine.thread_summaries.maybe_update("u1", session.id)
    engine.folds.maybe_fold("u1", session.id)

    extra = [engine.create_session(user_id="u1", agent_id="triage").id for _ in range(2)]
    other = engine.create_session(user_id="u2", agent_id="helper")
    other.add_message("user", "A message of another user")

    first = session.events(limit=1)[0]
    memory = engine.memory.add(
        "u1",
        "Maya prefers morning flights from Berlin",
        kind="preference",
        keywords=["flights", "Berlin"],
        sources=[
            Provenance(
                session_id=session.id, event_id=first.event_id, seq=1, extractor_version="test"
            )
        ],
    )
    engine.memory.update("u1", memory.memory_id, confidence=0.95, reason="confirmed")
    engine.memory.add("u1", "The team deploys pgbouncer with a pool of 40", kind="fact")
    return Recorded(engine, session.id, extra, other.id, memory.memory_id)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    tmp = tmp_path_factory.mktemp("inspector")
    settings: dict[str, Any] = {
        "jobs": "manual",
        "session_ttl": None,
        "embeddings": {"provider": "hashing"},
        "topics": {
            "enabled": True,
            "min_archive_messages": 20,
            "keep_recent_messages": 10,
            "context_limit": 1200,
        },
        "thread_summary": {"enabled": True, "every_messages": 5, "budget_tokens": 60},
        "fold": {"enabled": True, "low_tokens": 300, "high_tokens": 600},
    }
    with ContextEngine(
        url=f"sqlite:///{tmp / 'agentctx.db'}", home=tmp / "home", **settings
    ) as engine:
        yield _record(engine)


@pytest.fixture(scope="module")
def live(recorded: Recorded) -> Iterator[Live]:
    with serve(recorded.engine) as running:
        yield running


@dataclass
class Researched:
    """The second engine's server and what was recorded there (all for user u1)."""

    live: Live
    token: str
    session_id: str  # the session that asked the question
    sub_session_id: str  # its search session
    report: dict[str, Any]
    flagged_id: str  # a session with three failed tool results: needs a human
    turn_id: str  # its failing turn


def _tool_pair(i: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "tool_call",
            "call_id": f"c{i}",
            "payload": {"name": "click"},
            "meta": {"tool_name": "click"},
            "parts": [{"kind": "json", "data": {"selector": "#buy"}}],
        },
        {
            "type": "tool_result",
            "call_id": f"c{i}",
            "payload": {"is_error": True},
            "meta": {"status": "error"},
            "parts": [{"kind": "text", "text": f"element not found (try {i})"}],
        },
    ]


@pytest.fixture(scope="module")
def researched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Researched]:
    """A research recorded through the API against local search and page servers, and
    a session whose repeated tool failures flag it for a human."""
    tmp = tmp_path_factory.mktemp("research")
    with local_web([GOOD, GOOD]) as web, tavily_server(pages=web.corpus) as srv:
        config = tavily_config(srv.url, srv.api_key or "")
        with (
            make_engine(f"sqlite:///{tmp / 'agentctx.db'}", tmp / "home", search=config) as engine,
            serve(engine) as running,
        ):
            token = running.key("u1")
            with httpx.Client(
                base_url=running.url, headers={"Authorization": f"Bearer {token}"}, timeout=120
            ) as client:
                sid = client.post("/v1/sessions", json={"agent_id": "helper"}).json()["session_id"]
                answer = client.post(f"/v1/sessions/{sid}/research", json={"question": QUESTION})
                answer.raise_for_status()
                report = answer.json()

                flagged = client.post("/v1/sessions", json={"agent_id": "shopper"}).json()
                fid = flagged["session_id"]
                tid = client.post(f"/v1/sessions/{fid}/turns", json={}).json()["turn_id"]
                ask = {"type": "user_input", "parts": [{"kind": "text", "text": "buy it"}]}
                events = [ask] + [e for i in range(3) for e in _tool_pair(i)]
                client.post(
                    f"/v1/sessions/{fid}/events/batch", json={"events": events, "turn_id": tid}
                ).raise_for_status()
                client.post(
                    f"/v1/sessions/{fid}/context",
                    json={"query": "why does buying fail", "budget": 2000, "turn_id": tid},
                ).raise_for_status()
                client.post(
                    f"/v1/sessions/{fid}/turns/{tid}/end", json={"status": "error"}
                ).raise_for_status()
            yield Researched(running, token, sid, report["sub_session_id"], report, fid, tid)


@pytest.fixture(scope="module")
def browser(live: Live, researched: Researched) -> Iterator[BrowserContext]:
    """One Chromium for the module (it needs the servers so it closes its connections
    before they stop); each test opens a tab of its own, so sessionStorage (where the
    key is kept) starts empty."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        context = launched.new_context(viewport={"width": 1200, "height": 900})
        context.set_default_timeout(10_000)
        yield context
        context.close()
        launched.close()


@pytest.fixture
def page(browser: BrowserContext) -> Iterator[Page]:
    opened = browser.new_page()
    failures: list[str] = []
    opened.on("pageerror", lambda error: failures.append(f"page error: {error}"))
    # The only outside request a page could make would be refused by the CSP and
    # logged; any such violation fails the test.
    opened.on(
        "console",
        lambda m: failures.append(m.text) if _is_csp_violation(m) else None,
    )
    yield opened
    opened.close()
    assert failures == []


def _is_csp_violation(message: ConsoleMessage) -> bool:
    return message.type == "error" and "Content Security Policy" in message.text


def api(live: Live, token: str, path: str, **params: Any) -> Any:
    response = httpx.get(
        live.url + path, params=params, headers={"Authorization": f"Bearer {token}"}
    )
    response.raise_for_status()
    return response.json()


def shot(page: Page, name: str, *, full_page: bool = True) -> None:
    """Write a screenshot of the page to ``SHOTS/<name>.png``."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full_page)


def sign_in(page: Page, live: Live, token: str, route: str = "#/sessions") -> None:
    """Sign in through the ``#key=`` fragment, then open ``route``."""
    page.goto(f"{live.url}/ui#key={token}")
    expect(page.locator("#sign-out")).to_be_visible()
    page.goto(f"{live.url}/ui{route}")


# Sign-in ------------------------------------------------------------------------------


def test_sign_in_form_refuses_a_wrong_key_then_accepts_the_right_one(
    page: Page, live: Live, recorded: Recorded
) -> None:
    page.goto(f"{live.url}/ui")
    expect(page.locator("#signin-form")).to_be_visible()
    page.fill("#signin-key", "ack_wrong_key")
    page.click("#signin-form button[type=submit]")
    error = page.locator("#signin-form .error-box")
    expect(error).to_have_attribute("data-code", "unauthenticated")
    expect(error).to_contain_text("not valid")
    shot(page, "signin-error")

    page.fill("#signin-key", live.key("u1"))
    page.click("#signin-form button[type=submit]")
    expect(page).to_have_url(re.compile(r"#/sessions$"))
    expect(page.locator(".session-row")).to_have_count(1 + len(recorded.extra_sessions))


def test_key_in_the_fragment_is_stored_and_removed_from_the_address_bar(
    page: Page, live: Live
) -> None:
    token = live.key("u1")
    page.goto(f"{live.url}/ui#key={token}")
    expect(page.locator(".session-row").first).to_be_visible()
    assert token not in page.url and page.url.endswith("#/sessions")
    assert page.evaluate(f"sessionStorage.getItem('{KEY_STORAGE}')") == token


def test_a_revoked_key_returns_to_the_sign_in_form(
    page: Page, live: Live, recorded: Recorded
) -> None:
    key, token = live.keys.create(["u1"], ("read",))
    sign_in(page, live, token, "#/memories")
    expect(page.locator(".memory-row").first).to_be_visible()
    live.keys.revoke(key.key_id)
    page.click("text=Sessions")
    expect(page.locator("#signin-form")).to_be_visible()
    expect(page.locator("#signin-form .error-box")).to_have_attribute(
        "data-code", "unauthenticated"
    )
    assert page.evaluate(f"sessionStorage.getItem('{KEY_STORAGE}')") is None


def test_a_key_for_several_users_needs_a_user_field(
    page: Page, live: Live, recorded: Recorded
) -> None:
    token = live.key("u1", "u2")
    page.goto(f"{live.url}/ui")
    page.fill("#signin-key", token)
    page.click("#signin-form button[type=submit]")
    expect(page.locator("#signin-form .error-box")).to_have_attribute("data-code", "user_required")
    expect(page.locator("#signin-form .hint")).to_contain_text("several users")
    page.fill("#signin-user", "u2")
    page.click("#signin-form button[type=submit]")
    rows = page.locator(".session-row")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-session-id", recorded.other_session_id)
    # The header's user field switches to the other user the key acts for.
    expect(page.locator("#user-id")).to_have_value("u2")
    page.fill("#user-id", "u1")
    page.click("#user-form button")
    expect(rows).to_have_count(1 + len(recorded.extra_sessions))
    # A user the key does not act for looks like an unknown one.
    page.fill("#user-id", "u3")
    page.click("#user-form button")
    expect(page.locator(".error-box")).to_have_attribute("data-code", "user_not_found")


def test_an_admin_key_may_type_any_user(page: Page, live: Live, recorded: Recorded) -> None:
    token = live.key(scopes=("admin",))
    page.goto(f"{live.url}/ui")
    page.fill("#signin-key", token)
    page.fill("#signin-user", "u2")
    page.click("#signin-form button[type=submit]")
    expect(page.locator(".session-row")).to_have_count(1)
    page.fill("#user-id", "u1")
    page.click("#user-form button")
    expect(page.locator(".session-row")).to_have_count(1 + len(recorded.extra_sessions))


def _link(live: Live, **fragment: str) -> str:
    """An inspector link as ``agentctx serve`` prints it: ``/ui#key=…&user=…&session=…``."""
    return f"{live.url}/ui#{urlencode(fragment)}"


def test_a_link_naming_the_user_and_session_opens_that_session(
    page: Page, live: Live, recorded: Recorded
) -> None:
    token = live.key("*", scopes=("read", "admin"))  # acts for any user, as serve's key does
    sid = recorded.session_id
    page.goto(_link(live, key=token, user="u1", session=sid))
    expect(page.locator("#timeline .event").first).to_be_visible()
    expect(page.locator("[data-code=user_required]")).to_have_count(0)
    assert token not in page.url and page.url.endswith(f"#/sessions/{sid}")
    expect(page.locator("#user-id")).to_have_value("u1")


def test_a_key_link_opened_in_an_open_inspector_signs_in_with_it(
    page: Page, live: Live, recorded: Recorded
) -> None:
    sign_in(page, live, live.key("u2"))
    expect(page.locator(".session-row")).to_have_count(1)
    page.evaluate("window.stillTheSamePage = true")
    token = live.key("*", scopes=("read", "admin"))
    sid = recorded.session_id
    page.goto(_link(live, key=token, user="u1", session=sid))  # only the hash changes
    expect(page.locator("#timeline .event").first).to_be_visible()
    assert page.evaluate("window.stillTheSamePage") is True  # no reload did the work
    assert page.evaluate(f"sessionStorage.getItem('{KEY_STORAGE}')") == token
    assert token not in page.url and page.url.endswith(f"#/sessions/{sid}")


def test_signing_in_on_a_link_to_a_view_opens_that_view(
    page: Page, live: Live, recorded: Recorded
) -> None:
    sid = recorded.session_id
    page.goto(f"{live.url}/ui#/sessions/{sid}")
    expect(page.locator("#signin-form")).to_be_visible()
    page.fill("#signin-key", live.key("u1"))
    page.click("#signin-form button[type=submit]")
    expect(page.locator("#timeline .event").first).to_be_visible()
    assert page.url.endswith(f"#/sessions/{sid}")


# Sessions -----------------------------------------------------------------------------


def test_sessions_list_pages_and_searches(page: Page, live: Live, recorded: Recorded) -> None:
    sign_in(page, live, live.key("u1"), "#/sessions?limit=2")
    rows = page.locator(".session-row")
    expect(rows).to_have_count(2)
    page.click("text=Load more sessions")
    expect(rows).to_have_count(3)
    expect(page.locator("button.more")).to_have_count(0)
    shown = rows.evaluate_all("rows => rows.map(r => r.dataset.sessionId)")
    assert shown == [recorded.session_id, *recorded.extra_sessions]
    expect(page.locator("#session-count")).to_have_text("3 sessions shown")
    shot(page, "sessions")

    page.fill("#session-search", recorded.extra_sessions[1][-12:])
    page.click("#session-search-form button")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-session-id", recorded.extra_sessions[1])
    page.fill("#session-search", "no-such-session")
    page.click("#session-search-form button")
    expect(rows).to_have_count(0)
    expect(page.locator("#session-count")).to_contain_text("No session matches")


def test_another_users_session_is_not_found(page: Page, live: Live, recorded: Recorded) -> None:
    sign_in(page, live, live.key("u2"), f"#/sessions/{recorded.session_id}")
    error = page.locator(".error-box")
    expect(error).to_have_attribute("data-code", "session_not_found")
    expect(page.locator("#timeline")).to_have_count(0)
    shot(page, "not-found")


# Timeline -----------------------------------------------------------------------------


def test_timeline_groups_turns_pairs_tool_results_and_marks_errors(
    page: Page, live: Live, recorded: Recorded
) -> None:
    token = live.key("u1")
    sid = recorded.session_id
    turns = api(live, token, f"/v1/sessions/{sid}/turns")
    events = api(live, token, f"/v1/sessions/{sid}/events", limit=1000)["items"]
    sign_in(page, live, token, f"#/sessions/{sid}?limit=40")
    cards = page.locator("#timeline .event")
    shown = 40
    while shown < len(events):
        expect(cards).to_have_count(shown)
        page.click("button.more:not([disabled])")
        shown = min(shown + 40, len(events))
    expect(cards).to_have_count(len(events))
    expect(page.locator("button.more")).to_have_count(0)
    expect(page.locator("#timeline .turn")).to_have_count(len(turns))
    first_turn = page.locator(f'.turn[data-turn-id="{turns[0]["turn_id"]}"]')
    expect(first_turn.locator(".turn-head")).to_contain_text("Turn 1")
    expect(first_turn.locator(".turn-head")).to_contain_text(f"{turns[0]['event_count']} events")

    # Every tool result sits in the card of the call with its call_id.
    results = [e for e in events if e["type"] == "tool_result"]
    assert len(results) == 6
    for result in results:
        call = page.locator(f'.event[data-type="tool_call"][data-call-id="{result["call_id"]}"]')
        inside = call.locator(f'.tool-results .event[data-seq="{result["seq"]}"]')
        expect(inside).to_have_count(1)

    # The failed tool result and the error event are marked, nothing else.
    failed = sorted(
        e["seq"] for e in events if e["type"] == "error" or e["meta"]["status"] == "error"
    )
    assert len(failed) == 2
    marked = page.locator("#timeline .event.is-error").evaluate_all(
        "cards => cards.map(c => Number(c.dataset.seq))"
    )
    assert sorted(marked) == failed
    expect(page.locator("#timeline-count")).to_contain_text("2 errors")

    # "?seq=" loads pages until that event is shown, and marks it.
    page.goto(f"{live.url}/ui#/sessions/{sid}?limit=20&seq=50")
    expect(page.locator("#timeline .event.highlight")).to_have_attribute("data-seq", "50")
    expect(cards).to_have_count(60)

    # Markup in a message is text: shown verbatim, no element made from it.
    message = page.locator(".event.type-user_input", has_text="shown as text")
    expect(message.locator(".part.text")).to_have_text(MARKUP)
    assert message.locator("b, img").count() == 0


def test_timeline_placeholders_restore_into_images(
    page: Page, live: Live, recorded: Recorded
) -> None:
    token = live.key("u1")
    sid = recorded.session_id
    frames = api(live, token, f"/v1/sessions/{sid}/images")
    compressed = [f["image_id"] for f in frames if f["is_compressed"]]
    assert len(compressed) == 2
    sign_in(page, live, token, f"#/sessions/{sid}")
    boxes = page.locator("#timeline button.placeholder")
    expect(boxes).to_have_count(len(compressed))
    assert boxes.evaluate_all("bs => bs.map(b => b.dataset.imageId)") == compressed
    expect(boxes.first).to_contain_text(f"[Visual_Placeholder: {compressed[0]}]")
    # Images shown in full load with the key (from blob: URLs) and decode.
    full = page.locator("#timeline figure.part.image:not(.restored) img")
    expect(full).to_have_count(len(frames) - len(compressed))
    page.wait_for_function(
        "() => [...document.querySelectorAll('#timeline figure img')]"
        ".every(i => i.complete && i.naturalWidth > 0)"
    )
    boxes.first.scroll_into_view_if_needed()
    shot(page, "timeline", full_page=False)

    boxes.first.click()
    restored = page.locator(f'#timeline figure.restored[data-image-id="{compressed[0]}"] img')
    expect(restored).to_have_count(1)
    page.wait_for_function(
        "id => { const i = document.querySelector("
        "`figure.restored[data-image-id='${id}'] img`); return i && i.complete && "
        "i.naturalWidth > 0 }",
        arg=compressed[0],
    )
    assert restored.evaluate("i => [i.naturalWidth, i.naturalHeight]") == [640, 400]
    assert restored.get_attribute("src").startswith("blob:")
    expect(boxes).to_have_count(len(compressed) - 1)
    restored.scroll_into_view_if_needed()
    shot(page, "timeline-restored", full_page=False)


# Context window -----------------------------------------------------------------------


def test_context_window_shows_sections_and_what_was_left_out(
    page: Page, live: Live, recorded: Recorded
) -> None:
    token = live.key("u1")
    sid = recorded.session_id
    sign_in(page, live, token, f"#/sessions/{sid}/context")
    page.fill("#context-query", "flights")
    page.fill("#context-budget", "300")
    page.select_option("#context-strategy", "semantic")
    page.click("#context-form button[type=submit]")
    expect(page.locator("#window-summary")).to_be_visible()

    window = httpx.post(
        f"{live.url}/v1/sessions/{sid}/context",
        json={"query": "flights", "budget": 300, "strategy": "semantic"},
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    report = window["report"]
    used = [s for s in report["sections"] if s["tokens"] > 0]
    assert 0 < len(used) < len(report["sections"])  # an empty section has no segment
    segments = page.locator("#section-bar .segment")
    expect(segments).to_have_count(len(used))
    assert segments.evaluate_all(
        "ss => ss.map(s => [s.dataset.section, Number(s.dataset.tokens)])"
    ) == [[s["name"], s["tokens"]] for s in used]
    widths = segments.evaluate_all("ss => ss.map(s => s.getBoundingClientRect().width)")
    assert all(w > 0 for w in widths)
    bar = page.locator("#section-bar").bounding_box()
    assert bar is not None and sum(widths) <= bar["width"] + 1
    expect(page.locator("#section-table tbody tr")).to_have_count(len(report["sections"]))
    expect(page.locator("#window-summary")).to_contain_text(
        f"{report['tokens']} / {report['budget']} tokens"
    )
    # The prompt cache line: the page's window followed the one the test built above.
    prefix = window["report"]["stable_prefix_tokens"]
    assert prefix is not None and 0 < prefix <= report["tokens"]
    page.click("#context-form button[type=submit]")  # the same window once more
    expect(page.locator("#stable-prefix")).to_contain_text(
        f"the first {report['tokens']} tokens repeat the previous window (100%)"
    )

    assert report["dropped"]
    dropped = page.locator("#dropped-table tr.dropped")
    expect(dropped).to_have_count(len(report["dropped"]))
    assert dropped.evaluate_all(
        "rows => rows.map(r => [Number(r.dataset.seq), r.dataset.reason])"
    ) == [[d["seq"], d["reason"]] for d in report["dropped"]]
    expect(page.locator("#left-out")).to_contain_text(f"Truncated ({len(report['truncated'])})")
    assert report["notes"]
    expect(page.locator("#notes li")).to_have_text(report["notes"])
    expect(page.locator("#context-messages .message")).to_have_count(len(window["messages"]))
    # The form's choices are in the address: the view can be reloaded and shared.
    assert "strategy=semantic" in page.url and "budget=300" in page.url
    shot(page, "context")

    # A dropped event's seq leads to it in the timeline.
    first = report["dropped"][0]["seq"]
    dropped.first.locator("a").click()
    expect(page.locator("#timeline .event.highlight")).to_have_attribute("data-seq", str(first))


PHONE = {"width": 375, "height": 740}


def _within_the_width(page: Page, selector: str) -> None:
    """Every element ``selector`` matches is visible and inside the viewport's width."""
    boxes = [
        page.locator(selector).nth(i).bounding_box() for i in range(page.locator(selector).count())
    ]
    assert boxes, selector
    for box in boxes:
        assert box is not None and box["width"] > 0, selector
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 0.5, (selector, box)


def _no_horizontal_scroll(page: Page) -> None:
    widths = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], widths


def test_the_header_and_the_context_form_fit_a_phone(
    page: Page, live: Live, recorded: Recorded
) -> None:
    page.set_viewport_size(PHONE)
    token = live.key("*", scopes=("read", "admin"))  # the widest header: it has a user field
    sid = recorded.session_id
    page.goto(_link(live, key=token, user="u1", session=sid))
    expect(page.locator("#timeline .event").first).to_be_visible()
    page.goto(f"{live.url}/ui#/sessions/{sid}/context")
    expect(page.locator("#context-form")).to_be_visible()
    header = "#top .brand, #top .main-nav a, #user-id, #user-form button, #sign-out"
    _within_the_width(page, "#top")
    _within_the_width(page, header)
    _within_the_width(page, "#context-form input, #context-form select, #context-form button")
    _no_horizontal_scroll(page)
    shot(page, "phone-context", full_page=False)
    page.click("#context-form button[type=submit]")
    expect(page.locator("#window-summary")).to_be_visible()
    _no_horizontal_scroll(page)
    page.click("text=Sessions")
    expect(page.locator(".session-row").first).to_be_visible()
    _within_the_width(page, header)
    _no_horizontal_scroll(page)
    shot(page, "phone-sessions", full_page=False)


def test_context_errors_from_the_api_are_shown(page: Page, live: Live, recorded: Recorded) -> None:
    sign_in(page, live, live.key("u1"), f"#/sessions/{recorded.session_id}/context?budget=0&run=1")
    error = page.locator("#context-result .error-box")
    expect(error).to_have_attribute("data-code", "validation_error")
    expect(error).to_contain_text("budget")


# Topics and summaries -----------------------------------------------------------------


def test_topics_summaries_and_folds_show_the_events_they_cover(
    page: Page, live: Live, recorded: Recorded
) -> None:
    token = live.key("u1")
    sid = recorded.session_id
    topics = api(live, token, f"/v1/sessions/{sid}/topics")
    summaries = api(live, token, f"/v1/sessions/{sid}/summaries")
    folds = api(live, token, f"/v1/sessions/{sid}/folds")
    assert topics and summaries and folds
    sign_in(page, live, token, f"#/sessions/{sid}/topics")
    expect(page.locator("#topics-section .topic")).to_have_count(len(topics))
    expect(page.locator("#summaries-section .summary")).to_have_count(len(summaries))
    expect(page.locator("#folds-section .fold")).to_have_count(len(folds))
    expect(page.locator("#topics-section .topic h3")).to_have_text([t["title"] for t in topics])

    topic = topics[1]
    card = page.locator("#topics-section .topic").nth(1)
    card.locator("button.show-events").click()
    covered = card.locator(".covered-events .event")
    expect(covered).to_have_count(topic["last_seq"] - topic["first_seq"] + 1)
    seqs = covered.evaluate_all("cs => cs.map(c => Number(c.dataset.seq))")
    assert seqs == list(range(topic["first_seq"], topic["last_seq"] + 1))

    # A fold covers scattered ranges: exactly the events in them are shown.
    fold = folds[0]
    fold_card = page.locator("#folds-section .fold").first
    fold_card.locator("button.show-events").click()
    in_ranges = sum(b - a + 1 for a, b in fold["seq_ranges"])
    expect(fold_card.locator(".covered-events .event")).to_have_count(in_ranges)
    card.scroll_into_view_if_needed()
    shot(page, "topics")


# Memories -----------------------------------------------------------------------------


def test_memories_list_search_provenance_and_history(
    page: Page, live: Live, recorded: Recorded
) -> None:
    token = live.key("u1")
    listed = api(live, token, "/v1/memories")["items"]
    sign_in(page, live, token, "#/memories")
    rows = page.locator(".memory-row")
    expect(rows).to_have_count(len(listed))
    assert len(listed) == 2
    shot(page, "memories")

    page.fill("#memory-query", "morning flights")
    page.click("#memory-search-form button")
    hits = api(live, token, "/v1/memories/search", query="morning flights", limit=100)
    expect(rows).to_have_count(len(hits))
    expect(rows.first).to_have_attribute("data-memory-id", recorded.memory_id)
    expect(rows.first).to_contain_text("score")

    rows.first.click()
    expect(page.locator("#memory-content")).to_have_text("Maya prefers morning flights from Berlin")
    source = page.locator("#memory-sources tr.source")
    expect(source).to_have_count(1)
    expect(source.locator("a").first).to_have_text(recorded.session_id)
    changes = page.locator("#memory-history .change")
    expect(changes).to_have_count(2)
    assert changes.evaluate_all("cs => cs.map(c => c.dataset.action)") == ["create", "update"]
    expect(changes.nth(1)).to_contain_text("confirmed")
    update = api(live, token, f"/v1/memories/{recorded.memory_id}/history")[1]
    before, after = update["old_value"]["confidence"], update["new_value"]["confidence"]
    assert after == 0.95 and before != after
    expect(changes.nth(1).locator('.diff li[data-field="confidence"]')).to_have_text(
        f"confidence: {before} → {after}"
    )
    shot(page, "memory")

    # Provenance leads to the event the memory was learned from.
    source.locator("a.seq-link").click()
    highlighted = page.locator("#timeline .event.highlight")
    expect(highlighted).to_have_count(1)
    expect(highlighted).to_have_attribute("data-seq", "1")
    assert page.url.endswith(f"#/sessions/{recorded.session_id}?seq=1")


def test_an_unknown_memory_shows_the_api_error(page: Page, live: Live, recorded: Recorded) -> None:
    sign_in(page, live, live.key("u1"), "#/memories/mem_missing")
    expect(page.locator(".error-box")).to_have_attribute("data-code", "memory_not_found")


# Web research ---------------------------------------------------------------------------


def test_session_lists_its_research_and_the_report_shows_sources_and_iterations(
    page: Page, researched: Researched
) -> None:
    live, report, sub = researched.live, researched.report, researched.sub_session_id
    assert report["confidence"] >= 0.8 and report["sources"] and report["history"]
    sign_in(page, live, researched.token, f"#/sessions/{researched.session_id}")
    page.click(".tabs >> text=Research")
    rows = page.locator("#research-table .research-row")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-sub-session-id", sub)
    expect(rows.first.locator("a.question")).to_have_text(QUESTION)
    percent = f"{round(report['confidence'] * 100)}%"
    expect(rows.first.locator(".confidence-text")).to_have_text(percent)
    expect(rows.first.locator(".stopped")).to_have_text(report["stopped"])
    shot(page, "research-list")

    rows.first.locator("a.question").click()
    expect(page).to_have_url(re.compile(rf"#/research/{sub}$"))
    expect(page.locator("#research-question")).to_have_text(QUESTION)
    expect(page.locator("#research-answer")).to_have_text(report["answer"])
    assert "1994" in report["answer"]
    meter = page.locator("#confidence-meter")
    assert float(meter.evaluate("m => m.value")) == pytest.approx(report["confidence"])
    expect(page.locator("#research-summary .confidence-text").first).to_have_text(percent)
    expect(page.locator("#research-method")).to_have_text(report["method"])
    expect(page.locator("#research-stopped")).to_have_text(report["stopped"])

    sources = page.locator("#sources .source")
    expect(sources).to_have_count(len(report["sources"]))
    assert sources.evaluate_all("ss => ss.map(s => Number(s.dataset.n))") == [
        s["n"] for s in report["sources"]
    ]
    for index, source in enumerate(report["sources"]):
        card = sources.nth(index)
        expect(card.locator(".source-n")).to_have_text(f"[{source['n']}]")
        link = card.locator("a.source-url")
        expect(link).to_have_text(source["url"])
        expect(link).to_have_attribute("href", source["url"])
        expect(link).to_have_attribute("rel", "noopener noreferrer")
        expect(card.locator(".evidence blockquote")).to_have_text(list(source["evidence"]))
    history = report["history"]
    iterations = page.locator("#iterations-table tr.iteration")
    expect(iterations).to_have_count(len(history))
    for index, it in enumerate(history):
        row = iterations.nth(index)
        expect(row.locator(".query")).to_have_text(list(it["queries"]))
        expect(row.locator(".results")).to_have_text(str(it["results"]))
        expect(row.locator(".pages")).to_have_attribute("data-count", str(len(it["pages"])))
        expect(row.locator(".confidence-text")).to_have_text(f"{round(it['confidence'] * 100)}%")
    shot(page, "research-report")

    # "Show page" restores the page read for the source, as text in its own box.
    read = next(i for i, s in enumerate(report["sources"]) if s["page_id"])
    card = sources.nth(read)
    page_id = report["sources"][read]["page_id"]
    expected = httpx.get(
        f"{live.url}/v1/sessions/{sub}/offloaded/{page_id}",
        headers={"Authorization": f"Bearer {researched.token}"},
    ).text
    assert "Skerryvore" in expected
    card.locator("button.show-page").click()
    text = card.locator("pre.page-text")
    expect(text).to_have_attribute("data-page-id", page_id)
    assert text.evaluate("p => p.textContent") == expected
    assert text.locator("*").count() == 0  # text only: nothing parsed from it
    assert text.evaluate("p => getComputedStyle(p).overflowY") == "auto"
    card.scroll_into_view_if_needed()
    shot(page, "research-page", full_page=False)
    card.locator("button.show-page").click()
    expect(text).to_have_count(0)

    # The search session's own timeline: one tool call per search or read, and back.
    page.click("#sub-session-link")
    expect(page).to_have_url(re.compile(rf"#/sessions/{sub}$"))
    events = api(live, researched.token, f"/v1/sessions/{sub}/events", limit=1000)["items"]
    expect(page.locator("#timeline .event")).to_have_count(len(events))
    expect(page.locator("#search-note .question")).to_have_text(QUESTION)
    page.click("#report-link")
    expect(page.locator("#research-question")).to_have_text(QUESTION)
    page.click("#parent-link")
    expect(page.locator("#research-table .research-row")).to_have_count(1)


def test_a_session_without_research_says_so(page: Page, researched: Researched) -> None:
    sign_in(page, researched.live, researched.token, f"#/sessions/{researched.flagged_id}/research")
    expect(page.locator("#research-count")).to_have_text("This session started no web research.")


# Needs a human ----------------------------------------------------------------------------


def test_sessions_waiting_for_a_human_are_listed_and_their_repro_shows(
    page: Page, researched: Researched
) -> None:
    live, fid = researched.live, researched.flagged_id
    flags = api(live, researched.token, "/v1/hitl")
    assert [f["session_id"] for f in flags] == [fid]
    repro = api(live, researched.token, f"/v1/sessions/{fid}/repro")
    assert repro["turn_id"] == researched.turn_id and repro["window"]

    sign_in(page, live, researched.token, "#/sessions")
    listed = page.locator("#needs-human .hitl-flag")
    expect(listed).to_have_count(1)
    expect(listed.first).to_have_attribute("data-session-id", fid)
    expect(listed.first.locator(".hitl-reason")).to_have_text(flags[0]["reason"] or "")
    expect(page.locator("#needs-human-count")).to_have_text("1")
    # Every session is still listed below, the flagged one too.
    sessions = api(live, researched.token, "/v1/sessions")["items"]
    assert len(sessions) == 3  # the asker, its search session, the flagged one
    expect(page.locator(".session-row")).to_have_count(len(sessions))
    shot(page, "needs-human")

    listed.first.locator(f'a[href="#/sessions/{fid}"]').click()
    expect(page.locator("#hitl-banner")).to_contain_text("Needs a human")
    page.click("#repro-link")
    expect(page.locator("#repro-turn")).to_have_attribute("title", researched.turn_id)
    cards = page.locator("#repro-events .event")
    expect(cards).to_have_count(len(repro["events"]))
    assert cards.evaluate_all("cs => cs.map(c => c.dataset.type)") == [
        e["type"] for e in repro["events"]
    ]
    expect(page.locator("#repro-events .event.is-error")).to_have_count(3)
    expect(page.locator("#repro-messages .message")).to_have_count(len(repro["window"]["messages"]))
    shown = page.locator("#repro-config-json").text_content()
    assert shown is not None
    assert json.loads(shown) == repro["config"]
    shot(page, "repro")

    # A session nobody needs to look at has no banner and no repro tab.
    page.goto(f"{live.url}/ui#/sessions/{researched.session_id}")
    expect(page.locator(".tabs .tab")).to_have_count(4)
    expect(page.locator("#hitl-banner")).to_have_count(0)


def test_page_is_served_with_a_strict_content_security_policy(live: Live) -> None:
    response = httpx.get(f"{live.url}/ui")
    assert response.status_code == 200
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "ui/static/app.js" in response.text
    script = httpx.get(f"{live.url}/ui/static/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
