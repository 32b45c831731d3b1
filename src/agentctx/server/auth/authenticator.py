"""Turns the credentials of a request into a :class:`Principal`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentctx.server.auth.keys import KEY_PREFIX, ApiKeyStore
from agentctx.server.auth.principal import Principal, Unauthenticated

if TYPE_CHECKING:  # PyJWT comes with the ``server`` extra; the key store needs only the core
    from agentctx.server.auth.jwt import JwtVerifier


class Authenticator:
    """Accepts ``Authorization: Bearer <API key or JWT>`` or ``X-API-Key: <API key>``."""

    def __init__(self, keys: ApiKeyStore, jwt: JwtVerifier | None = None) -> None:
        self.keys = keys
        self.jwt = jwt

    def authenticate(self, authorization: str | None, api_key: str | None) -> Principal:
        """The caller, or ``Unauthenticated`` (the message never says which part failed)."""
        token = api_key
        if token is None and authorization is not None:
            scheme, _, value = authorization.partition(" ")
            if scheme.lower() == "bearer":
                token = value.strip()
        if not token:
            raise Unauthenticated("an API key or bearer token is required")
        if token.startswith(KEY_PREFIX):
            key = self.keys.authenticate(token)
            if key is not None:
                return Principal(
                    subject=f"key:{key.key_id}",
                    tenant=key.tenant,
                    users=frozenset(key.users),
                    scopes=frozenset(key.scopes),
                )
        elif self.jwt is not None:
            principal = self.jwt.verify(token)
            if principal is not None:
                return principal
        raise Unauthenticated("the API key or bearer token is not valid")
