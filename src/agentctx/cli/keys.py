"""``agentctx keys …``: issue, list and revoke the server's API keys.

A key's token is printed once, when it is created; only its hash is stored.
"""

from __future__ import annotations

import typer
from rich.markup import escape

from agentctx.cli._common import Column, FitTable, expected_errors, open_engine, out, short_ts
from agentctx.server.auth import DEFAULT_TENANT, SCOPES, ApiKeyStore

keys_app = typer.Typer(help="Issue, list and revoke API keys of the server.", no_args_is_help=True)

KEY_COLUMNS = (
    Column("key", 16, 0),
    Column("tenant", 10, 2),
    Column("users", 20, 1),
    Column("scopes", 17, 1),
    Column("label", 16, 3),
    Column("created", 19, 2),
    Column("revoked", 19, 2),
)


@keys_app.command("create")
def create(
    ctx: typer.Context,
    user: list[str] = typer.Option(
        [], "--user", "-u", help="A user the key acts for (repeat it; '*' for any user)."
    ),
    scope: list[str] = typer.Option(
        ["read", "write"], "--scope", "-s", help=f"Scopes: {', '.join(SCOPES)} (repeat it)."
    ),
    tenant: str = typer.Option(DEFAULT_TENANT, "--tenant", help="The tenant of the key."),
    label: str | None = typer.Option(None, "--label", help="A note saying what it is for."),
) -> None:
    """Issue a key and print its token (shown this once)."""
    with open_engine(ctx) as engine, expected_errors():
        key, token = ApiKeyStore(engine.db).create(user, scope, tenant=tenant, label=label)
    console = out()
    console.print(  # plain text: the scopes' brackets are not markup
        f"key {key.key_id} for {', '.join(key.users) or '(admin)'} "
        f"[{', '.join(key.scopes)}], tenant {key.tenant}",
        markup=False,
    )
    console.print(token, markup=False, soft_wrap=True)


@keys_app.command("list")
def list_keys(
    ctx: typer.Context,
    all_keys: bool = typer.Option(False, "--all", help="Include revoked keys."),
) -> None:
    """The issued keys (never their tokens)."""
    with open_engine(ctx) as engine:
        keys = ApiKeyStore(engine.db).list(include_revoked=all_keys)
    console = out()
    table = FitTable(f"{len(keys)} key(s)", KEY_COLUMNS, console.width)
    for key in keys:
        table.add_row(
            {
                "key": key.key_id,
                "tenant": escape(key.tenant),
                "users": escape(", ".join(key.users)),
                "scopes": ", ".join(key.scopes),
                "label": escape(key.label or ""),
                "created": short_ts(key.created_at),
                "revoked": short_ts(key.revoked_at),
            },
            style="dim" if not key.active else None,
        )
    console.print(table.table)


@keys_app.command("revoke")
def revoke(
    ctx: typer.Context, key_id: str = typer.Argument(..., metavar="KEY_ID", help="The key id.")
) -> None:
    """Revoke a key: it stops authenticating at once, on every replica."""
    with open_engine(ctx) as engine, expected_errors():
        key = ApiKeyStore(engine.db).revoke(key_id)
    out().print(f"revoked {key.key_id} at {short_ts(key.revoked_at)}")
