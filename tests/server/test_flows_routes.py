"""Flows served over HTTP against a real uvicorn server and the scripted model: /v1 (openai SDK), the flow
session routes (SSE and JSON), the session view, and login for loginRequired flows."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest

from chainreact.server import Catalog, KeyStore, create_app
from chainreact.server.auth import hash_key
from chainreact.server.login import UserStore, hash_password, make_token

from .conftest import Served

SECRET = b"test-secret"
SCHEMA = {"type": "object", "properties": {"response": {"type": "string"}, "done": {"type": "boolean"},
                                           "apiKey": {"type": "string"}},
          "required": ["response", "done"]}


def helpdesk(url: str) -> dict[str, Any]:
    return {"id": "helpdesk", "name": "Helpdesk", "nodes": [
        {"name": "greet", "type": "message", "start": True, "message": "Hello!",
         "transition": {"targetId": "agent"}},
        {"name": "agent", "type": "aiagent", "llmConfig": {"url": url, "apiKey": "sk-test"},
         "userMessage": "User: {{userInput}}", "output": {"schema": SCHEMA},
         "agentOutcomes": [{"condition": "{{output.done}} == true", "transition": {"targetId": "bye"},
                            "finish": False}]},
        {"name": "bye", "type": "end", "message": "Goodbye."},
    ]}


def private(url: str) -> dict[str, Any]:
    return {"id": "private", "nodes": [
        {"name": "vip", "type": "aiagent", "loginRequired": True, "llmConfig": {"url": url, "apiKey": "k"},
         "userMessage": "{{userInput}}", "userIdentityExpression": "{{user.name}} ({{user.tier}})",
         "output": {"schema": SCHEMA}},
    ]}


def answer(text: str, done: bool = False, **extra: Any) -> dict[str, Any]:
    return {"text": json.dumps({"response": text, "done": done, **extra})}


@pytest.fixture
def serve_flows(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def factory(docs: dict[str, dict[str, Any]], *, keys: dict[str, Any] | None = None,
                **extras: Any) -> Served:
        folder = tmp_path / "served"
        folder.mkdir(exist_ok=True)
        for name, doc in docs.items():
            (folder / name).write_text(json.dumps(doc))
        key_store = None
        if keys is not None:
            (tmp_path / "keys.json").write_text(json.dumps(keys))
            key_store = KeyStore.load(tmp_path / "keys.json")
        s = Served(create_app(Catalog.load([folder]), keys=key_store, **extras)).__enter__()
        started.append(s)
        return s

    yield factory
    for s in started:
        s.__exit__()


def sse_events(resp: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in resp.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            out.append((lines["event"], orjson.loads(lines["data"])))
    return out


def test_flows_on_the_openai_routes_keep_a_session_per_user(fake_llm: Any, serve_flows: Any) -> None:
    llm = fake_llm([answer("I can help with that."), answer("Done, anything else?", done=True)])
    srv = serve_flows({"helpdesk.json": helpdesk(llm.url)})
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")

    models = {m.id: m.owned_by for m in client.models.list()}
    assert models == {"helpdesk": "chainreact-flow"}

    first = client.chat.completions.create(model="helpdesk", user="ann",
                                           messages=[{"role": "user", "content": "My printer is broken"}])
    # the greeting and the agent's answer, in one turn (message node goes on to the agent)
    assert first.choices[0].message.content == "Hello!\n\nI can help with that."
    assert llm.chat_requests[0].messages[-1]["content"] == "User: My printer is broken"

    # the same `user` continues the session: the agent answers done, the flow goes on to the end node
    chunks = list(client.chat.completions.create(
        model="helpdesk", user="ann", stream=True, messages=[{"role": "user", "content": "It works now"}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Done, anything else?\n\nGoodbye."
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert llm.chat_requests[1].messages[-1]["content"] == "User: It works now"

    view = httpx.get(srv.url + "/api/v1/flows/helpdesk/sessions/ann").json()
    assert view["ended"] is True and view["exists"] is True


def test_session_messages_as_sse_and_json_and_the_session_view(fake_llm: Any, serve_flows: Any) -> None:
    llm = fake_llm([answer("Checking.", apiKey="sk-live-123"), answer("Fixed.", done=True)])
    srv = serve_flows({"helpdesk.json": helpdesk(llm.url)})
    url = srv.url + "/api/v1/flows/helpdesk/sessions/s1"

    resp = httpx.post(url + "/messages", json={"text": "help"}, timeout=30)
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    events = sse_events(resp)
    kinds = [k for k, _ in events]
    assert kinds == ["node", "message", "node", "output", "message", "turn_end"]
    assert events[1][1] == {"event": "message", "node": "greet", "role": "assistant", "content": "Hello!"}
    assert events[-1][1] == {"event": "turn_end", "node": "agent", "current": "agent", "ended": False}
    assert [line for line in resp.text.splitlines() if line.startswith("id: ")][:2] == ["id: 1", "id: 2"]

    view = httpx.get(url).json()
    assert view["node"] == "agent" and view["ended"] is False and view["exists"] is True
    # the agent's output is kept as the node's variable, the secret-looking field masked
    assert view["variables"] == {"agent": {"response": "Checking.", "done": False, "apiKey": "***"}}
    assert "sk-live-123" not in httpx.get(url).text

    done = httpx.post(url + "/messages", json={"text": "thanks"}, headers={"Accept": "application/json"},
                      timeout=30).json()
    assert done["session"] == "s1" and done["ended"] is True and done["node"] is None
    assert [m["content"] for m in done["messages"]] == ["Fixed.", "Goodbye."]
    assert done["output"] == {"response": "Fixed.", "done": True}
    assert done["events"][-1]["event"] == "turn_end"

    fresh = httpx.get(srv.url + "/api/v1/flows/helpdesk/sessions/other").json()
    assert fresh == {"flow": "helpdesk", "session": "other", "exists": False, "node": "greet", "ended": False,
                     "variables": {}, "output": None}
    listed = httpx.get(srv.url + "/api/v1/flows").json()
    assert listed["items"][0]["id"] == "helpdesk" and listed["items"][0]["start"] == "greet"


def test_bad_flow_requests_are_4xx_and_change_nothing(fake_llm: Any, serve_flows: Any) -> None:
    llm = fake_llm([])
    srv = serve_flows({"helpdesk.json": helpdesk(llm.url)})
    base = srv.url + "/api/v1/flows"
    assert httpx.post(base + "/nope/sessions/s/messages", json={"text": "x"}).status_code == 404
    for body in (b"{", b'{"text": 3}', b'{"text": "x", "user": "ann"}', b'{"text": "x", "stream": "no"}'):
        r = httpx.post(base + "/helpdesk/sessions/s/messages", content=body)
        assert r.status_code == 400, body
    assert httpx.post(base + "/helpdesk/sessions/" + "x" * 201 + "/messages", json={"text": "x"}
                      ).status_code == 400
    assert httpx.get(base + "/helpdesk/sessions/s").json()["exists"] is False
    assert llm.chat_requests == []


def test_a_failing_turn_is_an_error_event_and_saves_nothing(fake_llm: Any, serve_flows: Any) -> None:
    llm = fake_llm([{"status": 400, "message": "boom"}], loop=True)
    srv = serve_flows({"helpdesk.json": helpdesk(llm.url)})
    url = srv.url + "/api/v1/flows/helpdesk/sessions/s9"
    events = sse_events(httpx.post(url + "/messages", json={"text": "hi"}, timeout=60))
    assert events[-1][0] == "error" and events[-1][1]["type"] == "stream_error"
    assert httpx.get(url).json()["exists"] is False


def users_file(tmp_path: Path) -> UserStore:
    path = tmp_path / "users.json"
    path.write_text(json.dumps({"users": [
        {"name": "ann", "password": hash_password("correct horse"), "attributes": {"tier": "gold"}}]}))
    store = UserStore.load(path)
    assert store is not None
    return store


def test_login_refusal_then_login_and_a_run_as_the_user(fake_llm: Any, serve_flows: Any,
                                                        tmp_path: Path) -> None:
    llm = fake_llm([answer("Welcome back.")])
    srv = serve_flows({"private.json": private(llm.url)}, users=users_file(tmp_path), secret=SECRET)
    url = srv.url + "/api/v1/flows/private/sessions/p1/messages"

    # no token: the agent does not run; claiming an id in the body does not log anyone in
    refused = httpx.post(url, json={"text": "hi", "user": {"id": "ann", "name": "ann"}},
                         headers={"Accept": "application/json"}).json()
    assert [e["event"] for e in refused["events"]] == ["node", "login_required", "message", "turn_end"]
    assert refused["messages"][0]["content"] == "Please log in to continue."
    assert llm.chat_requests == []

    bad = httpx.post(srv.url + "/api/v1/login", json={"user": "ann", "password": "wrong"})
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "invalid_credentials"
    assert httpx.post(srv.url + "/api/v1/login", json={"user": "bob", "password": "x"}).status_code == 401
    assert httpx.post(srv.url + "/api/v1/login", content=b"nope").status_code == 400

    ok = httpx.post(srv.url + "/api/v1/login", json={"user": "ann", "password": "correct horse"}).json()
    assert ok["user"] == {"id": "ann", "name": "ann", "tier": "gold"} and ok["tokenType"] == "Bearer"
    turn = httpx.post(url, json={"text": "hi"}, timeout=30,
                      headers={"Authorization": f"Bearer {ok['token']}", "Accept": "application/json"}).json()
    assert [m["content"] for m in turn["messages"]] == ["Welcome back."]
    # the flow saw the logged-in user's attributes from the users file
    assert "ann (gold)" in llm.chat_requests[0].messages[0]["content"]


def test_expired_and_tampered_tokens_are_refused(fake_llm: Any, serve_flows: Any, tmp_path: Path) -> None:
    llm = fake_llm([])
    srv = serve_flows({"private.json": private(llm.url)}, users=users_file(tmp_path), secret=SECRET)
    url = srv.url + "/api/v1/flows/private/sessions/p2/messages"
    expired, _ = make_token(SECRET, "ann", 60, now=1_000_000)
    fresh, _ = make_token(SECRET, "ann", 600)
    payload, sig = fresh.split(".")
    claims = orjson.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["exp"] += 10**6  # a longer life, with the old signature
    tampered = base64.urlsafe_b64encode(orjson.dumps(claims)).rstrip(b"=").decode() + "." + sig
    other_secret, _ = make_token(b"another secret", "ann", 600)
    for token in (expired, tampered, other_secret, "garbage", fresh[:-2]):
        r = httpx.post(url, json={"text": "hi"},
                       headers={"X-User-Token": token, "Accept": "application/json"})
        assert [e["event"] for e in r.json()["events"]][1] == "login_required", token
    assert llm.chat_requests == []


def test_with_api_keys_the_login_token_goes_in_x_user_token(fake_llm: Any, serve_flows: Any,
                                                             tmp_path: Path) -> None:
    llm = fake_llm([answer("Hi Ann.")])
    keys = {"keys": [{"name": "ui", "sha256": hash_key("ui-key"), "ids": ["private"],
                      "permissions": ["read", "execute"]}]}
    srv = serve_flows({"private.json": private(llm.url)}, keys=keys, users=users_file(tmp_path),
                      secret=SECRET)
    url = srv.url + "/api/v1/flows/private/sessions/p3/messages"
    login = httpx.post(srv.url + "/api/v1/login", json={"user": "ann", "password": "correct horse"})
    assert login.status_code == 200  # login needs no API key: the password is the credential
    token = login.json()["token"]
    # the token is no API key
    as_key = httpx.post(url, json={"text": "hi"}, headers={"Authorization": f"Bearer {token}"})
    assert as_key.status_code == 401
    r = httpx.post(url, json={"text": "hi"}, timeout=30, headers={
        "Authorization": "Bearer ui-key", "X-User-Token": token, "Accept": "application/json"})
    assert [m["content"] for m in r.json()["messages"]] == ["Hi Ann."]
    # the openai SDK with the API key and the user's token as an extra header
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="ui-key",
                           default_headers={"X-User-Token": token})
    llm.add_turns([answer("Still here.")])
    done = client.chat.completions.create(model="private", user="p3",
                                          messages=[{"role": "user", "content": "x"}])
    assert done.choices[0].message.content == "Still here."


def test_login_without_users_is_not_configured(fake_llm: Any, serve_flows: Any) -> None:
    srv = serve_flows({"helpdesk.json": helpdesk(fake_llm([]).url)})
    r = httpx.post(srv.url + "/api/v1/login", json={"user": "a", "password": "b"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "login_not_configured"


def test_flow_sessions_live_in_the_state_store_across_restarts(fake_llm: Any, serve_flows: Any,
                                                               tmp_path: Path) -> None:
    llm = fake_llm([answer("First."), answer("Second.")])
    state = f"sqlite:///{tmp_path / 'state.db'}"
    first = serve_flows({"helpdesk.json": helpdesk(llm.url)}, state=state)
    turn = {"text": "hi"}
    json_only = {"Accept": "application/json"}
    url = "/api/v1/flows/helpdesk/sessions/keep/messages"
    assert httpx.post(first.url + url, json=turn, headers=json_only, timeout=30).json()["node"] == "agent"
    first.__exit__()
    second = serve_flows({"helpdesk.json": helpdesk(llm.url)}, state=state)
    assert httpx.get(second.url + "/api/v1/flows/helpdesk/sessions/keep").json()["node"] == "agent"
    # the next message goes to the agent, not to the greeting again
    again = httpx.post(second.url + url, json=turn, headers=json_only, timeout=30).json()
    assert [m["content"] for m in again["messages"]] == ["Second."]


def test_two_messages_to_one_session_at_once_the_second_to_save_is_409(fake_llm: Any,
                                                                       serve_flows: Any) -> None:
    import threading

    # the first request's model answer is slow; the second, sent meanwhile, saves the session first
    llm = fake_llm([{**answer("slow"), "delay": 2}, answer("fast")])
    srv = serve_flows({"helpdesk.json": helpdesk(llm.url)})
    url = srv.url + "/api/v1/flows/helpdesk/sessions/race/messages"
    results: dict[str, httpx.Response] = {}

    def send(name: str) -> None:
        results[name] = httpx.post(url, json={"text": name}, headers={"Accept": "application/json"},
                                   timeout=30)

    slow = threading.Thread(target=send, args=("slow",))
    slow.start()
    deadline = time.monotonic() + 10
    while not llm.chat_requests and time.monotonic() < deadline:
        time.sleep(0.02)
    send("fast")
    slow.join(30)
    assert results["fast"].status_code == 200
    assert results["slow"].status_code == 409
    assert results["slow"].json()["error"]["code"] == "session_conflict"
    # the session holds the turn that was saved
    assert httpx.get(srv.url + "/api/v1/flows/helpdesk/sessions/race").json()["variables"]["agent"][
        "response"] == "fast"


def test_a_flow_request_without_a_session_key_gets_a_new_one(fake_llm: Any, serve_flows: Any) -> None:
    llm = fake_llm([answer("One."), answer("Two.")])
    srv = serve_flows({"helpdesk.json": helpdesk(llm.url)})
    body = {"model": "helpdesk", "messages": [{"role": "user", "content": "hi"}]}
    first = httpx.post(srv.url + "/v1/chat/completions", json=body, timeout=30)
    sid = first.headers["x-session-key"]
    assert sid and first.json()["choices"][0]["message"]["content"] == "Hello!\n\nOne."
    # the returned key continues that session (no greeting again)
    second = httpx.post(srv.url + "/v1/chat/completions", json=body, timeout=30,
                        headers={"X-Session-Key": sid})
    assert second.headers["x-session-key"] == sid
    assert second.json()["choices"][0]["message"]["content"] == "Two."


# -- answers streamed as the model writes them ---------------------------------------------------------

LONG = "Your printer needs a new cartridge; I have ordered one for you, it arrives tomorrow."


def streamed(text: str, done: bool = False, **extra: Any) -> dict[str, Any]:
    """A streamed model answer: the JSON in 4-character pieces, 50 ms apart (the whole answer takes about a
    second, so the client sees the first pieces long before the turn is saved)."""
    return {**answer(text, done, **extra), "chunk_size": 4, "chunk_delay": 0.05}


def classified(url: str) -> dict[str, Any]:
    """The helpdesk with a first node whose answer is only data (no text field)."""
    flow = helpdesk(url)
    flow["id"] = "triage"
    flow["nodes"][0] = {
        "name": "classify", "type": "aiagent", "start": True, "llmConfig": {"url": url, "apiKey": "k"},
        "userMessage": "{{userInput}}",
        "output": {"schema": {"type": "object", "properties": {"topic": {"type": "string"}},
                              "required": ["topic"]}},
        "agentOutcomes": [{"condition": 'true', "transition": {"targetId": "agent"}, "finish": False}]}
    return flow


def test_openai_stream_sends_a_flow_answer_as_it_is_written(fake_llm: Any, serve_flows: Any) -> None:
    llm = fake_llm([streamed(LONG)])
    srv = serve_flows({"helpdesk.json": helpdesk(llm.url)})
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    session = srv.url + "/api/v1/flows/helpdesk/sessions/ann"

    pieces: list[str] = []
    saved_while_streaming: list[bool] = []
    stream = client.chat.completions.create(model="helpdesk", user="ann", stream=True,
                                            messages=[{"role": "user", "content": "My printer is broken"}])
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
            if len(pieces) == 3:  # the greeting, then two pieces of the agent's answer
                saved_while_streaming.append(httpx.get(session).json()["exists"])
    assert saved_while_streaming == [False]  # the pieces came before the turn ended (and was saved)
    assert pieces[0] == "Hello!"
    assert len(pieces) >= 10 and all(len(p) < 10 for p in pieces[2:])  # the answer in many pieces
    assert "".join(pieces) == "Hello!\n\n" + LONG
    assert '{' not in "".join(pieces) and "response" not in "".join(pieces)
    assert llm.chat_requests[0].body["stream"] is True

    view = httpx.get(session).json()
    assert view["variables"]["agent"]["response"] == LONG  # what was streamed is what the turn stored


def test_openai_stream_leaks_no_json_and_repeats_nothing_on_a_retry(fake_llm: Any, serve_flows: Any) -> None:
    # classify answers data only; the agent's first answer lacks `done` (asked again), the second is valid
    pace = {"chunk_size": 4, "chunk_delay": 0.01}
    llm = fake_llm([{"text": json.dumps({"topic": "printers"}), **pace},
                    {"text": json.dumps({"response": LONG}), **pace},
                    streamed(LONG)])
    srv = serve_flows({"triage.json": classified(llm.url)})
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    stream = client.chat.completions.create(model="triage", user="bob", stream=True,
                                            messages=[{"role": "user", "content": "printer"}])
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert len(llm.chat_requests) == 3  # classify, the invalid answer, the asked-again one
    assert "".join(pieces) == LONG  # classify says nothing; the second answer's text is not sent again
    assert len(pieces) >= 10
    assert not any("{" in p or "topic" in p or "printers" in p for p in pieces)
    view = httpx.get(srv.url + "/api/v1/flows/triage/sessions/bob").json()
    assert view["variables"]["agent"] == {"response": LONG, "done": False}
    assert view["variables"]["classify"] == {"topic": "printers"}


def test_flow_sse_streams_text_deltas_when_asked(fake_llm: Any, serve_flows: Any) -> None:
    llm = fake_llm([streamed(LONG), answer("Plain."), streamed("Fixed.", done=True)])
    srv = serve_flows({"helpdesk.json": helpdesk(llm.url)})
    url = srv.url + "/api/v1/flows/helpdesk/sessions/s1"

    events: list[tuple[str, dict[str, Any]]] = []
    saved_while_streaming: list[bool] = []
    with httpx.stream("POST", url + "/messages", json={"text": "help", "deltas": True}, timeout=30) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        buffer = ""
        for text in resp.iter_text():
            buffer += text
            while "\n\n" in buffer:
                block, buffer = buffer.split("\n\n", 1)
                lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
                events.append((lines["event"], orjson.loads(lines["data"])))
                if [k for k, _ in events].count("text_delta") == 2 and not saved_while_streaming:
                    saved_while_streaming.append(httpx.get(url).json()["exists"])
    assert saved_while_streaming == [False]
    deltas = [d for k, d in events if k == "text_delta"]
    assert len(deltas) >= 10 and all(d["node"] == "agent" and set(d) == {"event", "node", "text"}
                                     for d in deltas)
    message = next(d for k, d in events if k == "message" and d["node"] == "agent")
    assert "".join(d["text"] for d in deltas) == message["content"] == LONG
    # the deltas come before the node's message; without them the events are those of a turn without
    kinds = [k for k, _ in events]
    assert kinds.index("message", 2) > max(i for i, k in enumerate(kinds) if k == "text_delta")
    assert [k for k in kinds if k != "text_delta"] == ["node", "message", "node", "output", "message",
                                                      "turn_end"]

    # without `deltas` the route is as before: no text_delta, the model called without streaming
    plain = sse_events(httpx.post(url + "/messages", json={"text": "more"}, timeout=30))
    assert [k for k, _ in plain] == ["node", "output", "message", "turn_end"]
    assert llm.chat_requests[1].body.get("stream") in (None, False)
    assert httpx.post(url + "/messages", json={"text": "x", "deltas": "yes"}).status_code == 400

    # `deltas` with a JSON answer changes nothing: the JSON form has no deltas
    done = httpx.post(url + "/messages", json={"text": "thanks", "deltas": True, "stream": False},
                      timeout=30).json()
    assert [e["event"] for e in done["events"]] == ["node", "output", "message", "node", "message",
                                                    "turn_end"]
    assert [m["content"] for m in done["messages"]] == ["Fixed.", "Goodbye."]
