"""The long tool-using session of ``agentctx bench compaction``, generated from a chat.

A LoCoMo or REALTALK conversation (``bench.recall_data``) gives the words: turn ``i``
of the generated session takes dialogue turns ``2i`` and ``2i + 1`` as the user's
message and the agent's answer (wrapping around when the chat is shorter than the
session). Between the two, a seeded RNG sometimes inserts one to three synthetic tool
calls whose outputs are large, as a working agent's are:

* ``search_records`` and ``run_query`` answer with JSON: lists of records or rows
  (dozens to a few hundred items, 5-45 KB);
* ``fetch_page`` and ``read_log`` answer with long text: a page of paragraphs made of
  the chat's sentences, or timestamped log lines (5-45 KB).

Every output stays under the engine's default size guard (64 KB inline), so with
compaction off the whole output is in the event and counts in full. The same
conversation, turn count and seed always give the same session.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agentctx.bench.recall_data import Conversation

TOOL_NAMES: tuple[str, ...] = ("search_records", "run_query", "fetch_page", "read_log")
MAX_OUTPUT_CHARS = 45_000  # under the 64 KB size guard, so outputs stay inline and whole
_STATUSES = ("open", "pending", "done", "blocked", "cancelled")
_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")
_COMPONENTS = ("scheduler", "fetcher", "indexer", "billing", "auth", "cache", "mailer")
_COLUMNS = ("id", "date", "customer", "item", "quantity", "unit_price", "total", "status")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One synthetic tool call and its output (``text`` or JSON ``data``, one of them)."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    text: str | None = None
    data: Any = None

    def output(self) -> str:
        """The output as text (JSON compactly serialized)."""
        if self.text is not None:
            return self.text
        return json.dumps(self.data, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class SessionTurn:
    """One turn: the user's message, the tool calls made for it, the agent's answer."""

    index: int
    user: str
    agent: str
    ts: datetime
    tool_calls: tuple[ToolCall, ...] = ()


def _words(texts: Sequence[str]) -> list[str]:
    words = sorted({w.strip(".,!?;:()\"'").lower() for t in texts for w in t.split()})
    return [w for w in words if len(w) > 3 and w.isalpha()] or ["item", "record", "note"]


class _Outputs:
    """Makes tool outputs from the chat's own words and sentences (seeded)."""

    def __init__(self, rng: random.Random, texts: Sequence[str], speakers: Sequence[str]) -> None:
        self.rng = rng
        self.texts = [t for t in texts if t.strip()] or ["nothing was said"]
        self.words = _words(self.texts)
        self.speakers = list(speakers)

    def _phrase(self, n: int) -> str:
        return " ".join(self.rng.choice(self.words) for _ in range(n))

    def _sentence(self) -> str:
        return self.rng.choice(self.texts)

    def _date(self, base: datetime) -> str:
        return (base - timedelta(days=self.rng.randint(0, 400))).date().isoformat()

    def records(self, query: str, base: datetime) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        count = self.rng.randint(30, 220)
        items: list[dict[str, Any]] = []
        size = 0
        for n in range(count):
            item = {
                "id": f"rec-{self.rng.randrange(10**6):06d}",
                "title": self._phrase(self.rng.randint(2, 6)),
                "owner": self.rng.choice(self.speakers),
                "date": self._date(base),
                "amount": round(self.rng.uniform(1, 5000), 2),
                "status": self.rng.choice(_STATUSES),
                "tags": [self.rng.choice(self.words) for _ in range(self.rng.randint(1, 4))],
                "note": self._sentence()[:160],
            }
            size += 260
            if size > MAX_OUTPUT_CHARS - 400 and n:
                break
            items.append(item)
        return {"query": query, "limit": count}, items

    def table(self, query: str, base: datetime) -> tuple[dict[str, Any], dict[str, Any]]:
        count = self.rng.randint(40, 400)
        rows: list[list[Any]] = []
        for n in range(count):
            quantity = self.rng.randint(1, 40)
            price = round(self.rng.uniform(0.5, 900), 2)
            rows.append(
                [
                    10_000 + n,
                    self._date(base),
                    self.rng.choice(self.speakers),
                    self._phrase(self.rng.randint(1, 3)),
                    quantity,
                    price,
                    round(quantity * price, 2),
                    self.rng.choice(_STATUSES),
                ]
            )
            if (n + 1) * 110 > MAX_OUTPUT_CHARS - 400:
                break
        sql = f"SELECT * FROM orders WHERE item LIKE '%{query.split(maxsplit=1)[0]}%'"
        return {"sql": sql}, {"columns": list(_COLUMNS), "rows": rows, "total": len(rows)}

    def page(self, query: str) -> tuple[dict[str, Any], str]:
        target = self.rng.randint(5_000, MAX_OUTPUT_CHARS)
        lines = [f"# {query.title()}", ""]
        size = 0
        while size < target:
            paragraph = " ".join(self._sentence() for _ in range(self.rng.randint(3, 8)))
            lines += [paragraph, ""]
            size += len(paragraph) + 1
        text = "\n".join(lines)[:MAX_OUTPUT_CHARS]
        url = f"https://docs.example.invalid/{query.replace(' ', '-')}"
        return {"url": url}, text

    def log(self, base: datetime) -> tuple[dict[str, Any], str]:
        target = self.rng.randint(5_000, MAX_OUTPUT_CHARS)
        lines: list[str] = []
        size = 0
        moment = base - timedelta(hours=2)
        while size < target:
            moment += timedelta(milliseconds=self.rng.randint(5, 9000))
            line = (
                f"{moment.isoformat(timespec='milliseconds')} {self.rng.choice(_LEVELS):5} "
                f"[{self.rng.choice(_COMPONENTS)}] {self._phrase(self.rng.randint(3, 9))} "
                f"id={self.rng.randrange(10**8):08d}"
            )
            lines.append(line)
            size += len(line) + 1
        return {"path": "/var/log/agent/service.log", "tail": len(lines)}, "\n".join(lines)


