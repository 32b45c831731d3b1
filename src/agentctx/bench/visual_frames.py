"""The simulated desktop task of ``agentctx bench visual``: real screenshots, drawn.

A computer-use agent works through ``turns`` user requests on a 1280x800 desktop.
Each turn takes 3 to 10 actions, and each action returns a screenshot drawn with
Pillow and encoded as PNG: a desktop with overlapping windows (title bars, text,
coloured panels, buttons), a taskbar and a mouse cursor. Among the frames, on purpose:

* **near-duplicates** of the previous frame: the same screen with the cursor moved a
  few pixels or the text caret blinked, as an agent's "take another screenshot" gives;
  they are planted only in the middle of a turn and never twice in a row, so each one's
  previous frame is a stored, distinct screen;
* **error frames**: a modal error dialog over a dimmed screen, returned with
  ``is_error=True`` (the next action dismisses it);
* every other action changes the screen for real (a window opens, moves, is brought to
  the front or shows another page), so it must not be taken for a duplicate.

Everything comes from one ``random.Random(seed)``: the same seed gives the same bytes.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, ImageDraw, ImageFont

WIDTH, HEIGHT = 1280, 800
TASKBAR = 40

_APPS = (
    "Files",
    "Browser - Invoices",
    "Spreadsheet - Q3 totals",
    "Mail - Inbox",
    "Terminal",
    "Settings",
    "Calendar",
    "Text Editor - notes.txt",
)
_WORDS = [
    "invoice",
    "total",
    "account",
    "order",
    "refund",
    "status",
    "pending",
    "shipped",
    "customer",
    "report",
    "quarter",
    "revenue",
    "budget",
    "draft",
    "meeting",
    "project",
    "deploy",
    "error",
    "log",
    "review",
    "update",
    "monday",
    "friday",
    "amount",
    "balance",
    "paid",
    "unpaid",
    "export",
    "import",
    "settings",
    "network",
]
_ACCENTS = ((52, 101, 164), (78, 154, 6), (204, 0, 0), (117, 80, 123), (196, 160, 0), (6, 152, 154))
# Page blocks: light panels, dark terminal panes, saturated images and charts. Pages
# differ in their large-scale layout, as real screens of different apps and pages do.
_PANELS = (
    (230, 236, 245),
    (250, 232, 214),
    (30, 30, 30),
    (0, 43, 54),
    (200, 60, 40),
    (40, 120, 200),
    (90, 170, 80),
    (20, 20, 60),
)
_BACKGROUNDS = ((38, 70, 83), (42, 54, 74), (60, 60, 60), (33, 85, 99))
_REQUESTS = (
    "Find last month's unpaid invoices and put their totals in the spreadsheet.",
    "Open the mail from the landlord and save the attachment to Documents.",
    "Check the deploy log in the terminal and tell me which step failed.",
    "Move Friday's meeting to Monday at 10 and let the team know.",
    "Change the display scaling to 125% in Settings.",
    "Export the Q3 totals as CSV and attach them to a reply to Dana.",
    "Rename the screenshots folder to 'archive-2024' in Files.",
    "Look up order 4471 in the browser and copy its tracking number into notes.txt.",
)
_ERRORS = (
    "The file is in use by another program.",
    "Permission denied: /home/user/Documents/report.xlsx",
    "The server did not respond in time (timeout after 30 s).",
    "Invalid date: please use YYYY-MM-DD.",
    "Could not connect to smtp.example.com.",
)


@dataclass
class _Window:
    title: str
    box: tuple[int, int, int, int]  # x, y, width, height
    accent: tuple[int, int, int]
    lines: list[str]
    panels: list[tuple[int, int, int, int, tuple[int, int, int]]]  # relative x, y, w, h, colour
    field_text: str = ""


@dataclass
class _Screen:
    background: tuple[int, int, int]
    windows: list[_Window]  # last is in front
    cursor: tuple[int, int]
    caret: bool = True
    dialog: str | None = None
    clock: int = 9 * 60


@dataclass(frozen=True)
class Frame:
    """One screenshot the task returns from an action."""

    turn: int  # from 0
    index: int  # within the turn, from 0
    png: bytes
    action: dict[str, Any]
    result: str  # the tool result's text
    near_duplicate: bool  # planted: the previous frame with the cursor or caret moved
    error: bool  # an error dialog (sent with is_error=True)
    first: bool
    last: bool


@dataclass(frozen=True)
class TaskTurn:
    """A user request, the actions with their screenshots, and the agent's answer."""

    index: int
    user: str
    frames: tuple[Frame, ...]
    answer: str


