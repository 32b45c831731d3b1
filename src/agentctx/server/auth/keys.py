"""API keys: issued once, stored hashed, scoped to users and a tenant, revocable.

A key reads ``actx_<key_id>_<secret>``. Only ``sha256(secret)`` is stored: the secret
is 32 random bytes, so a plain hash is as strong as a slow one and keeps every request
to one indexed read. The key id is public (it names the key in listings and audit
records); the secret is shown once, when the key is created.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict
from sqlalchemy import insert, select, update

from agentctx.errors import InvalidInput, NotFound
from agentctx.events import utcnow
from agentctx.ids import validate_user_id
from agentctx.storage.database import Database
from agentctx.storage.schema import api_keys

KEY_PREFIX = "actx_"
SCOPES = ("read", "write", "admin")
ANY_USER = "*"
DEFAULT_TENANT = "default"


class ApiKey(BaseModel):
    """An issued key, without its secret."""

    model_config = ConfigDict(frozen=True)

    key_id: str
    tenant: str
    users: tuple[str, ...]
    scopes: tuple[str, ...]
    label: str | None
    created_at: datetime
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        """Whether the key still authenticates."""
        return self.revoked_at is None


class KeyNotFound(NotFound):
    """No API key with this id."""

    code = "key_not_found"


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _split(token: str) -> tuple[str, str] | None:
    if not token.startswith(KEY_PREFIX):
        return None
    key_id, sep, secret = token[len(KEY_PREFIX) :].partition("_")
    if not sep or not key_id or not secret or len(key_id) > 32:
        return None
    return key_id, secret


class ApiKeyStore:
    """Creates, lists, revokes and checks API keys in the engine's database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def create(
        self,
        users: Sequence[str],
        scopes: Sequence[str] = ("read", "write"),
        *,
        tenant: str = DEFAULT_TENANT,
        label: str | None = None,
    ) -> tuple[ApiKey, str]:
        """Issue a key for ``users`` (``"*"``: any user of the tenant); returns the key
        and its token, which is not stored and cannot be shown again."""
        if isinstance(users, str):
            raise InvalidInput("users is a list of user ids, not one string")
        users = tuple(dict.fromkeys(u if u == ANY_USER else validate_user_id(u) for u in users))
        scopes = tuple(dict.fromkeys(scopes))
        unknown = [s for s in scopes if s not in SCOPES]
        if unknown:
            raise InvalidInput(f"unknown scope(s) {unknown}; scopes are {list(SCOPES)}")
        if not scopes:
            raise InvalidInput("a key needs at least one scope")
        if not users and "admin" not in scopes:
            raise InvalidInput("a key needs at least one user (or '*', or the admin scope)")
        if not tenant or "/" in tenant:
            raise InvalidInput("a tenant is a non-empty name without '/'")
        key_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        key = ApiKey(
            key_id=key_id,
            tenant=tenant,
            users=users,
            scopes=scopes,
            label=label,
            created_at=utcnow(),
            revoked_at=None,
        )
        with self._db.write() as conn:
            conn.execute(
                insert(api_keys).values(
                    key_id=key_id,
                    secret_hash=_hash(secret),
                    tenant=tenant,
                    users=list(users),
                    scopes=list(scopes),
                    label=label,
                    created_at=key.created_at,
                    revoked_at=None,
                )
            )
        return key, f"{KEY_PREFIX}{key_id}_{secret}"

    def list(self, *, include_revoked: bool = False) -> list[ApiKey]:
        """Every key, oldest first."""
        query = select(api_keys).order_by(api_keys.c.created_at, api_keys.c.key_id)
        if not include_revoked:
            query = query.where(api_keys.c.revoked_at.is_(None))
        with self._db.read() as conn:
            return [_key(row) for row in conn.execute(query).mappings()]

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key (idempotent); it stops authenticating at once, on every replica."""
        with self._db.write() as conn:
            conn.execute(
                update(api_keys)
                .where(api_keys.c.key_id == key_id, api_keys.c.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
            row = conn.execute(select(api_keys).where(api_keys.c.key_id == key_id)).mappings()
            found = row.first()
        if found is None:
            raise KeyNotFound(f"no API key {key_id!r}")
        return _key(found)

    def authenticate(self, token: str) -> ApiKey | None:
        """The active key ``token`` names, or ``None`` (malformed, unknown, wrong secret,
        revoked: all alike, compared in constant time)."""
        parts = _split(token)
        if parts is None:
            return None
        key_id, secret = parts
        with self._db.read() as conn:
            row = (
                conn.execute(select(api_keys).where(api_keys.c.key_id == key_id)).mappings().first()
            )
        if row is None or not hmac.compare_digest(row["secret_hash"], _hash(secret)):
            return None
        key = _key(row)
        return key if key.active else None

    def empty(self) -> bool:
        """Whether no key was ever issued."""
        with self._db.read() as conn:
            return conn.execute(select(api_keys.c.key_id).limit(1)).first() is None


def _key(row: object) -> ApiKey:
    data = dict(row)  # type: ignore[call-overload]
    data.pop("secret_hash", None)
    return ApiKey.model_validate(data)
