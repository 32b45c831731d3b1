"""Property-based testing of the REST API from its own OpenAPI document, with every
schemathesis check (server errors, status codes and response bodies as documented,
content types and headers, valid data accepted, invalid data refused, missing
authentication refused, unsupported methods 405…), on positive and negative data, on
SQLite and on PostgreSQL, against a real HTTP server.

Two tests per backend: every operation on its own (path ids of valid cases replaced by
ids the caller owns, so bodies are exercised beyond the 404 of a random id), and
stateful sequences that follow the document's links (create a session, then use its
id). Derandomized, so a run is reproducible; bounded to stay within minutes on two
cores.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.core.parameters import ParameterLocation
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.specs.openapi.checks import positive_data_acceptance

from agentctx import ContextEngine
from conftest import BACKENDS, make_png, new_pg_database
from search.agent_web import GOOD, local_web, tavily_config
from search.servers import tavily_server
from server.live import serve

USER = "u1"
GONE = "u-gone"  # the user the erasure route may erase

# Rules a JSON Schema cannot state, so a request valid by the schema may still be refused
# (422) for breaking one of them. Each is named by its error code and message; any other
# refusal of schema-valid data fails the test, as schemathesis's own check would.
UNSTATABLE_RULES: tuple[tuple[str, str, str], ...] = (
    (
        "invalid_event",
        r"not a readable image|neither bytes nor valid base64|format not supported",
        "image bytes must be a PNG, JPEG, WebP or GIF",
    ),
    ("invalid_event", r"unknown call_id", "a tool result answers a tool call already recorded"),
    (
        "invalid_event",
        r"needs a call_id|needs a tool name",
        "tool calls and results carry a call id, tool calls a name",
    ),
    ("config_error", r"must add up to 1\.0", "budget_split shares add up to 1"),
    ("invalid_input", r"^invalid cursor$", "a cursor is one the server handed out"),
    (
        "invalid_input",
        r"procedural memory",
        "a procedural memory's data holds its tool statistics (scenario, tools, runs)",
    ),
)


def _refused_by_an_unstatable_rule(response: Any) -> bool:
    if response.status_code != 422:
        return False
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return False
    return any(
        error.get("code") == code and re.search(pattern, str(error.get("message", "")))
        for code, pattern, _why in UNSTATABLE_RULES
    )


def valid_data_is_accepted(ctx: Any, response: Any, case: Any) -> bool | None:
    """schemathesis's ``positive_data_acceptance``, except for :data:`UNSTATABLE_RULES`."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        if _refused_by_an_unstatable_rule(response):
            return None
        raise


CHECKS = {
    "excluded_checks": [positive_data_acceptance],
    "additional_checks": [valid_data_is_accepted],
}

SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)


def openapi_schema(url: str) -> Any:
    """The server's OpenAPI schema, with the statuses its checks must also expect."""
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    # A compare-and-set write without its If-Match header is 428 Precondition
    # Required (RFC 6585), which this check does not expect by default.
    missing_header = schema.config.checks.missing_required_header
    missing_header.expected_statuses = [*missing_header.expected_statuses, "428"]
    # A well-formed If-Match (or expected_last_seq) naming a version that is not the
    # current one is 412 Precondition Failed (RFC 9110), however valid the request.
    accepted = schema.config.checks.positive_data_acceptance
    accepted.expected_statuses = [*accepted.expected_statuses, "412"]
    return schema


