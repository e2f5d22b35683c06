"""Sessions bound to the logged-in users who started them (issue 23): every route that reaches a flow's, an
agent's or a chain's session, or a run in one, answers another user or an anonymous caller 404; an admin
key reads and lists, and may not write. Before, anyone reached any session by its name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from chainreact.server.login import UserStore, make_token
from chainreact.server.responses_api import session_response_id
from tests.server.ops_support import key
from tests.server.runs_helpers import agent_doc
from tests.server.test_chain_sessions import one_agent_chain
from tests.server.test_flows_routes import answer, helpdesk

SECRET = b"owners-secret"
CHEAP = "pbkdf2_sha256$1$" + "A" * 22 + "$" + "A" * 43  # never checked: tokens are made directly


def as_user(name: str | None, **extra: str) -> dict[str, str]:
    return {"X-User-Token": make_token(SECRET, name, 3600)[0], **extra} if name else dict(extra)


def users(tmp_path: Path) -> UserStore:
    path = tmp_path / "users.json"
    path.write_text(json.dumps({"users": [{"name": n, "password": CHEAP} for n in ("ann", "bob")]}))
    store = UserStore.load(path)
    assert store is not None
    return store


def a2a(url: str, ident: str, context: str, headers: dict[str, str]) -> dict[str, Any]:
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}], "contextId": context}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    return dict(httpx.post(f"{url}/a2a/{ident}", json=body, headers=headers, timeout=30).json())


def agui(url: str, ident: str, thread: str, headers: dict[str, str]) -> httpx.Response:
    body = {"threadId": thread, "runId": "r1", "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": "m1", "role": "user", "content": "hi"}]}
    return httpx.post(f"{url}/agui/{ident}", json=body, headers=headers, timeout=30)


def refused(resp: httpx.Response, status: int = 404) -> bool:
    err = resp.json()["error"]
    return resp.status_code == status and err["code"] in ("session_not_found", "session_owned")


@pytest.fixture
def served(fake_llm: Any, serve: Any, tmp_path: Path) -> Any:
    def start(script: list[Any], **extras: Any) -> Any:
        llm = fake_llm(script)
        docs = {"helpdesk.json": helpdesk(llm.url), "helper.json": agent_doc(llm.url),
                "chat.json": one_agent_chain(llm.url)}
        srv = serve(docs, users=users(tmp_path), secret=SECRET, state=f"sqlite:///{tmp_path}/state.db",
                    **extras)
        return srv, llm

    return start


def test_a_flow_session_is_its_users_on_every_route(served: Any) -> None:
    srv, llm = served([answer("Hi Ann."), answer("Still here.")])
    u = srv.url
    flow = u + "/api/v1/flows/helpdesk/sessions/s1"
    json_only = {"Accept": "application/json"}
    first = httpx.post(flow + "/messages", json={"text": "I am Ann"}, headers=as_user("ann", **json_only),
                       timeout=30)
    assert first.status_code == 200 and first.json()["messages"][-1]["content"] == "Hi Ann."

    for who in ("bob", None):
        assert refused(httpx.get(flow, headers=as_user(who)))
        assert refused(httpx.post(flow + "/messages", json={"text": "what did Ann say?"},
                                  headers=as_user(who, **json_only)))
        chat = httpx.post(u + "/v1/chat/completions", headers=as_user(who), timeout=30, json={
            "model": "helpdesk", "user": "s1", "messages": [{"role": "user", "content": "and?"}]})
        assert refused(chat) and chat.json()["error"]["type"] == "invalid_request_error"
        resp = httpx.post(u + "/v1/responses", headers=as_user(who), timeout=30, json={
            "model": "helpdesk", "input": "and?", "previous_response_id": session_response_id("s1")})
        assert refused(resp)
        assert refused(httpx.get(u + "/playground/api/flows/helpdesk/sessions/s1", headers=as_user(who)))
        listed = httpx.get(u + "/playground/api/flows/helpdesk", headers=as_user(who)).json()["sessions"]
        assert listed == []
        assert refused(agui(u, "helpdesk", "s1", as_user(who)))
        err = a2a(u, "helpdesk", "s1", as_user(who))["error"]
        assert "not yours" in err["message"]
    assert len(llm.chat_requests) == 1  # nothing of theirs reached the model

    # the owner reads it, lists it and goes on with it, by any route
    assert httpx.get(flow, headers=as_user("ann")).json()["exists"] is True
    listed = httpx.get(u + "/playground/api/flows/helpdesk", headers=as_user("ann")).json()["sessions"]
    assert [s["session"] for s in listed] == ["s1"]
    talk = httpx.get(u + "/playground/api/flows/helpdesk/sessions/s1", headers=as_user("ann")).json()
    assert [m["text"] for m in talk["messages"]] == ["User: I am Ann", "Hi Ann."]
    chat = httpx.post(u + "/v1/chat/completions", headers=as_user("ann"), timeout=30, json={
        "model": "helpdesk", "user": "s1", "messages": [{"role": "user", "content": "and?"}]})
    assert chat.status_code == 200 and chat.json()["choices"][0]["message"]["content"] == "Still here."


def test_a_session_started_without_a_login_is_taken_by_the_first_user_who_continues_it(served: Any) -> None:
    srv, llm = served([answer("Hello."), answer("Welcome, Ann."), answer("Hi again.")])
    flow = srv.url + "/api/v1/flows/helpdesk/sessions/p1"
    json_only = {"Accept": "application/json"}
    first = httpx.post(flow + "/messages", json={"text": "hi"}, headers=json_only, timeout=30)
    assert first.status_code == 200
    assert httpx.get(flow).json()["exists"] is True  # no one's: open to all
    assert httpx.post(flow + "/messages", json={"text": "I logged in"}, timeout=30,
                      headers=as_user("ann", **json_only)).status_code == 200
    assert refused(httpx.get(flow))  # Ann's now: the anonymous client that began it is out too
    assert refused(httpx.get(flow, headers=as_user("bob")))
    assert refused(httpx.post(flow + "/messages", json={"text": "x"}, headers=as_user("bob", **json_only)))
    assert httpx.post(flow + "/messages", json={"text": "again"}, timeout=30,
                      headers=as_user("ann", **json_only)).json()["messages"][-1]["content"] == "Hi again."
    assert len(llm.chat_requests) == 3


def test_an_agents_session_and_its_runs_are_its_users(served: Any) -> None:
    srv, llm = served([{"text": "Noted, Ann."}])
    u = srv.url
    chat = httpx.post(u + "/v1/chat/completions", headers=as_user("ann"), timeout=30, json={
        "model": "helper", "user": "conv", "messages": [{"role": "user", "content": "My PIN is 1234"}]})
    assert chat.status_code == 200
    run_id = chat.headers["x-run-id"]

    for who in ("bob", None):
        again = httpx.post(u + "/v1/chat/completions", headers=as_user(who), timeout=30, json={
            "model": "helper", "user": "conv", "messages": [{"role": "user", "content": "My PIN?"}]})
        assert refused(again)
        assert refused(httpx.post(u + "/api/v1/agents/helper/runs", headers=as_user(who), timeout=30,
                                  json={"input": "My PIN?", "session": "conv"}))
        assert refused(httpx.post(u + "/v1/responses", headers=as_user(who), timeout=30,
                                  json={"model": "helper", "input": "PIN?", "user": "conv"}))
        assert refused(httpx.post(u + "/v1/responses", headers=as_user(who), timeout=30, json={
            "model": "helper", "input": "PIN?", "previous_response_id": f"resp_{run_id}"}))
        assert refused(httpx.get(f"{u}/api/v1/runs/{run_id}", headers=as_user(who)))
        assert refused(httpx.get(f"{u}/api/v1/runs/{run_id}/events", headers=as_user(who)))
        assert refused(httpx.post(f"{u}/api/v1/runs/{run_id}/cancel", json={}, headers=as_user(who)))
        assert refused(httpx.post(f"{u}/api/v1/runs/{run_id}/resume", json={}, headers=as_user(who)))
        runs = httpx.get(u + "/playground/api/agents/helper/runs", headers=as_user(who)).json()["items"]
        assert run_id not in [r["id"] for r in runs]
        assert refused(httpx.get(f"{u}/playground/api/agents/helper/runs/{run_id}/cassette",
                                 headers=as_user(who)))
        assert refused(agui(u, "helper", "conv", as_user(who)))
        assert "not yours" in a2a(u, "helper", "conv", as_user(who))["error"]["message"]
    assert len(llm.chat_requests) == 1

    view = httpx.get(f"{u}/api/v1/runs/{run_id}", headers=as_user("ann")).json()
    assert view["session"] == "conv" and view["status"] == "done"
    runs = httpx.get(u + "/playground/api/agents/helper/runs", headers=as_user("ann")).json()["items"]
    assert run_id in [r["id"] for r in runs]


def test_a_chains_session_is_its_users(served: Any) -> None:
    srv, llm = served([{"text": "Hello Ann."}])
    u = srv.url
    body = {"model": "chat", "user": "c1", "messages": [{"role": "user", "content": "My name is Ann"}]}
    mine = httpx.post(u + "/v1/chat/completions", json=body, headers=as_user("ann"), timeout=30)
    assert mine.status_code == 200
    for who in ("bob", None):
        assert refused(httpx.post(u + "/v1/chat/completions", json=body, headers=as_user(who), timeout=30))
        assert refused(httpx.post(u + "/api/v1/rules/chat/v1/chat/completions", json=body, timeout=30,
                                  headers=as_user(who)))
        assert refused(httpx.post(u + "/api/v1/rules/chat/runs", json={"input": "x", "session": "c1"},
                                  headers=as_user(who), timeout=30))
        assert refused(httpx.post(u + "/api/v1/rules/chat/execute/T", content=b"{}", timeout=30,
                                  headers=as_user(who, **{"X-Session-Key": "c1"})))
        assert refused(agui(u, "chat", "c1", as_user(who)))
    assert len(llm.chat_requests) == 1


def test_an_admin_key_reads_and_lists_and_may_not_write(served: Any) -> None:
    keys = {"keys": [key("app", "app-key", permissions=["read", "execute"]),
                     key("ops", "ops-key", permissions=["admin"])]}
    srv, llm = served([answer("Hi Ann."), {"text": "Noted."}], keys=keys)
    u = srv.url
    app, ops = {"Authorization": "Bearer app-key"}, {"Authorization": "Bearer ops-key"}
    flow = u + "/api/v1/flows/helpdesk/sessions/s1"
    assert httpx.post(flow + "/messages", json={"text": "hi"}, timeout=30,
                      headers=as_user("ann", Accept="application/json", **app)).status_code == 200
    chat = httpx.post(u + "/v1/chat/completions", headers=as_user("ann", **app), timeout=30, json={
        "model": "helper", "user": "conv", "messages": [{"role": "user", "content": "hi"}]})
    run_id = chat.headers["x-run-id"]

    assert refused(httpx.get(flow, headers=app))  # the app's key alone is no user
    assert httpx.get(flow, headers=ops).json()["exists"] is True
    assert [s["session"] for s in httpx.get(u + "/playground/api/flows/helpdesk", headers=ops).json()
            ["sessions"]] == ["s1"]
    assert httpx.get(f"{u}/api/v1/runs/{run_id}", headers=ops).json()["session"] == "conv"
    assert run_id in [r["id"] for r in httpx.get(u + "/playground/api/agents/helper/runs",
                                                  headers=ops).json()["items"]]
    assert refused(httpx.post(flow + "/messages", json={"text": "x"}, headers=ops), 403)
    assert refused(httpx.post(u + "/v1/chat/completions", headers=ops, timeout=30, json={
        "model": "helper", "user": "conv", "messages": [{"role": "user", "content": "x"}]}), 403)
    assert len(llm.chat_requests) == 2


def test_without_logins_sessions_stay_open(fake_llm: Any, serve: Any, tmp_path: Path) -> None:
    llm = fake_llm([answer("One."), answer("Two.")])
    srv = serve({"helpdesk.json": helpdesk(llm.url)})
    flow = srv.url + "/api/v1/flows/helpdesk/sessions/s1"
    for text in ("a", "b"):
        assert httpx.post(flow + "/messages", json={"text": text}, timeout=30,
                          headers={"Accept": "application/json"}).status_code == 200
    assert httpx.get(flow).json()["exists"] is True


async def test_an_mcp_flow_call_in_someone_elses_session_is_a_tool_error(served: Any) -> None:
    pytest.importorskip("mcp")
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    srv, llm = served([answer("Hi Ann."), answer("Again.")])

    async def call(headers: dict[str, str]) -> Any:
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
                streamable_http_client(srv.url + "/mcp", http_client=http) as streams, \
                ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            return await session.call_tool("helpdesk", {"text": "hi", "session": "m1"})

    mine = await call(as_user("ann"))
    assert not mine.is_error
    for who in ("bob", None):
        theirs = await call(as_user(who))
        assert theirs.is_error and "not yours" in theirs.content[0].text
    assert not (await call(as_user("ann"))).is_error
    assert len(llm.chat_requests) == 2


def test_a_chain_message_may_not_name_another_wings_conversation(fake_llm: Any, serve: Any,
                                                                 tmp_path: Path) -> None:
    # With or without logins: a chain's agent node loaded (and appended to) whatever store key the
    # message's sessionKey named, an agent's or a flow's conversation included.
    llm = fake_llm([{"text": "Noted."}, {"text": "Hello."}])
    srv = serve({"helper.json": agent_doc(llm.url), "chat.json": one_agent_chain(llm.url)},
                state=f"sqlite:///{tmp_path}/state.db")
    u = srv.url
    assert httpx.post(u + "/v1/chat/completions", timeout=30, json={
        "model": "helper", "user": "conv", "messages": [{"role": "user", "content": "My PIN is 1234"}]}
    ).status_code == 200
    for named in ("agent:helper:conv", "flow:helpdesk:s1", "chain:chat:node:a:c1", "flowmem:x"):
        for how in ({"headers": {"X-Session-Key": named}}, {"params": {"sessionKey": named}}):
            resp = httpx.post(u + "/api/v1/rules/chat/execute/T", content=b"PIN?", timeout=30,
                              params={"loadHistory": "true", **how.get("params", {})},
                              headers=how.get("headers"))
            assert resp.status_code == 400, resp.text
            assert resp.json()["error"]["code"] == "invalid_session_key"
    assert len(llm.chat_requests) == 1
    # a key of its own is the chain's business, as before
    ok = httpx.post(u + "/api/v1/rules/chat/execute/T", content=b"hi", headers={"X-Session-Key": "mine"},
                    timeout=30)
    assert ok.status_code == 200 and "PIN" not in str(llm.chat_requests[1].messages)