def _tool_call(outputs: _Outputs, turn: int, n: int, user: str, ts: datetime) -> ToolCall:
    name = outputs.rng.choice(TOOL_NAMES)
    words = [w for w in _words([user]) if len(w) > 3][:3] or [outputs.rng.choice(outputs.words)]
    query = " ".join(words)
    call_id = f"call_{turn:04d}_{n}"
    if name == "search_records":
        arguments, records = outputs.records(query, ts)
        return ToolCall(call_id, name, arguments, data=records)
    if name == "run_query":
        arguments, table = outputs.table(query, ts)
        return ToolCall(call_id, name, arguments, data=table)
    if name == "fetch_page":
        arguments, text = outputs.page(query)
        return ToolCall(call_id, name, arguments, text=text)
    arguments, text = outputs.log(ts)
    return ToolCall(call_id, name, arguments, text=text)


def generate_session(
    conversation: Conversation,
    *,
    turns: int = 200,
    seed: int = 0,
    tool_rate: float = 0.4,
) -> list[SessionTurn]:
    """``turns`` turns made from ``conversation``; a turn has tool calls with ``tool_rate``.

    Deterministic: the same conversation, ``turns``, ``seed`` and ``tool_rate`` give
    equal sessions. The dialogue wraps around when the chat has fewer than
    ``2 * turns`` turns.
    """
    if turns < 1:
        raise ValueError("turns must be at least 1")
    if not 0.0 <= tool_rate <= 1.0:
        raise ValueError("tool_rate must be between 0 and 1")
    chat = [t for t in conversation.turns if t.text.strip()]
    if len(chat) < 2:
        raise ValueError(f"conversation {conversation.sample_id} has fewer than two turns")
    rng = random.Random(seed)
    outputs = _Outputs(
        rng, [t.text for t in chat], (conversation.speaker_1, conversation.speaker_2)
    )
    session: list[SessionTurn] = []
    last_ts: datetime | None = None
    for index in range(turns):
        user = chat[(2 * index) % len(chat)]
        agent = chat[(2 * index + 1) % len(chat)]
        # Wrapped-around dialogue keeps its words but must not travel back in time.
        ts = user.ts if last_ts is None or user.ts > last_ts else last_ts + timedelta(minutes=1)
        last_ts = ts
        calls: tuple[ToolCall, ...] = ()
        if rng.random() < tool_rate:
            count = rng.choice((1, 1, 2, 3))
            calls = tuple(_tool_call(outputs, index, n, user.text, ts) for n in range(count))
        session.append(SessionTurn(index, user.text, agent.text, ts, calls))
    return session
