"""JWT bearer tokens: HS256 with a shared secret, or RS256 with keys from a JWKS file.

A token names its user in ``sub`` (or a list in ``users``), its tenant in ``tenant``
(default tenant when absent) and its scopes in ``scope`` (space-separated, OAuth
style; ``read write`` when absent). ``exp`` is required; ``aud`` and ``iss`` are
checked when configured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jwt
from jwt import PyJWKSet

from agentctx.errors import ConfigError
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


def _principal(claims: dict[str, Any]) -> Principal | None:
    users_claim = claims.get("users")
    users: list[str] = []
    if isinstance(users_claim, list):
        users = [u for u in users_claim if isinstance(u, str) and u]
    sub = claims.get("sub")
    if not users and isinstance(sub, str) and sub:
        users = [sub]
    scope = claims.get("scope", "read write")
    scopes = tuple(s for s in str(scope).split() if s in SCOPES)
    tenant = claims.get("tenant") or DEFAULT_TENANT
    if not isinstance(tenant, str) or "/" in tenant or (not users and "admin" not in scopes):
        return None
    return Principal(
        subject=f"jwt:{sub or users[0]}",
        tenant=tenant,
        users=frozenset(users),
        scopes=frozenset(scopes),
    )
