"""How ``agentctx serve`` (and the tests' live server) run the app under uvicorn.

uvicorn's own access log writes each request's raw path and query string (ids, and
searches carrying a user's text); it is switched off, and agentctx's access log
(``agentctx.server.access``: method, route template, status, duration) takes its place,
on uvicorn's console handler.
"""

from __future__ import annotations

import copy
from typing import Any

import uvicorn
from uvicorn.config import LOGGING_CONFIG


def log_config(log_level: str = "info") -> dict[str, Any]:
    """uvicorn's logging configuration plus agentctx's server loggers on its console."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["agentctx.server"] = {
        "handlers": ["default"],
        "level": log_level.upper(),
        "propagate": False,
    }
    return config


def uvicorn_config(app: Any, host: str, port: int, *, log_level: str = "info") -> uvicorn.Config:
    """A uvicorn configuration serving ``app`` without uvicorn's access log."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        log_config=log_config(log_level),
        access_log=False,
        lifespan="on",
    )
