"""The agentctx server: the engine's API over HTTP (FastAPI), with per-user
authorization, an access audit, Prometheus metrics and the web inspector.

``agentctx serve`` runs it; ``agentctx.server.app.create_app(engine)`` builds the ASGI
app for any server. This package imports FastAPI only in its ``app`` and route modules,
so ``agentctx.server.config`` stays importable without the ``server`` extra.
"""
