"""``agentctx serve``: the REST API and the web inspector on one engine.

On the embedded default it needs nothing else; with ``--url postgresql://…`` any number
of replicas can serve one database. When no API key exists yet, it issues an admin key
and prints it in the inspector's address (the key goes after ``#``, which browsers
never send to a server), with the demo session's user and id under ``--demo`` so the
link opens that session. Otherwise it prints the command that issues a key.
"""

from __future__ import annotations

from urllib.parse import urlencode

import typer
from rich.markup import escape

from agentctx.cli._common import command_line, fail, load, out, safe_url
from agentctx.errors import AgentCtxError, MissingExtra
from agentctx.gc_freeze import freeze_long_lived

# The modules of the ``server`` extra, each with the package that installs it.
SERVER_MODULES = {
    "fastapi": "fastapi",
    "starlette": "fastapi",
    "uvicorn": "uvicorn",
    "prometheus_client": "prometheus-client",
    "jwt": "pyjwt",
}


def serve(  # noqa: PLR0917 - Typer options are parameters
    ctx: typer.Context,
    host: str | None = typer.Option(None, "--host", help="Default: server.host (127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", help="Default: server.port (8080)."),
    demo: bool = typer.Option(
        False, "--demo", help="Record the demo session first, so the inspector shows one."
    ),
    ui: bool = typer.Option(True, "--ui/--no-ui", help="Serve the web inspector at /ui."),
    bootstrap_key: bool = typer.Option(
        True,
        "--bootstrap-key/--no-bootstrap-key",
        help="Issue an admin key when none exists yet, and print it.",
    ),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn's log level."),
) -> None:
    """Serve the REST API (OpenAPI at /openapi.json) and the web inspector (/ui)."""
    try:
        import uvicorn  # noqa: PLC0415

        from agentctx.server.app import create_app  # noqa: PLC0415
        from agentctx.server.runner import uvicorn_config  # noqa: PLC0415
    except ModuleNotFoundError as exc:
        package = SERVER_MODULES.get((exc.name or "").partition(".")[0])
        if package is None:
            raise  # not a missing extra: a bug, shown as one
        fail(f"{MissingExtra('server', package)} [{MissingExtra.code}]")
    from agentctx.demo import DEMO_USER, run_demo  # noqa: PLC0415
    from agentctx.engine import ContextEngine  # noqa: PLC0415
    from agentctx.server.auth import ANY_USER, ApiKeyStore  # noqa: PLC0415

    settings = load(ctx)
    config = settings.server.model_copy(
        update={k: v for k, v in (("host", host), ("port", port), ("ui", ui)) if v is not None}
    )
    try:
        engine = ContextEngine(settings=settings)
    except AgentCtxError as exc:
        fail(f"{exc} [{exc.code}]")
    console = out()
    demo_session = None
    if demo:
        demo_session = run_demo(engine, user_id=DEMO_USER).id
        console.print(f"recorded the demo session {demo_session} for user {DEMO_USER}")
    keys = ApiKeyStore(engine.db)
    address = f"http://{config.host}:{config.port}"
    console.print(f"agentctx on {escape(safe_url(engine.db.url))}, serving {address}")
    if bootstrap_key and keys.empty():
        key, token = keys.create(["*"], ["read", "write", "admin"], label="bootstrap")
        console.print(f"no API keys yet: issued admin key {key.key_id} (shown only now):")
        console.print(token, markup=False, soft_wrap=True)
        if config.ui:
            # The admin key acts for any user: the link says which, and which session.
            fragment = {"key": token}
            if demo_session is not None:
                fragment |= {"user": DEMO_USER, "session": demo_session}
            link = f"{address}/ui#{urlencode(fragment)}"
            console.print(f"inspector: {link}", markup=False, soft_wrap=True)
    elif config.ui:
        view = "" if demo_session is None else f"#/sessions/{demo_session}"
        # A read-only key for the demo user opens its session without asking for a user.
        user = DEMO_USER if demo_session is not None else ANY_USER
        issue = command_line(
            ctx, "keys", "create", "--user", user, "--scope", "read", "--label", "inspector"
        )
        console.print(f"inspector: {address}/ui{view}", markup=False, soft_wrap=True)
        console.print(
            f"sign in with an API key; to issue one: {issue}", markup=False, soft_wrap=True
        )
    app = create_app(engine, config, close_engine=True)
    # Everything loaded so far (the app, the libraries, the demo's model) lives as long
    # as the process: out of the collector's sight, a full collection no longer walks
    # it, a pause that would land on whichever request allocated at the wrong moment.
    freeze_long_lived()
    # agentctx's access log (route templates, no query strings) replaces uvicorn's.
    uvicorn.Server(uvicorn_config(app, config.host, config.port, log_level=log_level)).run()
