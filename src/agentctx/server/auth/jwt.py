"""JWT bearer tokens: HS256 with a shared secret, or RS256 with keys from a JWKS file.

A token names its user in ``sub`` (or a list in ``users``), its tenant in ``tenant``
(default tenant when absent) and its scopes in ``scope`` (space-separated, OAuth
style; ``read write`` when absent). ``exp`` is required; ``aud`` and ``iss`` are
checked when configured.

Claims are type-checked, and a token with any claim of the wrong type or value is
refused whole: ``exp``/``nbf``/``iat`` are numbers (not numeric strings), ``sub`` and
``users`` are user ids (never ``*``, which only an API key may hold, and never with the
tenant separator ``/``), ``scope`` names known scopes only, ``tenant`` is a name
without ``/``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TypeGuard

import jwt
from jwt import PyJWKSet

from agentctx.errors import ConfigError
from agentctx.ids import is_valid_user_id
from agentctx.server.auth.keys import DEFAULT_TENANT, SCOPES
from agentctx.server.auth.principal import Principal


class JwtVerifier:
    """Checks bearer JWTs and turns their claims into a :class:`Principal`."""

    def __init__(
        self,
        *,
        secret: str | None = None,
        jwks_file: Path | None = None,
        audience: str | None = None,
        issuer: str | None = None,
        leeway_s: float = 30.0,
    ) -> None:
        if secret is None and jwks_file is None:
            raise ConfigError("JWT needs a secret (HS256) or a JWKS file (RS256)")
        self._secret = secret
        self._jwks: PyJWKSet | None = None
        if jwks_file is not None:
            try:
                self._jwks = PyJWKSet.from_dict(json.loads(Path(jwks_file).read_text()))
            except (OSError, ValueError, jwt.PyJWTError) as exc:
                raise ConfigError(f"cannot read the JWKS file {jwks_file}: {exc}") from exc
        self._audience = audience
        self._issuer = issuer
        self._leeway = leeway_s

    def verify(self, token: str) -> Principal | None:
        """The principal of a valid token, or ``None`` for any invalid one."""
        try:
            header = jwt.get_unverified_header(token)
            key, algorithm = self._key_for(header)
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self._audience,
                issuer=self._issuer,
                leeway=self._leeway,
                options={"require": ["exp"], "verify_aud": self._audience is not None},
            )
        except (jwt.PyJWTError, LookupError, ValueError):
            return None
        return _principal(claims)

    def _key_for(self, header: dict[str, Any]) -> tuple[Any, str]:
        algorithm = header.get("alg")
        if algorithm == "HS256" and self._secret is not None:
            return self._secret, "HS256"
        if algorithm == "RS256" and self._jwks is not None:
            kid = header.get("kid")
            keys = [k for k in self._jwks.keys if kid is None or k.key_id == kid]
            if not keys:
                raise LookupError(f"no key {kid!r} in the JWKS")
            return keys[0].key, "RS256"
        raise ValueError(f"algorithm {algorithm!r} is not accepted")


_TIME_CLAIMS = ("exp", "nbf", "iat")
_MAX_TENANT = 64


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _principal(claims: dict[str, Any]) -> Principal | None:
    """The principal the claims name, or ``None`` when any claim has the wrong type or
    value: a token is taken whole or not at all, never by its usable parts."""
    if not all(_is_number(claims[name]) for name in _TIME_CLAIMS if name in claims):
        return None
    sub = claims.get("sub")
    if sub is not None and not is_valid_user_id(sub):
        return None  # "*", "a/b", "", not a string: never "any user" nor another tenant
    users_claim = claims.get("users")
    if users_claim is not None:
        if not isinstance(users_claim, list) or not users_claim:
            return None
        if not all(is_valid_user_id(u) for u in users_claim):
            return None
        users = [str(u) for u in users_claim]
    else:
        users = [sub] if isinstance(sub, str) else []
    scope = claims.get("scope", "read write")
    if not isinstance(scope, str):
        return None
    scopes = scope.split()
    if not scopes or any(s not in SCOPES for s in scopes):
        return None
    tenant = claims.get("tenant", DEFAULT_TENANT)
    if not _valid_tenant(tenant):
        return None
    if not users and "admin" not in scopes:
        return None
    return Principal(
        subject=f"jwt:{sub if isinstance(sub, str) else users[0] if users else 'admin'}",
        tenant=tenant,
        users=frozenset(users),
        scopes=frozenset(scopes),
    )


def _valid_tenant(tenant: object) -> TypeGuard[str]:
    return (
        isinstance(tenant, str)
        and 0 < len(tenant) <= _MAX_TENANT
        and tenant.isprintable()
        and not tenant.isspace()
        and "/" not in tenant
    )
