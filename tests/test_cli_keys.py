"""``agentctx keys …``: issue, list and revoke API keys against a real home folder."""

from __future__ import annotations

import re
from pathlib import Path

from agentctx import ContextEngine
from agentctx.server.auth import ApiKeyStore
from test_cli_blobs import cli


def test_create_list_revoke(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code, out, _ = cli(home, "keys", "create", "--user", "u1", "--user", "u2", "--label", "bot")
    assert code == 0
    token = re.search(r"actx_\S+", out)
    assert token is not None
    key_id = token.group(0).split("_")[1]
    with ContextEngine(home=home) as engine:
        key = ApiKeyStore(engine.db).authenticate(token.group(0))
        assert key is not None and key.users == ("u1", "u2") and key.scopes == ("read", "write")
    code, out, _ = cli(home, "keys", "list")
    assert code == 0 and key_id in out and "bot" in out
    code, out, _ = cli(home, "keys", "revoke", key_id)
    assert code == 0 and f"revoked {key_id}" in out
    assert key_id not in cli(home, "keys", "list")[1]
    assert key_id in cli(home, "keys", "list", "--all")[1]
    with ContextEngine(home=home) as engine:
        assert ApiKeyStore(engine.db).authenticate(token.group(0)) is None


def test_bad_scope_and_unknown_key_are_one_line_errors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code, _, err = cli(home, "keys", "create", "--user", "u1", "--scope", "root")
    assert code == 2 and "unknown scope" in err and "Traceback" not in err
    code, _, err = cli(home, "keys", "revoke", "nope")
    assert code == 2 and "no API key" in err
