"""Reading tool-calling conversations for ``agentctx bench agentloop``, and the yardsticks
taken from them: the arguments a model's next tool calls used, the messages before a call.

The file is a JSON list of ``{task_id, trial, traj, …}``: ``traj`` is one conversation as
OpenAI chat messages, ``traj[0]`` its system prompt (the agent's policy).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentctx.errors import InvalidInput

Message = dict[str, Any]


@dataclass(frozen=True)
class Conversation:
    """One conversation: its id, the system prompt and the messages after it."""

    key: str
    task_id: int | None
    system: str | None
    messages: tuple[Message, ...]

    @property
    def half(self) -> str:
        """Which half of the data it belongs to (by task id), for tuning on one half and
        checking on the other: ``"even"`` or ``"odd"``."""
        return "odd" if (self.task_id or 0) % 2 else "even"


def load_conversations(path: Path) -> list[Conversation]:
    """The conversations of ``path``; ``InvalidInput`` names what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, list):
        raise InvalidInput(f"{path}: expected a JSON list of conversations")
    conversations = []
    for index, item in enumerate(data):
        traj = item.get("traj") if isinstance(item, Mapping) else None
        if not isinstance(traj, list) or not traj:
            raise InvalidInput(f"{path}: item {index} has no 'traj' list of messages")
        system = None
        if traj[0].get("role") == "system":
            system = str(traj[0].get("content") or "")
            traj = traj[1:]
        task = item.get("task_id")
        conversations.append(
            Conversation(
                key=f"{item.get('task_id', index)}/{item.get('trial', 0)}",
                task_id=task if isinstance(task, int) else None,
                system=system,
                messages=tuple(traj),
            )
        )
    return conversations


def string_values(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (keys left out)."""
    if isinstance(value, str):
        if value:
            yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from string_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from string_values(item)


def call_arguments(message: Message) -> list[str]:
    """The string arguments of an assistant message's tool calls."""
    values: list[str] = []
    for call in message.get("tool_calls") or ():
        raw = call.get("function", {}).get("arguments")
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            continue
        values.extend(string_values(parsed))
    return values


def message_text(message: Mapping[str, Any]) -> str:
    """Everything a chat message says, as one text: its content (text parts) and its tool
    calls' names and arguments."""
    pieces: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list):
        pieces.extend(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        pieces.append(f"{function.get('name', '')}({function.get('arguments', '')})")
    return "\n".join(pieces)


def held(value: str, text: str) -> bool:
    """Whether ``text`` holds ``value`` as written or as JSON writes it (escaped)."""
    return value in text or json.dumps(value, ensure_ascii=False)[1:-1] in text


def arguments_seen_before(messages: Sequence[Message], index: int) -> list[str]:
    """The string arguments of the tool calls of ``messages[index]`` that appeared in an
    earlier message of the same conversation (what the window could have held)."""
    earlier = "\n".join(message_text(m) for m in messages[:index])
    return [value for value in call_arguments(messages[index]) if held(value, earlier)]
