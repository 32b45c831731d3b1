"""Authentication: API keys (hashed, revocable) and JWT bearer tokens (HS256, RS256+JWKS)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from sqlalchemy import select

from agentctx import ContextEngine
from agentctx.errors import InvalidInput
from agentctx.server.auth import ApiKeyStore
from agentctx.server.config import ServerConfig
from agentctx.storage.schema import api_keys
from server.live import Live, serve

SECRET = "test-secret-with-enough-entropy-0123456789"


@pytest.fixture
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def jwks_file(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> Path:
    public = json.loads(RSAAlgorithm.to_jwk(rsa_key.public_key()))
    public.update({"kid": "k1", "use": "sig", "alg": "RS256"})
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [public]}))
    return path


@pytest.fixture
def live(tmp_path: Path, jwks_file: Path) -> Iterator[Live]:
    config = ServerConfig(jwt_secret=SECRET, jwt_jwks_file=jwks_file, jwt_audience="agentctx")
    with ContextEngine(home=tmp_path / "home") as engine, serve(engine, config) as running:
        yield running


def _get(live: Live, token: str, path: str = "/v1/sessions") -> httpx.Response:
    return httpx.get(f"{live.url}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _claims(**extra: object) -> dict[str, object]:
    return {"sub": "u1", "aud": "agentctx", "exp": int(time.time()) + 300, **extra}


def test_keys_are_stored_hashed_and_revocation_is_immediate(live: Live) -> None:
    key, token = live.keys.create(["u1"], label="ci")
    with live.engine.db.read() as conn:
        row = conn.execute(select(api_keys).where(api_keys.c.key_id == key.key_id)).mappings().one()
    assert token.split("_", 2)[2] not in json.dumps({k: str(v) for k, v in row.items()})
    assert _get(live, token).status_code == 200
    wrong_secret = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert _get(live, wrong_secret).status_code == 401
    assert httpx.get(f"{live.url}/v1/sessions", headers={"X-API-Key": token}).status_code == 200
    live.keys.revoke(key.key_id)
    refused = _get(live, token)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthenticated"
    assert refused.headers["www-authenticate"] == "Bearer"


def test_key_validation(live: Live) -> None:
    store = ApiKeyStore(live.engine.db)
    with pytest.raises(InvalidInput, match="scope"):
        store.create(["u1"], ["root"])
    with pytest.raises(InvalidInput, match="user"):
        store.create([], ["read"])
    assert store.authenticate("actx_nothing") is None and store.authenticate("bearer") is None


def test_read_only_key_cannot_write(live: Live) -> None:
    writer = live.key("u1")
    reader = live.key("u1", scopes=("read",))
    created = httpx.post(
        f"{live.url}/v1/sessions", json={}, headers={"Authorization": f"Bearer {writer}"}
    )
    sid = created.json()["session_id"]
    assert _get(live, reader, f"/v1/sessions/{sid}").status_code == 200
    denied = httpx.post(
        f"{live.url}/v1/sessions/{sid}/events",
        json={"event": {"type": "user_input", "parts": [{"kind": "text", "text": "x"}]}},
        headers={"Authorization": f"Bearer {reader}"},
    )
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "forbidden"
    assert live.engine.get_session(sid, "u1").info.last_seq == 0


def test_hs256_jwt_carries_user_and_tenant(live: Live) -> None:
    token = jwt.encode(_claims(tenant="acme"), SECRET, algorithm="HS256")
    created = httpx.post(
        f"{live.url}/v1/sessions", json={}, headers={"Authorization": f"Bearer {token}"}
    )
    assert created.status_code == 201 and created.json()["user_id"] == "u1"
    stored = live.engine.list_all_sessions().items
    assert [s.user_id for s in stored] == ["acme/u1"]


@pytest.mark.parametrize(
    "claims, secret",
    [
        (_claims(exp=int(time.time()) - 3600), SECRET),  # expired
        (_claims(aud="someone-else"), SECRET),  # wrong audience
        (_claims(), "not-the-secret-but-long-enough-0123"),  # wrong signature
        ({"sub": "u1", "aud": "agentctx"}, SECRET),  # no exp
    ],
)
def test_invalid_hs256_tokens_are_refused(
    live: Live, claims: dict[str, object], secret: str
) -> None:
    assert _get(live, jwt.encode(claims, secret, algorithm="HS256")).status_code == 401


def test_rs256_jwt_verified_with_the_jwks(live: Live, rsa_key: rsa.RSAPrivateKey) -> None:
    good = jwt.encode(_claims(), rsa_key, algorithm="RS256", headers={"kid": "k1"})
    assert _get(live, good).status_code == 200
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(_claims(), other, algorithm="RS256", headers={"kid": "k1"})
    assert _get(live, forged).status_code == 401
    unknown_kid = jwt.encode(_claims(), rsa_key, algorithm="RS256", headers={"kid": "k9"})
    assert _get(live, unknown_kid).status_code == 401
    # An HS256 token signed with the RSA public key must not pass (algorithm confusion).
    assert _get(live, jwt.encode(_claims(), "k1", algorithm="HS256")).status_code == 401


def test_me_says_whom_a_key_acts_for(live: Live) -> None:
    token = live.key("u1", "u2", scopes=("read",))
    me = _get(live, token, "/v1/me").json()
    assert me["users"] == ["u1", "u2"] and me["scopes"] == ["read"] and not me["is_admin"]
    ambiguous = _get(live, token, "/v1/sessions")
    assert ambiguous.status_code == 422 and ambiguous.json()["error"]["code"] == "user_required"
    assert _get(live, token, "/v1/sessions?user_id=u2").status_code == 200


@pytest.mark.parametrize("users", [("*",), ()])
def test_a_listing_by_a_key_for_any_user_names_the_user_id_parameter(
    live: Live, users: tuple[str, ...]
) -> None:
    token = live.key(*users, scopes=("read", "admin") if not users else ("read",))
    error = _get(live, token, "/v1/sessions")
    body = error.json()["error"]
    assert error.status_code == 422 and body["code"] == "user_required"
    assert body["field"] == "user_id"
    assert "user_id query parameter" in body["message"] and "?user_id=" in body["message"]


@pytest.mark.parametrize(
    "claims",
    [
        _claims(sub="*"),  # "any user" is an API key's, never a token's
        _claims(users=["u1", "*"]),
        _claims(sub="other/u1"),  # the tenant separator: another tenant's namespace
        _claims(users=["x/u1"]),
        _claims(sub=""),
        _claims(sub=7),
        _claims(exp=str(int(time.time()) + 300)),  # a numeric string is not a number
        _claims(nbf=str(int(time.time()) - 10)),
        _claims(iat="yesterday"),
        _claims(exp=True),
        _claims(scope="read root"),  # an unknown scope
        _claims(scope=["read"]),  # a list where a space-separated string belongs
        _claims(tenant=["acme"]),
        _claims(tenant="a/b"),
        _claims(tenant=""),
        _claims(users="u1"),
        _claims(users=[]),
    ],
)
def test_tokens_with_claims_of_the_wrong_type_or_value_are_refused(
    live: Live, claims: dict[str, object]
) -> None:
    token = jwt.encode(claims, SECRET, algorithm="HS256")
    refused = _get(live, token)
    assert refused.status_code == 401, claims
    assert refused.json()["error"]["code"] == "unauthenticated"


def test_a_token_for_star_reaches_no_other_user(live: Live) -> None:
    other = live.engine.create_session("u2", "agent")
    token = jwt.encode(_claims(sub="*"), SECRET, algorithm="HS256")
    reach = _get(live, token, f"/v1/sessions/{other.id}?user_id=u2")
    assert reach.status_code == 401


def test_user_ids_with_the_tenant_separator_are_refused_everywhere(live: Live) -> None:
    # "acme/u1" is how user u1 of tenant acme is stored: a default-tenant caller naming
    # "acme" + "/u1" must not land there, whichever way the id comes in.
    victim = live.key("u1", tenant="acme")
    sid = httpx.post(
        f"{live.url}/v1/sessions", json={}, headers={"Authorization": f"Bearer {victim}"}
    ).json()["session_id"]
    admin = live.key(scopes=("read", "write", "admin"))
    star = live.key("*")
    for token in (admin, star):
        query = _get(live, token, f"/v1/sessions/{sid}?user_id=acme/u1")
        assert query.status_code == 422, query.text
        assert query.json()["error"]["field"] == "user_id"
    verify = _get(live, admin, f"/v1/admin/sessions/{sid}/verify?user_id=acme%2Fu1")
    assert verify.status_code == 422
    erase = httpx.delete(
        f"{live.url}/v1/admin/users/acme%2Fu1",
        headers={"Authorization": f"Bearer {admin}"},
        timeout=30,
    )
    assert erase.status_code in (404, 422)  # never reaches the route with "acme/u1"
    key = httpx.post(
        f"{live.url}/v1/admin/keys",
        json={"users": ["acme/u1"]},
        headers={"Authorization": f"Bearer {admin}"},
        timeout=30,
    )
    assert key.status_code == 422
    with pytest.raises(InvalidInput, match="'/'"):
        live.keys.create(["acme/u1"])
    with pytest.raises(InvalidInput):
        live.keys.create(["u1\x00"])
    # The victim's session is untouched.
    assert live.engine.get_session(sid, "acme/u1").info.last_seq == 0


def test_context_tokenizers_are_the_servers_never_a_path(live: Live, tmp_path: Path) -> None:
    secret_file = tmp_path / "secret.json"
    secret_file.write_text('{"password": "hunter2-do-not-echo"}')
    token = live.key("u1")
    headers = {"Authorization": f"Bearer {token}"}
    sid = httpx.post(f"{live.url}/v1/sessions", json={}, headers=headers).json()["session_id"]
    for spec in (f"hf:{secret_file}", "hf:/etc/passwd", f"hf:{tmp_path}/missing.json", "hf:"):
        refused = httpx.post(
            f"{live.url}/v1/sessions/{sid}/context",
            json={"budget": 500, "config": {"tokenizer": spec}},
            headers=headers,
            timeout=30,
        )
        assert refused.status_code == 422
        assert refused.json()["error"]["code"] == "tokenizer_not_allowed"
        assert "hunter2" not in refused.text and str(tmp_path) not in refused.text
    allowed = httpx.post(
        f"{live.url}/v1/sessions/{sid}/context",
        json={"budget": 500, "config": {"tokenizer": "estimate:cl100k_base"}},
        headers=headers,
        timeout=30,
    )
    assert allowed.status_code == 200, allowed.text
    assert allowed.json()["report"]["tokenizer"] == "estimate:cl100k_base"


def test_an_operator_listed_tokenizer_file_fails_without_echoing_it(tmp_path: Path) -> None:
    listed = tmp_path / "tokenizer.json"
    listed.write_text('{"not": "a tokenizer", "secret": "hunter2-do-not-echo"}')
    config = ServerConfig(tokenizers=["estimate", f"hf:{listed}"])
    with ContextEngine(home=tmp_path / "home") as engine, serve(engine, config) as running:
        headers = {"Authorization": f"Bearer {running.key('u1')}"}
        sid = httpx.post(f"{running.url}/v1/sessions", json={}, headers=headers)
        failed = httpx.post(
            f"{running.url}/v1/sessions/{sid.json()['session_id']}/context",
            json={"budget": 500, "config": {"tokenizer": f"hf:{listed}"}},
            headers=headers,
            timeout=30,
        )
    assert failed.status_code in (422, 501), failed.text  # not a tokenizer, or no package
    assert "hunter2" not in failed.text
