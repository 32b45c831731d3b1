"""A recorded demo session: a browsing agent finds and books a flight.

:func:`run_demo` writes, through the public API, what a tool-using agent with a
browser produces: a system prompt and the user's request (retried once by the
client, stored once), a plan, tool calls whose results carry real PNG
screenshots, a tool call that fails with an error frame, a reflection and a
retry, state updates, and a second turn that books the flight. ``agentctx demo``
runs it and prints the session; tests use it as a realistic fixture.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

from agentctx.engine import ContextEngine
from agentctx.events import EventType
from agentctx.sessions.session import Session

DEMO_USER = "demo-user"
DEMO_AGENT = "travel-agent"

SEARCH_URL = "https://flights.example/search?from=BER&to=LIS&date=2026-03-14"
OFFER_URL = "https://flights.example/offer/TP-537"
BOOKING_URL = "https://flights.example/booking/confirm"

RGB = tuple[int, int, int]
INK: RGB = (30, 30, 30)
SCREEN = (960, 600)
_CHROME = 84  # height of the fake browser's title and address bars


@dataclass(frozen=True, slots=True)
class Flight:
    """One row of the fake search results."""

    code: str
    airline: str
    departs: str
    arrives: str
    stops: str
    price_eur: int


FLIGHTS = (
    Flight("LH-1166", "Lufthansa", "06:35", "11:40", "1 stop", 214),
    Flight("TP-537", "TAP Air Portugal", "09:50", "12:35", "direct", 129),
    Flight("FR-1824", "Ryanair", "13:10", "15:55", "direct", 147),
    Flight("IB-3671", "Iberia", "17:05", "22:20", "1 stop", 188),
)
CHEAPEST = min(FLIGHTS, key=lambda flight: flight.price_eur)
BOOKING_REF = "AC7Q2X"


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has only the fixed-size bitmap font
        return ImageFont.load_default()


class Screen:
    """A fake browser window: title bar, address bar and a page drawn below them."""

    def __init__(self, url: str, title: str) -> None:
        self.image = Image.new("RGB", SCREEN, (255, 255, 255))
        self.draw = ImageDraw.Draw(self.image)
        width = SCREEN[0]
        self.draw.rectangle((0, 0, width, 34), fill=(222, 225, 230))
        for index, colour in enumerate(((255, 95, 87), (254, 188, 46), (40, 200, 64))):
            x = 18 + index * 22
            self.draw.ellipse((x, 11, x + 12, 23), fill=colour)
        self.draw.rounded_rectangle((90, 6, 330, 34), radius=6, fill=(255, 255, 255))
        self.draw.text((104, 12), title[:32], fill=(40, 40, 40), font=_font(13))
        self.draw.rectangle((0, 34, width, _CHROME), fill=(246, 247, 249))
        self.draw.rounded_rectangle(
            (80, 44, width - 24, 74), radius=14, fill=(255, 255, 255), outline=(200, 204, 210)
        )
        self.draw.text((98, 51), url, fill=(60, 64, 70), font=_font(14))
        self.draw.text((20, 50), "<  >  C", fill=(120, 124, 130), font=_font(14))

    def text(self, xy: tuple[int, int], text: str, size: int = 16, fill: RGB = INK) -> None:
        """Draw text on the page (``xy`` relative to the page's top-left corner)."""
        self.draw.text((xy[0], xy[1] + _CHROME), text, fill=fill, font=_font(size))

    def box(
        self, box: tuple[int, int, int, int], *, fill: RGB | None = None, outline: RGB | None = None
    ) -> None:
        """Draw a rounded box on the page (coordinates relative to the page)."""
        x0, y0, x1, y1 = box
        self.draw.rounded_rectangle(
            (x0, y0 + _CHROME, x1, y1 + _CHROME), radius=8, fill=fill, outline=outline, width=2
        )

    def png(self) -> bytes:
        """The screenshot as PNG bytes (deterministic: same page, same bytes)."""
        buffer = io.BytesIO()
        self.image.save(buffer, "PNG", optimize=False)
        return buffer.getvalue()


def results_page() -> bytes:
    """The search results, cheapest flight highlighted."""
    screen = Screen(SEARCH_URL, "Flights BER -> LIS")
    screen.text((32, 24), "Berlin (BER) -> Lisbon (LIS)   Sat 14 Mar   1 adult", size=24)
    screen.text(
        (32, 62), f"{len(FLIGHTS)} flights, sorted by departure", size=15, fill=(90, 90, 90)
    )
    for row, flight in enumerate(FLIGHTS):
        top = 100 + row * 92
        cheapest = flight is CHEAPEST
        screen.box(
            (24, top, SCREEN[0] - 24, top + 80),
            fill=(232, 246, 236) if cheapest else (250, 250, 251),
            outline=(46, 160, 90) if cheapest else (215, 218, 222),
        )
        screen.text((44, top + 14), f"{flight.departs} - {flight.arrives}", size=22)
        screen.text((44, top + 46), f"{flight.airline} {flight.code}  {flight.stops}", size=15)
        screen.text((SCREEN[0] - 190, top + 24), f"EUR {flight.price_eur}", size=26)
        if cheapest:
            screen.text((SCREEN[0] - 330, top + 30), "cheapest", size=15, fill=(46, 140, 80))
    return screen.png()


def error_page() -> bytes:
    """What the browser showed when opening the offer failed: an error frame."""
    screen = Screen(OFFER_URL, "503 Service Unavailable")
    screen.box((24, 24, SCREEN[0] - 24, 150), fill=(253, 236, 236), outline=(205, 50, 50))
    screen.text((48, 44), "503 Service Unavailable", size=30, fill=(170, 30, 30))
    screen.text((48, 96), "The offer service is busy. Please try again in a moment.", size=16)
    screen.text((48, 190), "Request id: 7f3a-19c2   upstream: offers-eu-2", size=14)
    return screen.png()


def offer_page() -> bytes:
    """The cheapest flight's offer page."""
    flight = CHEAPEST
    screen = Screen(OFFER_URL, f"{flight.airline} {flight.code}")
    screen.text((32, 24), f"{flight.airline} {flight.code}", size=28)
    screen.text((32, 70), f"Sat 14 Mar  {flight.departs} BER -> {flight.arrives} LIS", size=20)
    screen.text((32, 104), f"{flight.stops}, 1 cabin bag, seat selection extra", size=16)
    screen.box((32, 160, 420, 260), fill=(246, 247, 249), outline=(215, 218, 222))
    screen.text((52, 178), "Total for 1 adult", size=16)
    screen.text((52, 206), f"EUR {flight.price_eur}.00", size=28)
    screen.box((SCREEN[0] - 300, 190, SCREEN[0] - 40, 250), fill=(30, 110, 220))
    screen.text((SCREEN[0] - 270, 206), "Continue to booking", size=20, fill=(255, 255, 255))
    return screen.png()


def confirmation_page() -> bytes:
    """The booking confirmation."""
    flight = CHEAPEST
    screen = Screen(BOOKING_URL, "Booking confirmed")
    screen.box((24, 24, SCREEN[0] - 24, 170), fill=(232, 246, 236), outline=(46, 160, 90))
    screen.text((48, 44), "Booking confirmed", size=30, fill=(30, 120, 60))
    screen.text((48, 96), f"Reference {BOOKING_REF}", size=22)
    screen.text(
        (48, 128),
        f"{flight.airline} {flight.code}, Sat 14 Mar, {flight.departs} BER -> "
        f"{flight.arrives} LIS, EUR {flight.price_eur}.00",
        size=16,
    )
    screen.text((48, 210), "A confirmation e-mail is on its way.", size=16)
    return screen.png()


def run_demo(
    engine: ContextEngine, *, user_id: str = DEMO_USER, agent_id: str = DEMO_AGENT
) -> Session:
    """Record the demo conversation in a new session of ``user_id`` and return the session."""
    session = engine.create_session(
        user_id=user_id,
        agent_id=agent_id,
        state={"task": "book the cheapest flight BER -> LIS on 14 March"},
        metadata={"source": "agentctx demo"},
    )
    request = "Find me the cheapest flight from Berlin to Lisbon on 14 March, one adult."
    results = results_page()

    with session.turn(author=agent_id) as turn:
        turn.add_message(
            "system",
            "You are a travel agent with a web browser. Confirm before you pay for anything.",
        )
        turn.add_message("user", request, idempotency_key="demo-request-1")
        # The client timed out and sent the request again: same key, stored once.
        turn.add_message("user", request, idempotency_key="demo-request-1")
        turn.add_event(
            EventType.PLANNER,
            "1. search BER -> LIS on 14 March  2. open the cheapest offer  3. ask to book",
            model="demo-model",
        )

        call = "call_01"  # tool-call ids come from the model; these mimic them
        turn.add_tool_call("browser.open", {"url": SEARCH_URL}, call_id=call)
        turn.add_tool_result(
            call,
            content=f"Loaded {SEARCH_URL}: {len(FLIGHTS)} flights.",
            data=[{"code": f.code, "price_eur": f.price_eur, "stops": f.stops} for f in FLIGHTS],
            images=[results],
            duration_ms=812.0,
        )

        call = "call_02"
        turn.add_tool_call("browser.click", {"selector": f"#offer-{CHEAPEST.code}"}, call_id=call)
        turn.add_tool_result(
            call,
            content="HTTP 503 Service Unavailable while opening the offer page.",
            data={"status": 503, "url": OFFER_URL},
            images=[error_page()],
            is_error=True,
            duration_ms=2004.0,
        )
        turn.add_event(
            EventType.REFLECTION,
            "The offer page failed with a 503; the results are still open. Check, then retry.",
            model="demo-model",
        )

        # The page has not changed, so this screenshot is byte-identical to the first one:
        # the blob store keeps it once.
        call = "call_03"
        turn.add_tool_call("browser.screenshot", {"region": "viewport"}, call_id=call)
        turn.add_tool_result(call, content="Results page unchanged.", images=[results])

        call = "call_04"
        turn.add_tool_call("browser.click", {"selector": f"#offer-{CHEAPEST.code}"}, call_id=call)
        turn.add_tool_result(
            call,
            content=f"Opened {OFFER_URL}.",
            images=[offer_page()],
            duration_ms=655.0,
        )
        session.update_state(
            {
                "step": "offer_found",
                "offer": {"code": CHEAPEST.code, "price_eur": CHEAPEST.price_eur},
            }
        )
        turn.add_message(
            "assistant",
            f"The cheapest flight is {CHEAPEST.airline} {CHEAPEST.code} "
            f"({CHEAPEST.departs}-{CHEAPEST.arrives}, {CHEAPEST.stops}) for "
            f"EUR {CHEAPEST.price_eur}. Shall I book it?",
            model="demo-model",
        )

    with session.turn(author=agent_id) as turn:
        turn.add_message("user", "Yes, book it.")
        call = "call_05"
        turn.add_tool_call(
            "browser.click", {"selector": "#continue-to-booking", "confirm": True}, call_id=call
        )
        turn.add_tool_result(
            call,
            content=f"Booking confirmed, reference {BOOKING_REF}.",
            data={"booking_ref": BOOKING_REF, "total_eur": CHEAPEST.price_eur},
            images=[confirmation_page()],
            duration_ms=1420.0,
        )
        session.update_state({"step": "booked", "booking_ref": BOOKING_REF})
        turn.add_event(
            EventType.FINAL,
            f"Booked {CHEAPEST.airline} {CHEAPEST.code} on 14 March for EUR "
            f"{CHEAPEST.price_eur}; reference {BOOKING_REF}.",
            model="demo-model",
        )
    session.refresh()
    return session
