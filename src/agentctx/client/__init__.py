"""The Python client of an agentctx server: ``RemoteEngine`` has ``ContextEngine``'s API.

Needs the ``client`` extra (``pip install "agentctx[client]"``, for httpx).
"""

from agentctx.client.engine import RemoteEngine
from agentctx.client.errors import (
    BodyTooLarge,
    Forbidden,
    KeyNotFound,
    PreconditionRequired,
    RemoteError,
    RequestInvalid,
    ServerError,
    ServerUnavailable,
    Unauthenticated,
    UserNotFound,
)
from agentctx.client.memory import RemoteMemory
from agentctx.client.session import RemoteSession
from agentctx.client.transport import Transport
from agentctx.client.turns import RemoteTurn

__all__ = [
    "BodyTooLarge",
    "Forbidden",
    "KeyNotFound",
    "PreconditionRequired",
    "RemoteEngine",
    "RemoteError",
    "RemoteMemory",
    "RemoteSession",
    "RemoteTurn",
    "RequestInvalid",
    "ServerError",
    "ServerUnavailable",
    "Transport",
    "Unauthenticated",
    "UserNotFound",
]
