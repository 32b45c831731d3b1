"""Tool-result compression: strategies, registry, offloading behind a pointer, restore.

Strategy tests are pure; everything that stores runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionFunctionToolParam
from pydantic import TypeAdapter
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy import func, select

from agentctx import ContextEngine
from agentctx.compaction.tool_output import (
    CompressedOutput,
    ToolOutputCompressor,
    ToolOutputConfig,
    compress_tool_result_for_window,
    default_chain,
    handle_read_offloaded,
    head_tail,
    offload,
    offloaded_id,
    parse_tool_output_config,
    read_offloaded_page,
    read_offloaded_tool,
    shorten_json,
    truncate_list,
)
from agentctx.context.render import canonical_json, event_text
from agentctx.errors import BlobNotFound, ConfigError, InvalidInput, NotFound, SessionNotFound
from agentctx.events import BlobPart, Event, EventType
from agentctx.sessions import Session
from agentctx.storage.schema import audit, blob_refs
from agentctx.tokens import EstimateCounter, TiktokenCounter

ESTIMATE = EstimateCounter()
EXACT = TiktokenCounter("o200k_base")
COUNTERS = [ESTIMATE, EXACT]
POINTER = re.compile(
    r"\[tool_output: (out_[0-9a-f]{24}|out_[0-9]+_[0-9a-f]{16}), ([0-9,]+) tokens, "
    r"use read_offloaded\((out_[0-9a-f]{24}|out_[0-9]+_[0-9a-f]{16})\)\]$"
)
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
WORDS += ["golf", "hotel", "india", "juliet", "kilo", "lima"]


def search_results(count: int, snippet_words: int = 40) -> dict[str, Any]:
    return {
        "query": "cheapest flight",
        "total": count,
        "results": [
            {
                "rank": i,
                "title": f"Result {i} {WORDS[i % len(WORDS)]}",
                "snippet": " ".join(WORDS[(i + j) % len(WORDS)] for j in range(snippet_words)),
                "tags": [WORDS[(i + k) % len(WORDS)] for k in range(6)],
            }
            for i in range(count)
        ],
    }


def log_text(lines: int) -> str:
    return "\n".join(
        f"step {i}: {WORDS[i % len(WORDS)]} finished in {i % 97} ms" for i in range(lines)
    )


# Strategies -------------------------------------------------------------------------------


@pytest.mark.parametrize("counter", COUNTERS, ids=lambda c: c.name)
def test_truncate_list_keeps_first_items_and_counts_the_rest(counter: Any) -> None:
    data = search_results(200)
    out = truncate_list(data, 600, counter)
    assert counter.count(out) <= 600
    parsed = json.loads(out)
    assert parsed["query"] == data["query"] and parsed["total"] == 200
    results = parsed["results"]
    kept = len(results) - 1
    assert kept >= 1
    assert results[-1] == f"… and {200 - kept:,} more items"
    for i, item in enumerate(results[:kept]):
        # Same N for nested lists: six tags become N of them plus the count of the rest.
        expected = dict(data["results"][i])
        if kept < 6:
            expected["tags"] = [*expected["tags"][:kept], f"… and {6 - kept} more items"]
        assert item == expected


def test_truncate_list_nested_and_text_lines_and_max_items() -> None:
    data = {"pages": [{"rows": list(range(1000))} for _ in range(3)]}
    out = json.loads(truncate_list(data, 80, ESTIMATE))
    pages = out["pages"]
    kept = len(pages[0]["rows"]) - 1
    assert pages[0]["rows"][:kept] == list(range(kept))
    assert pages[0]["rows"][-1] == f"… and {1000 - kept:,} more items"

    capped = json.loads(
        truncate_list([list(range(50)) for _ in range(50)], 2000, ESTIMATE, max_items=2)
    )
    assert capped[:2] == [[0, 1, "… and 48 more items"]] * 2
    assert capped[2] == "… and 48 more items"

    text = log_text(500)
    out_text = truncate_list(text, 120, EXACT)
    assert EXACT.count(out_text) <= 120
    kept_lines = out_text.splitlines()[:-1]
    assert kept_lines == text.splitlines()[: len(kept_lines)]
    assert out_text.splitlines()[-1] == f"… and {500 - len(kept_lines):,} more lines"


def _keys(value: Any, path: str = "") -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            found.add(f"{path}.{key}")
            found |= _keys(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            found |= _keys(item, f"{path}[]")
    return found


@pytest.mark.parametrize("counter", COUNTERS, ids=lambda c: c.name)
def test_shorten_json_keeps_every_key_and_says_what_it_cut(counter: Any) -> None:
    data = {
        "status": "ok",
        "document": {"title": "Quarterly report", "body": "word " * 3000, "meta": {"pages": 12}},
        "links": [f"https://example.org/page/{i}" for i in range(300)],
    }
    out = shorten_json(data, 300, counter)
    assert counter.count(out) <= 300
    parsed = json.loads(out)
    assert _keys(parsed) == _keys(data)
    body = parsed["document"]["body"]
    match = re.fullmatch(r"(.*)… \[\+([0-9,]+) chars\]", body, re.S)
    assert match is not None
    assert len(match.group(1)) + int(match.group(2).replace(",", "")) == len(
        data["document"]["body"]
    )
    links = parsed["links"]
    assert links[:-1] == data["links"][: len(links) - 1]
    assert links[-1] == f"… and {300 - (len(links) - 1):,} more items"
    assert parsed["status"] == "ok" and parsed["document"]["meta"] == {"pages": 12}


def test_shorten_json_depth_limit_and_severe_budgets() -> None:
    data = {"a": {"b": {"c": {"d": 1, "e": 2}}}, "f": [1, [2, [3]]]}
    limited = json.loads(shorten_json(data, 1000, ESTIMATE, max_depth=2))
    assert limited == {"a": {"b": "{… 1 key}"}, "f": [1, "[… 2 items]"]}
    wide = {f"key_{i:04d}": {"value": "x" * 50, "more": [1, 2, 3]} for i in range(2000)}
    for target in (20, 40, 100, 400):
        out = shorten_json(wide, target, EXACT)
        assert EXACT.count(out) <= target
    out = json.loads(shorten_json(wide, 100, EXACT))
    assert isinstance(out, dict)
    assert out["…"].endswith("more keys")  # the top level keeps its first keys
    assert next(iter(out)) == "key_0000"


@pytest.mark.parametrize("counter", COUNTERS, ids=lambda c: c.name)
def test_head_tail_keeps_both_ends_with_a_visible_marker(counter: Any) -> None:
    text = log_text(3000)
    out = head_tail(text, 250, counter)
    assert counter.count(out) <= 250
    lines = out.splitlines()
    original = text.splitlines()
    marker = next(i for i, line in enumerate(lines) if line.startswith("[… "))
    head, tail = lines[:marker], lines[marker + 1 :]
    assert head == original[: len(head)] and head
    assert tail == original[len(original) - len(tail) :] and tail
    match = re.fullmatch(r"\[… ([0-9,]+) lines / ([0-9,]+) tokens omitted …\]", lines[marker])
    assert match is not None
    assert int(match.group(1).replace(",", "")) == 3000 - len(head) - len(tail)
    assert int(match.group(2).replace(",", "")) > counter.count(text) // 2


def test_head_tail_cuts_inside_a_single_long_line() -> None:
    text = "x" * 2000 + " end-of-line-marker"
    out = head_tail(text, 60, EXACT)
    assert EXACT.count(out) <= 60
    assert out.startswith("xxx") and "tokens omitted …]" in out and out.endswith("marker")


@pytest.mark.parametrize("strategy", [truncate_list, shorten_json, head_tail])
@pytest.mark.parametrize("counter", COUNTERS, ids=lambda c: c.name)
def test_every_strategy_holds_the_budget_and_leaves_fitting_content_alone(
    strategy: Any, counter: Any
) -> None:
    for content in (search_results(150), log_text(800), json.dumps(search_results(80), indent=2)):
        for target in (20, 57, 300, 1500):
            out = strategy(content, target, counter)
            assert counter.count(out) <= target, (strategy.__name__, target)
            assert strategy(content, target, counter) == out  # deterministic
    small = '{"ok": true, "items": [1, 2, 3]}'
    assert strategy(small, 1000, counter) == small
    with pytest.raises(InvalidInput):
        strategy(small, -1, counter)


# Registry and thresholds -------------------------------------------------------------------


def test_registry_by_exact_name_and_glob() -> None:
    compressor = ToolOutputCompressor(ToolOutputConfig(strategies={"search_*": "truncate_list"}))
    compressor.register("search_web_*", "head_tail")
    compressor.register("search_web_news", "shorten_json")
    compressor.register("*", "head_tail")
    assert compressor.strategy_for("search_files") == "truncate_list"
    assert compressor.strategy_for("search_web_images") == "head_tail"  # more literal chars
    assert compressor.strategy_for("search_web_news") == "shorten_json"  # exact beats globs
    assert compressor.strategy_for("read_file") == "head_tail"
    assert ToolOutputCompressor().strategy_for("anything") == "auto"
    assert ToolOutputCompressor().strategy_for(None) == "auto"

    data = search_results(300)
    by_glob = compressor.compress("search_files", data, counter=ESTIMATE)
    assert by_glob.strategy == "truncate_list" and by_glob.text.endswith('more items"]}')

    calls: list[int] = []

    def first_line(content: Any, target: int, counter: Any) -> str:
        calls.append(target)
        return "custom " * 5000  # overshoots on purpose: the compressor still holds the bound

    compressor.register("scrape", first_line)
    out = compressor.compress("scrape", log_text(150), counter=ESTIMATE)
    assert calls == [1000]
    assert out.strategy == "first_line+cut" and out.tokens <= 1000
    with pytest.raises(InvalidInput):
        compressor.register("x", "no_such_strategy")
    with pytest.raises(InvalidInput):
        compressor.register("", "head_tail")


def test_compress_thresholds_and_default_chain() -> None:
    config = ToolOutputConfig(compress_over_tokens=300, offload_over_tokens=2000, preview_tokens=80)
    compressor = ToolOutputCompressor(config)
    small = compressor.compress("t", log_text(5), counter=EXACT)
    assert small == CompressedOutput(
        text=log_text(5),
        original_tokens=EXACT.count(log_text(5)),
        tokens=EXACT.count(log_text(5)),
        strategy="none",
        kind="text",
    )
    medium = compressor.compress("t", log_text(60), counter=EXACT)
    assert 300 < medium.original_tokens <= 2000
    assert medium.strategy == "head_tail" and medium.tokens <= 300 and not medium.needs_offload
    large = compressor.compress("t", search_results(200), counter=EXACT)
    assert large.needs_offload and large.kind == "json" and large.tokens <= 80
    # Short items: the default chain keeps whole list items; long ones: the structure.
    many = [{"id": i, "ok": True} for i in range(500)]
    assert default_chain(many, 300, EXACT)[1] == "truncate_list"
    assert default_chain(search_results(50, snippet_words=400), 300, EXACT)[1] == "shorten_json"
    assert default_chain(log_text(100), 300, EXACT)[1] == "head_tail"


def test_config_is_validated() -> None:
    assert parse_tool_output_config(None) == ToolOutputConfig()
    bad: list[dict[str, Any]] = [
        {"compress_over_tokens": 5},
        {"compress_over_tokens": 5000, "offload_over_tokens": 1000},
        {"preview_tokens": 2000},
        {"strategies": {"search_*": "zip"}},
        {"no_such_field": 1},
    ]
    for data in bad:
        with pytest.raises(ConfigError):
            parse_tool_output_config(data)


# Offloading and restore (SQLite and PostgreSQL) ---------------------------------------------


def _tool_result(session: Session, name: str, **result: Any) -> Event:
    with session.turn() as turn:
        call = turn.add_tool_call(name, {"q": "x"})
        return turn.add_tool_result(call.call_id, **result)


def _ref_count(engine: ContextEngine) -> int:
    with engine.db.read() as conn:
        return int(conn.execute(select(func.count()).select_from(blob_refs)).scalar_one())


CONFIG = ToolOutputConfig(compress_over_tokens=400, offload_over_tokens=1500, preview_tokens=120)


def test_large_output_is_offloaded_and_restored_byte_identical(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "agent")
    original = log_text(1500)
    event = _tool_result(session, "run_tests", content=original)
    assert event.text == original  # inline: under the size guard
    before = session.events()
    refs = _ref_count(engine)

    window = compress_tool_result_for_window(session, event, counter=EXACT, config=CONFIG)
    *preview, pointer = window.splitlines()
    match = POINTER.match(pointer)
    assert match is not None and match.group(1) == match.group(3)
    output_id = match.group(1)
    assert int(match.group(2).replace(",", "")) == EXACT.count(original)
    assert EXACT.count("\n".join(preview)) <= CONFIG.preview_tokens
    assert preview[0] == original.splitlines()[0]  # head of the log in the preview
    # The event holds the output: its id names the event, and nothing is written.
    assert output_id == f"out_{event.seq}_{event.hash[:16]}"
    assert _ref_count(engine) == refs

    # Same input, same text; still nothing written, nothing audited.
    assert compress_tool_result_for_window(session, event, counter=EXACT, config=CONFIG) == window
    assert _ref_count(engine) == refs
    with engine.db.read() as conn:
        assert not conn.execute(
            select(audit.c.event_id).where(audit.c.action == "tool_output_offload")
        ).all()

    restored = session.read_offloaded(output_id)
    assert restored.encode() == original.encode()
    # The log is untouched: same events, same hashes, chain still verifies.
    assert session.events() == before
    assert session.verify().ok

    # Paging: pages within max_tokens that join to exactly the original.
    pages, offset = [], 0
    while True:
        page = read_offloaded_page(session, output_id, offset=offset, max_tokens=300, counter=EXACT)
        assert EXACT.count(page.text) <= 300 and page.total_chars == len(original)
        pages.append(page.text)
        if page.next_offset is None:
            break
        assert page.text.endswith("\n")  # pages end at line ends where they can
        offset = page.next_offset
    assert len(pages) > 3 and "".join(pages) == original
    assert session.read_offloaded(output_id, offset=len(original)) == ""
    tail = session.read_offloaded(output_id, offset=100, max_tokens=50)
    assert original[100:].startswith(tail) and 0 < len(tail) < len(original) - 100
    # Any offset from the end on reads the empty page (the end), not an error.
    assert session.read_offloaded(output_id, offset=len(original) + 1) == ""
    with pytest.raises(InvalidInput):
        session.read_offloaded(output_id, max_tokens=0)

    # Once the session is deleted, its outputs are gone with its events.
    session.delete()
    with pytest.raises(SessionNotFound):
        session.read_offloaded(output_id)


def test_a_window_shows_tool_output_without_reading_the_session_again(
    quick_engine: ContextEngine,
) -> None:
    """A window build reads the session's row once (its head and state); showing its tool
    results offloaded behind a pointer reads no row of its own. Counted in the SQL that
    SQLite runs during the build."""
    engine = quick_engine
    session = engine.create_session("u1", "agent")
    original = log_text(3000)  # over offload_over_tokens (4,000 by default)
    event = _tool_result(session, "run_tests", content=original)
    row_reads: list[str] = []

    def trace(statement: str) -> None:
        if "sessions.state_version" in statement and statement.lstrip().startswith("SELECT"):
            row_reads.append(statement)

    def on_checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        dbapi_connection.set_trace_callback(trace)

    sqlalchemy_event.listen(engine.db.engine, "checkout", on_checkout)
    try:
        window = session.build_context(query="did the tests pass?", budget=8000)
    finally:
        sqlalchemy_event.remove(engine.db.engine, "checkout", on_checkout)
        engine.db.engine.dispose()  # no pooled connection keeps the trace
    shown = "\n".join(str(m.get("content")) for m in window.messages)
    pointers = re.findall(r"use read_offloaded\((out_[0-9a-f_]+)\)", shown)
    assert len(pointers) == 1 and original not in shown  # offloaded by the renderer
    assert session.read_offloaded(pointers[0]) == original  # (from the blob store)
    assert event.parts and isinstance(event.parts[0], BlobPart)
    assert len(row_reads) == 1, row_reads


def test_an_event_named_id_reads_only_that_events_output(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "agent")
    first = _tool_result(session, "run_tests", content=log_text(1500))
    second = _tool_result(session, "run_tests", content=log_text(1600))
    message = session.add_message("user", "thanks")
    assert session.read_offloaded(f"out_{first.seq}_{first.hash[:16]}") == first.text
    assert session.read_offloaded(f"out_{second.seq}_{second.hash[:16]}") == second.text
    for bad in (
        f"out_{first.seq}_{second.hash[:16]}",  # another event's hash: not this event's id
        f"out_{message.seq}_{message.hash[:16]}",  # not a tool result
        f"out_{second.seq + 10}_{second.hash[:16]}",  # no such event
        f"out_{first.seq}_{first.hash[:15]}",  # malformed
        "out_9999999999999999999_" + "0" * 16,  # past the largest seq
        "out_0_" + "0" * 16,
    ):
        with pytest.raises(BlobNotFound):
            session.read_offloaded(bad)


def test_medium_output_is_compressed_in_place_and_json_parts_use_the_json_strategies(
    engine: ContextEngine,
) -> None:
    session = engine.create_session("u1", "agent")
    data = search_results(15)
    event = _tool_result(session, "search_flights", data=data)
    refs = _ref_count(engine)
    text = compress_tool_result_for_window(session, event, counter=ESTIMATE, config=CONFIG)
    assert ESTIMATE.count(text) <= CONFIG.compress_over_tokens
    assert "[tool_output:" not in text
    parsed = json.loads(text)
    assert parsed["query"] == data["query"] and "results" in parsed
    assert _ref_count(engine) == refs  # nothing offloaded
    short = _tool_result(session, "search_flights", content="3 flights found")
    assert compress_tool_result_for_window(session, short, counter=EXACT, config=CONFIG) == (
        "3 flights found"
    )
    disabled = ToolOutputConfig(enabled=False)
    assert compress_tool_result_for_window(
        session, event, counter=EXACT, config=disabled
    ) == event_text(event)


@pytest.fixture
def small_inline(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, max_inline_bytes=2048) as eng:
        yield eng


def test_write_time_offloaded_blob_is_reused(small_inline: ContextEngine) -> None:
    engine = small_inline
    session = engine.create_session("u1", "agent")
    original = log_text(900)
    event = _tool_result(session, "build", content=original)
    (part,) = event.parts
    assert isinstance(part, BlobPart)  # the size guard moved it at write time
    refs = _ref_count(engine)
    window = compress_tool_result_for_window(session, event, counter=EXACT, config=CONFIG)
    match = POINTER.match(window.splitlines()[-1])
    assert match is not None and match.group(1) == offloaded_id(part.blob_id)
    assert _ref_count(engine) == refs  # no second blob
    assert session.read_offloaded(match.group(1)) == original
    # The full blob id the renderer shows for write-time offloads works too.
    assert session.read_offloaded(part.blob_id) == original
    again = offload(session, event, counter=EXACT, config=CONFIG)
    assert again.blob_id == part.blob_id and again.text == window
    assert compress_tool_result_for_window(session, event, counter=EXACT, config=CONFIG) == window


def test_json_and_mixed_outputs_restore_as_the_window_would_show_them(
    small_inline: ContextEngine,
) -> None:
    session = small_inline.create_session("u1", "agent")
    data = search_results(60)
    as_blob = _tool_result(session, "search", data=data)
    (part,) = as_blob.parts
    assert isinstance(part, BlobPart) and part.original_kind == "json"
    window = compress_tool_result_for_window(session, as_blob, counter=ESTIMATE, config=CONFIG)
    *preview, pointer = window.splitlines()
    match = POINTER.match(pointer)
    assert match is not None
    assert json.loads(session.read_offloaded(match.group(1))) == data
    assert json.loads("\n".join(preview))["query"] == data["query"]  # a JSON-shaped preview

    mixed = _tool_result(session, "search", content="60 results", data=search_results(5))
    assert [p.kind for p in mixed.parts] == ["text", "json"]  # both inline
    restored = offload(session, mixed, counter=ESTIMATE, config=CONFIG)
    assert session.read_offloaded(restored.id) == "60 results\n" + canonical_json(search_results(5))
    assert restored.blob_id is None  # inline parts: the event holds the output


def test_unknown_foreign_and_image_ids_are_not_found(engine: ContextEngine, png: bytes) -> None:
    mine = engine.create_session("u1", "agent")
    sibling = engine.create_session("u1", "agent")
    stranger = engine.get_session(engine.create_session("u2", "agent").id, "u2")
    event = _tool_result(mine, "run", content=log_text(1500))
    window = compress_tool_result_for_window(mine, event, counter=ESTIMATE, config=CONFIG)
    match = POINTER.match(window.splitlines()[-1])
    assert match is not None
    output_id = match.group(1)
    assert mine.read_offloaded(output_id)
    for other in (sibling, stranger):
        with pytest.raises(BlobNotFound) as caught:
            other.read_offloaded(output_id)
        assert isinstance(caught.value, NotFound) and caught.value.code == "blob_not_found"
    for bad in ("out_" + "0" * 24, "out_xyz", "", "../../etc/passwd", "f" * 64):
        with pytest.raises(BlobNotFound):
            mine.read_offloaded(bad)
    shot = _tool_result(mine, "screenshot", content="ok", images=[png])
    with pytest.raises(BlobNotFound):
        mine.read_offloaded(offloaded_id(shot.images[0].blob_id))
    with pytest.raises(InvalidInput):  # the event must belong to the session
        compress_tool_result_for_window(sibling, event, counter=ESTIMATE, config=CONFIG)
    user_event = mine.add_message("user", "hello")
    with pytest.raises(InvalidInput):
        compress_tool_result_for_window(mine, user_event, counter=ESTIMATE, config=CONFIG)
    assert user_event.type is EventType.USER_INPUT


# The tool an agent calls --------------------------------------------------------------------


def test_tool_definitions_are_valid_in_both_formats() -> None:
    openai_tool = read_offloaded_tool("openai")
    TypeAdapter(ChatCompletionFunctionToolParam).validate_python(openai_tool)
    assert openai_tool["type"] == "function"
    assert openai_tool["function"]["name"] == "read_offloaded"
    anthropic_tool = read_offloaded_tool("anthropic")
    assert set(anthropic_tool) == {"name", "description", "input_schema"}
    assert anthropic_tool["name"] == "read_offloaded"
    for schema in (openai_tool["function"]["parameters"], anthropic_tool["input_schema"]):
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = jsonschema.Draft202012Validator(schema)
        assert set(schema["properties"]) == {"id", "offset", "max_tokens"}
        assert validator.is_valid({"id": "out_" + "a" * 24, "offset": 10, "max_tokens": 500})
        assert not validator.is_valid({"offset": 1})
        assert not validator.is_valid({"id": "x", "offset": -1})
        assert not validator.is_valid({"id": "x", "extra": 1})
    with pytest.raises(InvalidInput):
        read_offloaded_tool("gemini")  # type: ignore[arg-type]


def test_handle_read_offloaded(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "agent")
    original = log_text(1500)
    event = _tool_result(session, "run", content=original)
    output_id = offload(session, event, counter=ESTIMATE, config=CONFIG).id

    assert handle_read_offloaded(session, {"id": output_id}, default_max_tokens=None) == original
    first = handle_read_offloaded(session, json.dumps({"id": output_id, "max_tokens": 200}))
    body, footer = first.rsplit("\n", 1)
    match = re.fullmatch(
        r"\[read_offloaded: characters 0-([0-9,]+) of ([0-9,]+); continue with offset=(\d+)\]",
        footer,
    )
    assert match is not None
    next_offset = int(match.group(3))
    assert body == original[:next_offset] and int(match.group(2).replace(",", "")) == len(original)
    rest = handle_read_offloaded(
        session, {"id": output_id, "offset": next_offset}, default_max_tokens=None
    )
    assert body + rest == original

    bad_arguments: list[Any] = [
        {},
        {"id": 5},
        {"id": output_id, "offset": -1},
        {"id": output_id, "offset": "10"},
        {"id": output_id, "max_tokens": 0},
        {"id": output_id, "page": 2},
        "{not json",
        "[1, 2]",
        ["id"],
    ]
    for arguments in bad_arguments:
        with pytest.raises(InvalidInput):
            handle_read_offloaded(session, arguments)
    with pytest.raises(BlobNotFound):
        handle_read_offloaded(session, {"id": "out_" + "1" * 24})


# Properties --------------------------------------------------------------------------------

_scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=300)
_json = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=25)
        | st.dictionaries(st.text(max_size=12), children, max_size=12)
    ),
    max_leaves=200,
)
_texts = st.text(max_size=4000) | st.lists(st.text(max_size=120), max_size=200).map("\n".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    content=_json | _texts | _json.map(lambda value: json.dumps(value, indent=1)),
    target=st.integers(20, 5000),
    exact=st.booleans(),
    name=st.sampled_from(["auto", "truncate_list", "shorten_json", "head_tail"]),
)
def test_any_content_any_target_fits_or_is_unchanged(
    content: Any, target: int, exact: bool, name: str
) -> None:
    counter = EXACT if exact else ESTIMATE
    compressor = ToolOutputCompressor()
    compressor.register("tool", name)
    original = (
        content
        if isinstance(content, str)
        else json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    )
    result = compressor.compress("tool", content, counter=counter, max_tokens=target)
    assert result.tokens == counter.count(result.text)
    if counter.count(original) <= target:
        assert result.strategy == "none"
        assert (
            json.loads(result.text) == content
            if not isinstance(content, str)
            else result.text == content
        )
    else:
        assert result.tokens <= target
        assert not result.strategy.endswith("+cut")  # built-ins hold the bound themselves