@dataclass
class _Painter:
    fonts: dict[int, ImageFont.FreeTypeFont | ImageFont.ImageFont] = field(default_factory=dict)

    def font(self, size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
        if size not in self.fonts:
            self.fonts[size] = ImageFont.load_default(size=size)
        return self.fonts[size]

    def png(self, screen: _Screen) -> bytes:
        image = Image.new("RGB", (WIDTH, HEIGHT), screen.background)
        draw = ImageDraw.Draw(image)
        for number, window in enumerate(screen.windows):
            self._window(draw, window, front=number == len(screen.windows) - 1, caret=screen.caret)
        if screen.dialog is not None:
            image = self._dialog(image, screen.dialog)
            draw = ImageDraw.Draw(image)
        self._taskbar(draw, screen)
        self._cursor(draw, screen.cursor)
        buffer = io.BytesIO()
        image.save(buffer, "PNG", compress_level=3)
        return buffer.getvalue()

    def _window(
        self, draw: ImageDraw.ImageDraw, window: _Window, *, front: bool, caret: bool
    ) -> None:
        x, y, w, h = window.box
        draw.rectangle((x + 4, y + 4, x + w + 4, y + h + 4), fill=(20, 20, 20))  # shadow
        draw.rectangle((x, y, x + w, y + h), fill=(252, 252, 252), outline=(90, 90, 90))
        bar = window.accent if front else (150, 150, 150)
        draw.rectangle((x, y, x + w, y + 30), fill=bar)
        draw.text((x + 10, y + 7), window.title, fill=(255, 255, 255), font=self.font(15))
        for offset, colour in ((-24, (255, 95, 86)), (-46, (255, 189, 46)), (-68, (39, 201, 63))):
            draw.ellipse((x + w + offset, y + 9, x + w + offset + 12, y + 21), fill=colour)
        for px, py, pw, ph, colour in window.panels:
            draw.rectangle((x + px, y + py, x + px + pw, y + py + ph), fill=colour)
        for row, line in enumerate(window.lines):
            ty = y + 44 + row * 20
            if ty > y + h - 70:
                break
            draw.text((x + 14, ty), line, fill=(30, 30, 30), font=self.font(13))
        # An input field with its caret, and two buttons.
        fy = y + h - 56
        draw.rectangle(
            (x + 12, fy, x + w - 200, fy + 28), fill=(255, 255, 255), outline=(120, 120, 120)
        )
        draw.text((x + 18, fy + 6), window.field_text, fill=(0, 0, 0), font=self.font(13))
        if front and caret:
            cx = x + 20 + int(draw.textlength(window.field_text, font=self.font(13)))
            draw.line((cx, fy + 5, cx, fy + 23), fill=(0, 0, 0), width=2)
        for bx, label in ((x + w - 186, "Cancel"), (x + w - 96, "OK")):
            draw.rounded_rectangle((bx, fy, bx + 84, fy + 28), radius=5, fill=window.accent)
            draw.text((bx + 20, fy + 6), label, fill=(255, 255, 255), font=self.font(13))

    def _dialog(self, image: Image.Image, message: str) -> Image.Image:
        dimmed = Image.blend(image, Image.new("RGB", image.size, (0, 0, 0)), 0.45)
        draw = ImageDraw.Draw(dimmed)
        x, y, w, h = WIDTH // 2 - 280, HEIGHT // 2 - 120, 560, 220
        draw.rectangle((x, y, x + w, y + h), fill=(245, 245, 245), outline=(160, 0, 0), width=3)
        draw.rectangle((x, y, x + w, y + 34), fill=(178, 34, 34))
        draw.text((x + 12, y + 8), "Error", fill=(255, 255, 255), font=self.font(16))
        draw.ellipse((x + 24, y + 64, x + 84, y + 124), fill=(204, 0, 0))
        draw.text((x + 46, y + 72), "!", fill=(255, 255, 255), font=self.font(36))
        draw.text((x + 104, y + 80), message, fill=(20, 20, 20), font=self.font(14))
        draw.rounded_rectangle(
            (x + w - 120, y + h - 50, x + w - 20, y + h - 16), radius=5, fill=(52, 101, 164)
        )
        draw.text((x + w - 82, y + h - 42), "OK", fill=(255, 255, 255), font=self.font(14))
        return dimmed

    def _taskbar(self, draw: ImageDraw.ImageDraw, screen: _Screen) -> None:
        draw.rectangle((0, HEIGHT - TASKBAR, WIDTH, HEIGHT), fill=(24, 24, 28))
        for number, window in enumerate(screen.windows):
            bx = 60 + number * 150
            draw.rectangle((bx, HEIGHT - 34, bx + 140, HEIGHT - 6), fill=(60, 60, 70))
            draw.text(
                (bx + 8, HEIGHT - 28), window.title[:16], fill=(230, 230, 230), font=self.font(12)
            )
        clock = f"{screen.clock // 60 % 24:02d}:{screen.clock % 60:02d}"
        draw.text((WIDTH - 70, HEIGHT - 29), clock, fill=(230, 230, 230), font=self.font(14))

    @staticmethod
    def _cursor(draw: ImageDraw.ImageDraw, at: tuple[int, int]) -> None:
        x, y = at
        arrow = [
            (x, y),
            (x, y + 20),
            (x + 5, y + 15),
            (x + 9, y + 24),
            (x + 12, y + 23),
            (x + 8, y + 14),
            (x + 14, y + 14),
        ]
        draw.polygon(arrow, fill=(255, 255, 255), outline=(0, 0, 0))


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize()


def _page(
    rng: random.Random, w: int, h: int
) -> list[tuple[int, int, int, int, tuple[int, int, int]]]:
    """A page's large blocks (relative x, y, width, height, colour)."""
    blocks = []
    for _ in range(rng.randint(3, 5)):
        bw, bh = rng.randint(w // 4, w // 2), rng.randint(h // 4, h // 2)
        blocks.append(
            (
                rng.randint(10, w - bw - 10),
                rng.randint(36, h - bh - 70),
                bw,
                bh,
                rng.choice(_PANELS),
            )
        )
    return blocks


def _new_window(rng: random.Random, title: str | None = None) -> _Window:
    w, h = rng.randint(820, 1240), rng.randint(520, 740)
    x, y = rng.randint(0, WIDTH - w - 10), rng.randint(0, HEIGHT - TASKBAR - h - 10)
    panels = _page(rng, w, h)
    return _Window(
        title=title or rng.choice(_APPS),
        box=(x, y, w, h),
        accent=rng.choice(_ACCENTS),
        lines=[_sentence(rng, rng.randint(4, 11)) for _ in range(rng.randint(6, 22))],
        panels=panels,
    )


def _real_action(rng: random.Random, screen: _Screen) -> tuple[dict[str, Any], str]:
    """Change the screen for real; the action and its result text."""
    kind = rng.choice(("open", "click", "scroll", "type", "move"))
    target = (rng.randint(20, WIDTH - 40), rng.randint(20, HEIGHT - TASKBAR - 40))
    if kind == "open" or len(screen.windows) < 2:
        window = _new_window(rng)
        screen.windows = [*screen.windows[-3:], window]
        action: dict[str, Any] = {"action": "double_click", "coordinate": list(target)}
        result = f"Opened {window.title}."
    elif kind == "click":
        # Bring a background window to the front, on another page.
        window = screen.windows.pop(rng.randrange(len(screen.windows) - 1))
        window.lines = [_sentence(rng, rng.randint(4, 11)) for _ in range(rng.randint(6, 22))]
        window.panels = _page(rng, window.box[2], window.box[3])
        screen.windows.append(window)
        action = {"action": "left_click", "coordinate": list(target)}
        result = f"Clicked; {window.title} is in front."
    elif kind == "scroll":
        window = screen.windows[-1]
        shift = rng.randint(5, 12)
        window.lines = window.lines[shift:] + [
            _sentence(rng, rng.randint(4, 11)) for _ in range(shift)
        ]
        window.panels = _page(rng, window.box[2], window.box[3])
        action = {"action": "scroll", "coordinate": list(target), "scroll_amount": shift}
        result = f"Scrolled {shift} lines."
    elif kind == "type":
        window = screen.windows[-1]
        text = _sentence(rng, rng.randint(2, 5))
        window.field_text = text
        window.panels = _page(rng, window.box[2], window.box[3])  # the typed text filters the page
        window.lines = [_sentence(rng, rng.randint(4, 11)) for _ in range(rng.randint(3, 12))]
        action = {"action": "type", "text": text}
        result = f"Typed {text!r}."
    else:
        window = screen.windows[-1]
        _x, _y, w, h = window.box
        window.box = (
            rng.randint(0, WIDTH - w - 10),
            rng.randint(0, HEIGHT - TASKBAR - h - 10),
            w,
            h,
        )
        action = {"action": "left_click_drag", "coordinate": list(target)}
        result = f"Moved {window.title}."
    front = screen.windows[-1]
    front.panels = _page(rng, front.box[2], front.box[3])  # every action shows a new view
    screen.cursor = target
    screen.clock += rng.randint(1, 3)
    return action, result


_PAINTER = _Painter()  # its fonts are loaded once per process


def desktop_screenshot(
    rng: random.Random, *, title: str | None = None, lines: list[str] | None = None
) -> bytes:
    """One desktop screenshot as PNG, drawn from ``rng``: a window in front of another,
    the taskbar and the cursor. ``title`` and ``lines`` are the front window's title bar
    and text (default: an app's name and random sentences)."""
    front = _new_window(rng, title)
    if lines is not None:
        front.lines = list(lines)
    screen = _Screen(
        background=rng.choice(_BACKGROUNDS),
        windows=[_new_window(rng), front],
        cursor=(rng.randint(20, WIDTH - 40), rng.randint(20, HEIGHT - TASKBAR - 40)),
        clock=rng.randint(8 * 60, 19 * 60),
    )
    return _PAINTER.png(screen)


def generate_task(turns: int, seed: int = 0) -> list[TaskTurn]:
    """The task's turns, each with 3 to 10 screenshots (deterministic from ``seed``)."""
    rng = random.Random(seed)
    painter = _Painter()
    screen = _Screen(
        background=rng.choice(_BACKGROUNDS),
        windows=[_new_window(rng), _new_window(rng)],
        cursor=(WIDTH // 2, HEIGHT // 2),
    )
    out: list[TaskTurn] = []
    for number in range(turns):
        count = rng.randint(3, 10)
        frames: list[Frame] = []
        previous_dup = True  # no duplicate as a turn's first frame
        for index in range(count):
            first, last = index == 0, index == count - 1
            middle = not first and not last
            if middle and not previous_dup and screen.dialog is None and rng.random() < 0.3:
                # The same screen again: the cursor nudged a few pixels, or the caret blinked.
                if rng.random() < 0.5:
                    dx, dy = (
                        rng.choice((-1, 1)) * rng.randint(1, 4),
                        rng.choice((-1, 1)) * rng.randint(1, 4),
                    )
                    screen.cursor = (screen.cursor[0] + dx, screen.cursor[1] + dy)
                    action: dict[str, Any] = {
                        "action": "mouse_move",
                        "coordinate": list(screen.cursor),
                    }
                    result = "Moved the mouse."
                else:
                    screen.caret = not screen.caret
                    action, result = {"action": "screenshot"}, "Took a screenshot."
                dup, error = True, False
            elif not first and screen.dialog is None and rng.random() < 0.1:
                screen.dialog = rng.choice(_ERRORS)
                action = {
                    "action": "left_click",
                    "coordinate": [rng.randint(100, 1100), rng.randint(100, 700)],
                }
                result = f"Error: {screen.dialog}"
                dup, error = False, True
            else:
                screen.dialog = None
                action, result = _real_action(rng, screen)
                dup, error = False, False
            frames.append(
                Frame(
                    turn=number,
                    index=index,
                    png=painter.png(screen),
                    action=action,
                    result=result,
                    near_duplicate=dup,
                    error=error,
                    first=first,
                    last=last,
                )
            )
            previous_dup = dup
        screen.dialog = None  # the agent closes an error dialog before it answers
        out.append(
            TaskTurn(
                index=number,
                user=_REQUESTS[number % len(_REQUESTS)] + f" (request {number + 1})",
                frames=tuple(frames),
                answer=f"Done: {frames[-1].result} ({count} actions).",
            )
        )
    return out
