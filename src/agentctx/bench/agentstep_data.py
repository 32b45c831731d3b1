"""The session of ``agentctx bench agentstep``: a coding agent at work, with real tool output.

The codebase the agent works on is the Python environment the benchmark runs in: the
source files of its installed distributions (``importlib.metadata``). Each turn is a
user request about one of those files, one to three tool calls, and the agent's answer.
The tools, and what they return:

* ``read_file`` (text): the real file, cut at a line end to a seeded size of 2-40 KB;
* ``list_dir`` (JSON): the real entries under the file's folder (path, kind, bytes),
  walked in order until the seeded size;
* ``search`` (JSON): real lines holding an identifier the file defines, with a line of
  context either side, from the files of its distribution (then of others);
* ``run_command`` (text): ``pip list -v`` or ``pip show -f`` as pip prints them, built
  from the installed distributions' metadata;
* ``screenshot`` (a line of text and an image): every few turns, the editor showing the
  file, drawn with Pillow as a 1280x800 PNG (``bench.visual_frames``).

The same seed in the same environment gives the same session.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from agentctx.bench.compaction_session import ToolCall
from agentctx.bench.visual_frames import desktop_screenshot

MIN_OUTPUT = 2_000
MAX_OUTPUT = 40_000
SCREENSHOT_EVERY = 4  # a turn in this many has a screenshot among its calls
SEARCH_FILES = 300  # files one search reads at most
SEARCH_CONTEXT = 3  # lines shown either side of a match
SYSTEM_PROMPT = (
    "You are a coding agent working in the user's Python environment. Use the tools to "
    "read files, list folders, search the code and run commands; answer with the file "
    "and line that settle the question, and say when you are not sure."
)
_DEFINITION = re.compile(r"^\s*(?:async\s+def|def|class)\s+([A-Za-z][A-Za-z0-9_]{3,})", re.M)
_REQUESTS = (
    "In {package}, where is `{name}` defined and what does it do? Start from {file}.",
    "Something calls `{name}` with the wrong arguments; check {file} and show me how it "
    "is meant to be called.",
    "List what is in the folder of {file} and tell me which module handles `{name}`.",
    "Which version of {package} is installed here, and does {file} still define `{name}`?",
    "I want to change `{name}` in {file}. What else uses it, and what would break?",
)
_ANSWERS = (
    "`{name}` is defined in {file} at line {line}. {count} other place(s) use it; the "
    "calls pass it the same arguments, so a change there is local.",
    "{file} still defines `{name}` (line {line}). The search found {count} use(s); none "
    "of them passes more than the documented arguments.",
    "The module that handles `{name}` is {file}, line {line}. I listed the folder and "
    "searched the code: {count} result(s), all from the same package.",
)


@dataclass(frozen=True, slots=True)
class ToolStep(ToolCall):
    """One tool call and its result: ``text`` or JSON ``data``, and an ``image`` (PNG)."""

    image: bytes | None = None


@dataclass(frozen=True, slots=True)
class AgentTurn:
    """One turn: the user's request, the agent's tool calls in order, its answer."""

    index: int
    user: str
    steps: tuple[ToolStep, ...]
    answer: str


def session_fingerprint(turns: Sequence[AgentTurn]) -> str:
    """The first 16 hex digits of a sha256 over everything the session replays (messages,
    tool calls with their arguments, outputs and screenshots, answers). The session is
    made of the installed packages' files, so another set of packages (one ``pip
    install`` more) gives another session: runs compare only on the same fingerprint."""
    digest = hashlib.sha256()

    def add(value: str | bytes) -> None:
        data = value.encode() if isinstance(value, str) else value
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)

    for turn in turns:
        add(turn.user)
        for step in turn.steps:
            add(step.name)
            add(json.dumps(step.arguments, sort_keys=True, separators=(",", ":")))
            add(step.output())
            add(step.image or b"")
        add(turn.answer)
    return digest.hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A Python file of an installed distribution."""

    package: str
    relative: str  # as the distribution records it, e.g. "requests/models.py"
    path: Path


@cache
def _distributions() -> tuple[metadata.Distribution, ...]:
    """The installed distributions, one per name (the first on ``sys.path``), by name."""
    named: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name and name not in named:
            named[name] = dist
    return tuple(named[name] for name in sorted(named))


