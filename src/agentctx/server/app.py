"""``create_app``: the FastAPI application serving one engine.

Every replica is stateless: sessions, events, keys and audit live in the database, so
any number of replicas can serve one PostgreSQL behind a load balancer. Sync routes run
in the server's thread pool, where the engine's blocking calls belong.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from prometheus_client import CollectorRegistry

from agentctx import __version__
from agentctx.engine import ContextEngine
from agentctx.server.auth import ApiKeyStore, Authenticator
from agentctx.server.auth.jwt import JwtVerifier
from agentctx.server.config import ServerConfig
from agentctx.server.deps import single_valued_query
from agentctx.server.errors import install_error_handlers
from agentctx.server.middleware import (
    BodyLimit,
    CatchErrors,
    Metrics,
    Observe,
    silence_raw_access_log,
)
from agentctx.server.openapi import state_input_rules
from agentctx.server.routes import (
    admin,
    blobs,
    context,
    events,
    health,
    hitl,
    memory,
    research,
    sessions,
)


def build_authenticator(engine: ContextEngine, config: ServerConfig) -> Authenticator:
    """API keys from the engine's database, plus JWTs when a secret or JWKS is set."""
    verifier = None
    if config.jwt_secret is not None or config.jwt_jwks_file is not None:
        verifier = JwtVerifier(
            secret=config.jwt_secret,
            jwks_file=config.jwt_jwks_file,
            audience=config.jwt_audience,
            issuer=config.jwt_issuer,
        )
    return Authenticator(ApiKeyStore(engine.db), verifier)


def create_app(
    engine: ContextEngine,
    config: ServerConfig | None = None,
    *,
    close_engine: bool = False,
) -> FastAPI:
    """The ASGI app serving ``engine``. ``close_engine``: close it when the app stops."""
    config = config or engine.settings.server

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if close_engine:
                engine.close()

    app = FastAPI(
        title="agentctx",
        version=__version__,
        summary="A context engine for LLM agents: event log, context windows, memory.",
        lifespan=lifespan,
        dependencies=[Depends(single_valued_query)],
    )
    app.state.engine = engine
    app.state.server_config = config
    app.state.authenticator = build_authenticator(engine, config)
    app.state.metrics = Metrics(CollectorRegistry())
    install_error_handlers(app)
    state_input_rules(
        app,
        # Named in the public document: never a tokenizer file's path.
        [
            n
            for n in {*config.tokenizers, engine.settings.context.tokenizer}
            if not n.startswith("hf:")
        ],
    )
    for module in (health, sessions, events, context, blobs, memory, hitl, research, admin):
        app.include_router(module.router)
    app.include_router(sessions.me_router)
    if config.ui:
        from agentctx.server.ui import mount_inspector  # noqa: PLC0415

        mount_inspector(app)
    # The last added is outermost: Observe times and audits everything, a refused
    # oversized body included; CatchErrors, innermost, turns anything unexpected into
    # a JSON 500 that Observe then records like any answer.
    app.add_middleware(CatchErrors)
    silence_raw_access_log()  # Observe logs each request in a safe form instead
    app.add_middleware(BodyLimit, max_bytes=config.max_body_bytes)
    app.add_middleware(Observe, metrics=app.state.metrics, audit=engine.audit)
    return app
