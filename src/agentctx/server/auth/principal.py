"""Who is calling: the users a caller may act for, in which tenant, with which scopes.

Tenants partition user ids: user ``u1`` of tenant ``acme`` is stored as ``acme/u1``,
so two tenants' ``u1`` never meet. The default tenant stores ids unchanged, which is
what the embedded engine sees.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentctx.errors import AgentCtxError, InvalidInput, NotFound
from agentctx.ids import validate_user_id
from agentctx.server.auth.keys import ANY_USER, DEFAULT_TENANT


class UserNotFound(NotFound):
    """The caller may not act for this user; it looks exactly like an unknown one."""

    code = "user_not_found"


class UserRequired(InvalidInput):
    """The caller acts for several users and the request did not say which (with the
    ``user_id`` query parameter, which the error names as its ``field``)."""

    code = "user_required"
    field = "user_id"


class Forbidden(AgentCtxError):
    """The caller is authenticated but lacks the scope this route needs."""

    code = "forbidden"


class Unauthenticated(AgentCtxError):
    """No valid API key or bearer token."""

    code = "unauthenticated"


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller."""

    subject: str
    tenant: str
    users: frozenset[str]
    scopes: frozenset[str]

    @property
    def is_admin(self) -> bool:
        """Admins act for any user of their tenant and reach the admin routes."""
        return "admin" in self.scopes

    def require(self, scope: str) -> None:
        """Raise ``Forbidden`` unless the caller has ``scope`` (admin implies all)."""
        if scope not in self.scopes and not self.is_admin:
            raise Forbidden(f"this route needs the {scope!r} scope")

    def may_act_for(self, user_id: str) -> bool:
        """Whether the caller may reach ``user_id``'s data (an external id)."""
        return self.is_admin or ANY_USER in self.users or user_id in self.users

    def user(self, user_id: str | None) -> str:
        """The stored id of the user a request acts for.

        ``None`` picks the caller's only user; a user the caller may not act for raises
        ``UserNotFound``, exactly as an unknown id would; an id that is not a user id
        (``/``, ``*``, control characters, too long) raises ``InvalidInput``.
        """
        if user_id is None:
            named = [u for u in self.users if u != ANY_USER]
            if len(named) != 1 or ANY_USER in self.users:
                raise UserRequired(
                    "the user_id query parameter is required (e.g. ?user_id=u1): the "
                    "caller acts for several users (an admin key or a key for '*': any user)"
                )
            user_id = named[0]
        validate_user_id(user_id)
        if not self.may_act_for(user_id):
            raise UserNotFound(f"no user {user_id!r}")
        return self.stored(user_id)

    def stored(self, user_id: str) -> str:
        """The id under which ``user_id`` of this tenant is stored."""
        return user_id if self.tenant == DEFAULT_TENANT else f"{self.tenant}/{user_id}"

    def external(self, stored_user_id: str) -> str:
        """The id the caller knows for a stored user id."""
        prefix = f"{self.tenant}/"
        if self.tenant != DEFAULT_TENANT and stored_user_id.startswith(prefix):
            return stored_user_id[len(prefix) :]
        return stored_user_id

    def owns_stored(self, stored_user_id: str) -> bool:
        """Whether a stored user id belongs to this tenant and the caller may reach it."""
        if self.tenant == DEFAULT_TENANT:
            if "/" in stored_user_id:
                return False
        elif not stored_user_id.startswith(f"{self.tenant}/"):
            return False
        return self.may_act_for(self.external(stored_user_id))