@contextmanager
def running_api(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """A live server on the requested backend, its ids, a key and its OpenAPI schema."""
    home: Path = tmp_path_factory.mktemp(f"fuzz-{request.param}")
    url = (
        f"sqlite:///{home / 'agentctx.db'}"
        if request.param == "sqlite"
        else new_pg_database(request.getfixturevalue("pg_server"))
    )
    # Research reaches a local search provider and local pages, never the internet.
    with (
        local_web([GOOD, GOOD]) as web,
        tavily_server(pages=web.corpus) as provider,
        ContextEngine(
            url=url, home=home, search=tavily_config(provider.url, provider.api_key or "")
        ) as engine,
        serve(engine) as live,
    ):
        session = engine.create_session(USER, "agent")
        with session.turn() as turn:
            turn.add_message("user", "hello")
            call = turn.add_tool_call("screenshot", {})
            result = turn.add_tool_result(call.call_id, content="x" * 200_000, images=[make_png()])
        image = result.images[0]
        offloaded = next(p for p in result.parts if p.kind == "blob")
        memory = engine.memory.add(USER, "u1 likes green tea")
        ids = {
            "session_id": session.id,
            "turn_id": session.begin_turn().turn_id,
            "image_id": image.image_id,
            "blob_id": image.blob_id,
            "memory_id": memory.memory_id,
            "offloaded_id": offloaded.blob_id,
            "user_id": USER,
            "sub_session_id": session.id,
            "key_id": "0000000000000000",
        }
        token = live.key(USER, scopes=("read", "write", "admin"))
        schema = openapi_schema(live.url)
        yield {"schema": schema, "url": live.url, "token": token, "ids": ids, "live": live}


@pytest.fixture(scope="module", params=BACKENDS)
def api(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    with running_api(request, tmp_path_factory) as running:
        yield running


@pytest.fixture(params=BACKENDS)
def fresh_api(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """A server of its own: the stateful sequences follow links from what the server
    answers, so on a server another test filled first their (derandomized) data
    generation differs between a failing run and its replay."""
    with running_api(request, tmp_path_factory) as running:
        yield running


@pytest.fixture(scope="module")
def api_schema(api: dict[str, Any]) -> Any:
    return api["schema"]


# The appends' negative cases are left out: schemathesis (4.32.5) mutates the event
# body schema into one no array satisfies ("Cannot generate an array with 1 demanded
# elements") and fails the test while generating, on some runs and not others (its
# strategy cache is process-wide). Their positive cases run below; invalid events are
# refused with 4xx by the input-boundary and REST tests (tests/test_input_boundary.py,
# tests/server/test_routes.py).
APPENDS = {"path_regex": r"^/v1/sessions/\{session_id\}/events(/batch)?$", "method": "POST"}
lazy = schemathesis.pytest.from_fixture("api_schema").exclude(**APPENDS)


@pytest.fixture(scope="module")
def positive_schema(api: dict[str, Any]) -> Any:
    schema = openapi_schema(api["url"])
    schema.config.generation.update(modes=[GenerationMode.POSITIVE])
    return schema


lazy_appends = schemathesis.pytest.from_fixture("positive_schema").include(**APPENDS)


def _throwaway(api: dict[str, Any], method: str, path: str) -> dict[str, str]:
    """Ids a destructive call may remove without taking the other cases' data along."""
    live = api["live"]
    engine: ContextEngine = live.engine
    if method == "DELETE" and path == "/v1/sessions/{session_id}":
        return {"session_id": engine.create_session(USER, "agent").id}
    if method == "DELETE" and path == "/v1/memories/{memory_id}":
        return {"memory_id": engine.memory.add(USER, "u1 plays the cello").memory_id}
    if method == "DELETE" and path == "/v1/admin/users/{user_id}":
        engine.create_session(GONE, "agent")
        return {"user_id": GONE}
    if method == "DELETE" and path == "/v1/admin/keys/{key_id}":
        return {"key_id": live.keys.create([GONE])[0].key_id}
    return {}


@lazy.parametrize()
@SETTINGS
def test_every_operation_passes_every_check(case: Any, api: dict[str, Any]) -> None:
    _call_and_check(case, api)


def _call_and_check(case: Any, api: dict[str, Any]) -> None:
    meta = case.meta
    if case.path_parameters and not (meta and meta.is_negative_at(ParameterLocation.PATH)):
        owned = {**api["ids"], **_throwaway(api, case.method.upper(), case.path)}
        case.path_parameters = {k: owned.get(k, v) for k, v in case.path_parameters.items()}
    case.call_and_validate(
        base_url=api["url"],
        headers={"Authorization": f"Bearer {api['token']}"},
        timeout=60,
        **CHECKS,
    )


@lazy_appends.parametrize()
@SETTINGS
def test_appends_pass_every_check_on_valid_data(case: Any, api: dict[str, Any]) -> None:
    _call_and_check(case, api)


def test_stateful_sequences_pass_every_check(fresh_api: dict[str, Any]) -> None:
    api = fresh_api
    schema = api["schema"]
    headers = {"Authorization": f"Bearer {api['token']}"}

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": api["url"], "headers": headers, "timeout": 60}

        def validate_response(
            self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any
        ) -> None:
            case.validate_response(
                response,
                excluded_checks=CHECKS["excluded_checks"],
                additional_checks=[*(additional_checks or ()), *CHECKS["additional_checks"]],
                transport_kwargs=kwargs or None,
                recorder=self.recorder,
            )

    Workflow.run(
        settings=settings(
            max_examples=40,
            stateful_step_count=6,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
    )
