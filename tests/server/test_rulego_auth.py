"""RuleGo's login (rulego-server internal/controller/base.go Login: {"username", "password"} ->
{"token", "expiresAt"}), its token as `Authorization: Bearer` on every RuleGo route, the debug websocket's
token and MCP's SSE transport at /api/v1/mcp/{apiKey}/sse (internal/controller/mcp.go)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from chainreact.server import Catalog, KeyStore, create_app
from chainreact.server.login import UserStore, hash_password

from .conftest import Served
from .rulego_shapes import LOGIN, has_shape

CHAIN = {"ruleChain": {"id": "echo", "name": "Echo"},
         "metadata": {"nodes": [{"id": "t", "type": "jsTransform", "configuration": {
             "jsScript": "msg.n = msg.n * 2; return {msg: msg, metadata: metadata, msgType: msgType};"}}]}}
OTHER = {**CHAIN, "ruleChain": {"id": "other", "name": "Other"}}


@pytest.fixture
def secured(tmp_path: Path) -> Any:
    """A server with an API key (read on `echo` only) and users: `ann` may read, write and execute, `ro`
    only read, `flow` has no permissions (a flow login, as before this face)."""
    folder = tmp_path / "secured"  # not `serve`'s folder: a test may use both
    folder.mkdir()
    for doc in (CHAIN, OTHER):
        (folder / f"{doc['ruleChain']['id']}.json").write_text(json.dumps(doc))
    pw = hash_password("pw")
    (tmp_path / "keys.json").write_text(json.dumps({
        "keys": [{"name": "reader", "sha256": hashlib.sha256(b"key-1").hexdigest(), "ids": ["echo"],
                  "permissions": ["read", "execute"]}],
        "users": [{"name": "ann", "password": pw, "permissions": ["read", "write", "execute"]},
                  {"name": "ro", "password": pw, "permissions": ["read"], "ids": ["echo"]},
                  {"name": "flow", "password": pw}]}))
    keys = KeyStore.load(tmp_path / "keys.json")
    users = UserStore.load(tmp_path / "keys.json")
    with Served(create_app(Catalog.load([folder]), keys=keys, users=users, secret="s")) as srv:
        yield srv


def login(url: str, name: str) -> str:
    r = httpx.post(url + "/api/v1/login", json={"username": name, "password": "pw"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert has_shape(body, LOGIN, {"tokenType", "expiresIn", "user"})
    assert isinstance(body["expiresAt"], int) and body["expiresAt"] > time.time()  # Unix seconds
    return str(body["token"])


def test_login_token_works_as_a_bearer_key_on_rulegos_routes(secured: Served) -> None:
    u = secured.url
    assert httpx.post(u + "/api/v1/login", json={"username": "ann", "password": "nope"}).status_code == 401
    ann = {"Authorization": f"Bearer {login(u, 'ann')}"}
    assert httpx.get(u + "/api/v1/rules").status_code == 401  # keys are on: no anonymous user
    assert httpx.get(u + "/api/v1/rules", headers=ann).json()["total"] == 2
    for method, path, body in (("GET", "/api/v1/rules/echo", None), ("GET", "/api/v1/components", None),
                               ("GET", "/api/v1/logs/runs", None), ("GET", "/api/v1/locales", None),
                               ("POST", "/api/v1/rules/echo/execute/T", {"n": 2}),
                               ("POST", "/api/v1/rules/echo/operate/start", None),
                               ("POST", "/api/v1/rules/echo/config/vars", {"a": 1})):
        r = httpx.request(method, u + path, json=body, headers=ann)
        assert r.status_code == 200, (path, r.text)
    # a user token is no API key elsewhere
    assert httpx.get(u + "/v1/models", headers=ann).status_code == 401

    ro = {"Authorization": f"Bearer {login(u, 'ro')}"}
    def ids(headers: dict[str, str]) -> list[str]:
        return [i["ruleChain"]["id"] for i in httpx.get(u + "/api/v1/rules", headers=headers).json()["items"]]

    assert ids(ro) == ["echo"]
    assert httpx.post(u + "/api/v1/rules/echo/operate/stop", headers=ro).status_code == 403
    assert httpx.get(u + "/api/v1/rules/other", headers=ro).status_code == 403
    flow = {"Authorization": f"Bearer {login(u, 'flow')}"}
    refused = httpx.get(u + "/api/v1/rules", headers=flow)
    assert refused.status_code == 401 and "permissions" in refused.json()["error"]["message"]
    # API keys work as before
    key = {"Authorization": "Bearer key-1"}
    assert ids(key) == ["echo"]


def test_the_debug_websocket_takes_its_token_in_the_query(secured: Served) -> None:
    ws = secured.url.replace("http://", "ws://") + "/api/v1/logs/ws/echo/c1"
    with pytest.raises(InvalidStatus):
        connect(ws, open_timeout=10)
    with pytest.raises(InvalidStatus):
        connect(ws + "?token=" + login(secured.url, "flow"), open_timeout=10)
    token = login(secured.url, "ann")
    with connect(ws + "?token=" + token, open_timeout=10) as sock:
        r = httpx.post(secured.url + "/api/v1/rules/echo/execute/T?_debugMode=true", json={"n": 1},
                       headers={"Authorization": f"Bearer {token}"})
        assert r.json() == {"n": 2}
        assert json.loads(sock.recv(timeout=10))["flowType"] == "IN"


@asynccontextmanager
async def sse_session(url: str) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    async with sse_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def test_mcp_over_sse_at_rulegos_path(serve: Any, secured: Served) -> None:
    srv = serve({"echo.json": CHAIN})  # no keys: any key in the path (RuleGo's anonymous user)
    async with sse_session(srv.url + "/api/v1/mcp/anything/sse") as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["echo"]
        result = await session.call_tool("echo", {"data": {"n": 21}})
        assert (result.content[0].text, result.is_error) == ('{"n":42}', False)

    # with keys, the key in the path decides: unknown is 401, key-1 sees and runs echo only
    assert httpx.get(secured.url + "/api/v1/mcp/wrong/sse").status_code == 401
    async with sse_session(secured.url + "/api/v1/mcp/key-1/sse") as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["echo"]
        assert (await session.call_tool("echo", {"data": {"n": 1}})).content[0].text == '{"n":2}'
