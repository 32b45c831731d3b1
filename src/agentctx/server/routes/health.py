"""Probes and metrics: ``/healthz`` (the process is up), ``/readyz`` (the database
answers), ``/metrics`` (Prometheus text format). No authentication: they reveal nothing
about users."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from agentctx.server.deps import Engine
from agentctx.server.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
def healthz() -> Health:
    """The process is serving."""
    return Health(status="ok")


@router.get("/readyz", response_model=Health, responses={503: {"model": Health}})
def readyz(engine: Engine) -> Response:
    """The database answers a query."""
    try:
        engine.ping()
    except Exception as exc:  # any failure means not ready; the body says which
        body = Health(status="unavailable", detail=type(exc).__name__)
        return Response(body.model_dump_json(), status_code=503, media_type="application/json")
    return Response(Health(status="ok").model_dump_json(), media_type="application/json")


@router.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
def metrics(request: Request) -> Response:
    """Request counts and latencies per route, in Prometheus' text format."""
    registry = request.app.state.metrics.registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