@cache
def _sources() -> tuple[SourceFile, ...]:
    """Every Python file the installed distributions record, in a stable order."""
    files: list[SourceFile] = []
    for dist in _distributions():
        name = str(dist.metadata["Name"])  # parsed on every access: once per distribution
        for entry in dist.files or ():
            relative = str(entry)
            if relative.endswith(".py") and not relative.startswith(".."):
                files.append(SourceFile(name, relative, Path(str(dist.locate_file(entry)))))
    if not files:
        raise RuntimeError("no installed distribution records a Python file")
    return tuple(files)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _cut(text: str, size: int) -> str:
    """``text`` cut at the last line end within ``size`` characters."""
    if len(text) <= size:
        return text
    end = text.rfind("\n", 0, size)
    return text[: end + 1 if end > 0 else size]


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


class _Agent:
    """Makes the tool calls of a scripted coding agent, from one seeded RNG."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.sources = _sources()

    def subject(self) -> tuple[SourceFile, str, str]:
        """A file of at least 2 KB defining something: the file, its text, a name in it."""
        while True:
            source = self.rng.choice(self.sources)
            text = _read(source.path)
            names = sorted(set(_DEFINITION.findall(text)))
            if len(text) >= MIN_OUTPUT and names:
                return source, text, self.rng.choice(names)

    def size(self) -> int:
        return self.rng.randint(MIN_OUTPUT, MAX_OUTPUT)

    def read_file(self, call_id: str, source: SourceFile, text: str) -> ToolStep:
        return ToolStep(
            call_id, "read_file", {"path": source.relative}, text=_cut(text, self.size())
        )

    def list_dir(self, call_id: str, source: SourceFile) -> ToolStep:
        target = self.size()
        root = Path(str(source.path)[: -len(source.relative)] or "/")
        folder = source.path.parent
        while folder not in (root, folder.parent) and _tree_bytes(folder) < MIN_OUTPUT:
            folder = folder.parent
        entries: list[dict[str, Any]] = []
        size = 0
        truncated = False
        for entry in _walk(folder):
            if size >= target:
                truncated = True
                break
            item = {
                "path": str(entry.relative_to(folder)),
                "type": "dir" if entry.is_dir() else "file",
                "bytes": 0 if entry.is_dir() else entry.stat().st_size,
            }
            entries.append(item)
            size += _json_size(item) + 1
        shown = str(folder.relative_to(root)) if folder != root else "."
        data = {"path": shown, "entries": entries, "truncated": truncated}
        return ToolStep(call_id, "list_dir", {"path": shown, "recursive": True}, data=data)

    def search(self, call_id: str, source: SourceFile, name: str) -> ToolStep:
        """Lines holding ``name`` (or, when it is rare, the file's top-level package name),
        three lines of context either side, as a code search tool returns them."""
        target = self.size()
        own = [s for s in self.sources if s.package == source.package]
        others = [self.rng.choice(self.sources) for _ in range(SEARCH_FILES)]
        files = [source, *own, *others][:SEARCH_FILES]
        top = source.relative.split("/", 1)[0].removesuffix(".py")
        for query in (name, top):
            matches = _matches(files, query, target)
            if sum(map(_json_size, matches)) >= MIN_OUTPUT:
                break
        data = {"query": query, "matches": matches, "count": len(matches)}
        return ToolStep(call_id, "search", {"query": query, "path": "."}, data=data)

    def run_command(self, call_id: str, source: SourceFile) -> ToolStep:
        target = self.size()
        shown = pip_show(source.package)
        if self.rng.random() < 0.5 and len(shown) >= MIN_OUTPUT:
            command, output = f"pip show -f {source.package}", shown
        else:
            command, output = "pip list -v", pip_list()
        return ToolStep(call_id, "run_command", {"command": command}, text=_cut(output, target))

    def screenshot(self, call_id: str, source: SourceFile, text: str) -> ToolStep:
        lines = [line[:110] for line in text.splitlines()[:28]]
        image = desktop_screenshot(self.rng, title=f"Editor - {source.relative}", lines=lines)
        return ToolStep(
            call_id,
            "screenshot",
            {"window": "editor"},
            text=f"Screenshot of the editor showing {source.relative} (1280x800).",
            image=image,
        )


def _matches(files: list[SourceFile], query: str, target: int) -> list[dict[str, Any]]:
    """The lines of ``files`` holding ``query``, with context, up to ``target`` characters."""
    matches: list[dict[str, Any]] = []
    size = 0
    for candidate in files:
        lines = _read(candidate.path).splitlines()
        for number, line in enumerate(lines):
            if query not in line:
                continue
            match = {
                "path": candidate.relative,
                "line": number + 1,
                "text": line,
                "context": lines[max(0, number - SEARCH_CONTEXT) : number + SEARCH_CONTEXT + 1],
            }
            matches.append(match)
            size += _json_size(match) + 1
            if size >= target:
                return matches
    return matches


def _walk(folder: Path) -> Iterator[Path]:
    """Everything under ``folder``, depth first, in name order (caches left out)."""
    try:
        children = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError:
        return
    for child in children:
        if child.name == "__pycache__":
            continue
        yield child
        if child.is_dir() and not child.is_symlink():
            yield from _walk(child)


def _tree_bytes(folder: Path) -> int:
    """About how much a listing of ``folder`` takes, up to MIN_OUTPUT."""
    size = 0
    for entry in _walk(folder):
        size += len(str(entry.relative_to(folder))) + 40
        if size >= MIN_OUTPUT:
            break
    return size


@cache
def pip_list() -> str:
    """What ``pip list -v`` prints for the installed distributions."""
    rows = [
        (str(d.metadata["Name"]), str(d.version), str(d.locate_file("")), _installer(d))
        for d in _distributions()
    ]
    header = ("Package", "Version", "Location", "Installer")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    lines = [" ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append(" ".join("-" * w for w in widths))
    lines += [
        " ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    return "\n".join(lines) + "\n"


def _installer(dist: metadata.Distribution) -> str:
    return (dist.read_text("INSTALLER") or "").strip()


@cache
def pip_show(package: str) -> str:
    """What ``pip show -f PACKAGE`` prints."""
    dist = metadata.distribution(package)
    meta = dist.metadata
    requires = sorted({re.split(r"[ ;<>=!~\[(]", r, maxsplit=1)[0] for r in dist.requires or ()})
    lines = [
        f"Name: {meta['Name']}",
        f"Version: {dist.version}",
        f"Summary: {meta['Summary'] or ''}",
        f"Home-page: {meta['Home-page'] or ''}",
        f"Author: {meta['Author'] or ''}",
        f"Author-email: {meta['Author-email'] or ''}",
        f"License: {meta['License'] or meta['License-Expression'] or ''}",
        f"Location: {dist.locate_file('')}",
        f"Requires: {', '.join(r for r in requires if r)}",
        "Files:",
        *(f"  {entry}" for entry in dist.files or ()),
    ]
    return "\n".join(lines) + "\n"


def _step(agent: _Agent, call_id: str, source: SourceFile, text: str, name: str) -> ToolStep:
    kind = agent.rng.choices(("read_file", "search", "list_dir", "run_command"), (4, 3, 2, 2))[0]
    if kind == "read_file":
        return agent.read_file(call_id, source, text)
    if kind == "search":
        return agent.search(call_id, source, name)
    if kind == "list_dir":
        return agent.list_dir(call_id, source)
    return agent.run_command(call_id, source)


def generate_agent_session(turns: int = 200, seed: int = 0) -> list[AgentTurn]:
    """``turns`` turns of the coding agent (deterministic from ``seed`` in one environment)."""
    if turns < 1:
        raise ValueError("turns must be at least 1")
    rng = random.Random(seed)
    agent = _Agent(rng)
    session: list[AgentTurn] = []
    for index in range(turns):
        source, text, name = agent.subject()
        count = rng.choice((1, 2, 2, 3))
        steps: list[ToolStep] = []
        for n in range(count):
            call_id = f"call_{index:04d}_{n}"
            if n == 0 and rng.random() < 0.6:
                steps.append(agent.read_file(call_id, source, text))
            elif n == count - 1 and index % SCREENSHOT_EVERY == SCREENSHOT_EVERY - 1:
                steps.append(agent.screenshot(call_id, source, text))
            else:
                steps.append(_step(agent, call_id, source, text, name))
        if index % SCREENSHOT_EVERY == SCREENSHOT_EVERY - 1 and steps[-1].image is None:
            steps.append(agent.screenshot(f"call_{index:04d}_{count}", source, text))
        line = text[: text.find(name)].count("\n") + 1
        uses = sum(len(s.data["matches"]) for s in steps if s.name == "search")
        fields = {"package": source.package, "file": source.relative, "name": name}
        session.append(
            AgentTurn(
                index=index,
                user=rng.choice(_REQUESTS).format(**fields),
                steps=tuple(steps),
                answer=rng.choice(_ANSWERS).format(**fields, line=line, count=uses),
            )
        )
    return session
