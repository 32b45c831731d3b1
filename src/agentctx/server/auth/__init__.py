"""Authentication and authorization of server requests: API keys and JWT bearer tokens."""

from agentctx.server.auth.authenticator import Authenticator
from agentctx.server.auth.keys import ANY_USER, DEFAULT_TENANT, SCOPES, ApiKey, ApiKeyStore
from agentctx.server.auth.principal import (
    Forbidden,
    Principal,
    Unauthenticated,
    UserNotFound,
    UserRequired,
)

__all__ = [
    "ANY_USER",
    "DEFAULT_TENANT",
    "SCOPES",
    "ApiKey",
    "ApiKeyStore",
    "Authenticator",
    "Forbidden",
    "Principal",
    "Unauthenticated",
    "UserNotFound",
    "UserRequired",
]
