"""The server with real clients: the openai SDK, raw SSE over httpx, RuleGo's rule routes, auth, limits."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import openai
import orjson


def agent_doc(url: str, **extra: Any) -> dict[str, Any]:
    return {"id": "helper", "type": "ai/agent", "name": "helper",
            "configuration": {"url": url, "key": "unused", "model": "fake-model", "maxRetries": -1,
                              "systemPrompt": "You help.", **extra}}


def echo_chain() -> dict[str, Any]:
    return {"ruleChain": {"id": "echo", "name": "Echo", "configuration": {"secrets": {"token": "s3cret"}}},
            "metadata": {"nodes": [{"id": "t", "type": "jsTransform", "configuration": {
                "jsScript": "metadata.seen = 'yes'; msg.n = msg.n * 2; return {msg: msg, metadata: metadata, "
                            "msgType: msgType};"}}],
                "connections": []}}


def agent_chain(url: str) -> dict[str, Any]:
    return {"ruleChain": {"id": "chat", "name": "Chat"},
            "metadata": {"nodes": [{"id": "a", "type": "ai/agent", "configuration": {
                "url": url, "key": "unused", "model": "fake-model", "maxRetries": -1,
                "tools": [{"type": "rulechain", "targetId": "echo", "name": "double",
                           "description": "Double n"}]}}],
                "connections": []}}


def test_openai_sdk_sync_and_stream_against_an_agent(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "Paris is the capital."}, {"text": "It has 2.1 million people.", "chunks": 4}])
    srv = serve({"helper.json": agent_doc(llm.url)})
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")

    models = [m.id for m in client.models.list()]
    assert models == ["helper"]

    done = client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "Capital?"}])
    assert done.choices[0].message.content == "Paris is the capital."
    assert done.choices[0].finish_reason == "stop"
    assert done.usage is not None and done.usage.total_tokens > 0
    # the agent got the client's conversation, under its own system prompt
    sent = llm.chat_requests[0].messages
    assert [m["role"] for m in sent] == ["system", "user"] and sent[1]["content"] == "Capital?"

    chunks = list(client.chat.completions.create(
        model="helper", stream=True, messages=[{"role": "user", "content": "How many people?"}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "It has 2.1 million people."
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 4
    assert chunks[-1].choices[0].finish_reason == "stop"


def _sse(resp: httpx.Response) -> list[Any]:
    out: list[Any] = []
    for line in resp.text.split("\n\n"):
        if line.startswith("data: "):
            payload = line[6:]
            out.append(payload if payload == "[DONE]" else orjson.loads(payload))
    return out


def test_rulego_chat_route_streams_frames_and_agui_tool_frames(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"tool_calls": [{"name": "double", "arguments": {"n": 21}}]}, {"text": "Doubled: 42"}],
                   loop=True)
    srv = serve({"echo.json": echo_chain(), "chat.json": agent_chain(llm.url)})
    body = {"model": "x", "stream": True, "messages": [{"role": "user", "content": "double 21"}]}
    url = srv.url + "/api/v1/rules/chat/v1/chat/completions"

    plain = httpx.post(url, json=body, timeout=30)
    assert plain.status_code == 200
    for h, v in (("content-type", "text/event-stream"), ("cache-control", "no-cache, no-transform"),
                 ("x-accel-buffering", "no")):
        assert plain.headers[h].startswith(v)
    frames = _sse(plain)
    assert frames[-1] == "[DONE]"
    assert frames[-2]["choices"][0]["finish_reason"] == "stop"
    assert "".join(f["choices"][0]["delta"].get("content", "") for f in frames[:-1]) == "Doubled: 42"
    assert not any("tool_calls" in f["choices"][0]["delta"] for f in frames[:-1])

    agui = httpx.post(url, json=body, headers={"X-Stream-Protocol": "agui"}, timeout=30)
    tool_frames = [f["choices"][0]["delta"]["tool_calls"][0] for f in _sse(agui)[:-1]
                   if "tool_calls" in f["choices"][0]["delta"]]
    assert [t["type"] for t in tool_frames] == ["TOOL_CALL_START", "TOOL_CALL_RESULT"]
    assert tool_frames[0]["arguments"] == {"n": 21}
    assert orjson.loads(tool_frames[1]["content"]) == {"n": 42}


def test_agent_stream_sends_tool_frames_only_to_agui_clients(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"tool_calls": [{"name": "double", "arguments": {"n": 21}}]},
                    {"text": "Doubled: 42", "chunks": 3}], loop=True)
    tools = [{"type": "rulechain", "targetId": "echo", "name": "double", "description": "Double n"}]
    srv = serve({"echo.json": echo_chain(), "helper.json": agent_doc(llm.url, tools=tools)})
    body = {"model": "helper", "stream": True, "messages": [{"role": "user", "content": "double 21"}]}
    url = srv.url + "/v1/chat/completions"

    agui = ["TOOL_CALL_START", "TOOL_CALL_RESULT"]
    for headers, expected in (({}, []), ({"X-Stream-Protocol": "agui"}, agui)):
        frames = _sse(httpx.post(url, json=body, headers=headers, timeout=30))
        assert frames[-1] == "[DONE]" and frames[-2]["choices"][0]["finish_reason"] == "stop"
        deltas = [f["choices"][0]["delta"] for f in frames[:-1]]
        assert "".join(d.get("content", "") for d in deltas) == "Doubled: 42"
        assert [d["tool_calls"][0]["type"] for d in deltas if "tool_calls" in d] == expected
    non_streamed = httpx.post(url, json={**body, "stream": False}, timeout=30).json()
    assert non_streamed["choices"][0]["message"]["content"] == "Doubled: 42"


def test_chain_post_then_execute_and_secrets_never_returned(serve: Any) -> None:
    srv = serve({"echo.json": echo_chain()})
    new = echo_chain()
    new["ruleChain"] = {"id": "ignored", "name": "Posted", "configuration": {"secrets": {"k": "hidden"}}}
    r = httpx.post(srv.url + "/api/v1/rules/posted", json=new)
    assert r.status_code == 200 and r.content == b"", r.text  # RuleGo's answer to a save
    assert {c["ruleChain"]["id"] for c in httpx.get(srv.url + "/api/v1/rules").json()["items"]} == \
        {"echo", "posted"}

    dsl = httpx.get(srv.url + "/api/v1/rules/posted").json()
    assert "secrets" not in (dsl["ruleChain"].get("configuration") or {})
    assert "hidden" not in orjson.dumps(dsl).decode()

    plain = httpx.post(srv.url + "/api/v1/rules/posted/execute/TELEMETRY?city=Lyon", json={"n": 5})
    assert plain.headers["content-type"] == "application/json" and orjson.loads(plain.text) == {"n": 10}
    out = httpx.post(srv.url + "/api/v1/rules/posted/execute/TELEMETRY?city=Lyon&_ends=true",
                     json={"n": 5}).json()
    (end,) = out["ends"]
    assert end["relation"] == "Success" and end["error"] is None
    assert orjson.loads(end["msg"]["data"]) == {"n": 10}
    assert end["msg"]["type"] == "TELEMETRY"
    assert end["msg"]["metadata"] == {"city": "Lyon", "seen": "yes"}

    bad = httpx.post(srv.url + "/api/v1/rules/broken", json={"ruleChain": {"id": "b"}, "metadata": {
        "nodes": [{"id": "n", "type": "noSuchNode"}],
        "connections": [{"fromId": "n", "toId": "gone", "type": "Success"}]}})
    assert bad.status_code == 400
    assert "noSuchNode" in bad.text and "gone" in bad.text
    assert httpx.get(srv.url + "/api/v1/rules/broken").status_code == 404

    assert httpx.delete(srv.url + "/api/v1/rules/posted").status_code == 200
    assert httpx.post(srv.url + "/api/v1/rules/posted/execute/T", json={}).status_code == 404


def _key(k: str) -> str:
    return hashlib.sha256(k.encode()).hexdigest()


def test_api_keys_permissions_and_ids(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "ok"}], loop=True)
    keys = {"keys": [{"name": "runner", "sha256": _key("run-key"), "ids": ["helper"],
                      "permissions": ["read", "execute"]},
                     {"name": "reader", "sha256": _key("read-key"), "permissions": ["read"]}]}
    srv = serve({"helper.json": agent_doc(llm.url), "echo.json": echo_chain()}, keys=keys)
    chat = {"model": "helper", "messages": [{"role": "user", "content": "hi"}]}

    r = httpx.post(srv.url + "/v1/chat/completions", json=chat)
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    r = httpx.post(srv.url + "/v1/chat/completions", json=chat, headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401
    r = httpx.post(srv.url + "/v1/chat/completions", json=chat, headers={"Authorization": "Bearer read-key"})
    assert r.status_code == 403 and r.json()["error"]["type"] == "permission_error"
    r = httpx.post(srv.url + "/v1/chat/completions", json=chat, headers={"Authorization": "Bearer run-key"})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "ok"
    # the runner key is limited to `helper`: the echo chain is refused to it, and not listed
    r = httpx.post(srv.url + "/api/v1/rules/echo/execute/T", json={"n": 1},
                   headers={"Authorization": "Bearer run-key"})
    assert r.status_code == 403
    models = httpx.get(srv.url + "/v1/models", headers={"Authorization": "Bearer run-key"}).json()
    assert [m["id"] for m in models["data"]] == ["helper"]
    # writing needs the write permission
    r = httpx.post(srv.url + "/api/v1/rules/x", json=echo_chain(),
                   headers={"Authorization": "Bearer read-key"})
    assert r.status_code == 403
    assert httpx.get(srv.url + "/healthz").json() == {"status": "ok"}


def test_bad_input_gets_a_clear_4xx_and_changes_nothing(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "fine"}])
    srv = serve({"helper.json": agent_doc(llm.url), "echo.json": echo_chain()}, body_limit=4096)
    url = srv.url + "/v1/chat/completions"
    cases = [
        (httpx.post(url, content=b"{not json"), 400, "not valid JSON"),
        (httpx.post(url, json=[1, 2]), 400, "JSON object"),
        (httpx.post(url, json={"model": "helper", "messages": "hi"}), 400,
         "messages must be a non-empty list"),
        (httpx.post(url, json={"model": "helper", "messages": [{"role": "wizard", "content": "x"}]}), 400,
         "role"),
        (httpx.post(url, json={"model": "helper", "stream": "yes", "messages": [{"role": "user"}]}), 400,
         "'stream'"),
        (httpx.post(url, json={"model": "nobody", "messages": [{"role": "user", "content": "x"}]}), 404,
         "nobody"),
        (httpx.post(url, json={"model": "helper", "messages": [{"role": "user", "content": "x" * 5000}]}),
         413, "limit"),
        (httpx.post(srv.url + "/api/v1/rules/..%2F..%2Fetc/execute/T", json={}), 404, "Not Found"),
        (httpx.post(srv.url + "/api/v1/rules/%2e%2e/execute/T", json={}), 400, "'..'"),
    ]
    for resp, status, needle in cases:
        assert resp.status_code == status, resp.text
        assert needle in resp.json()["error"]["message"], resp.text
    # a body streamed without Content-Length is refused past the limit too
    def chunks() -> Any:
        for _ in range(10):
            yield b"x" * 1000
    r = httpx.post(srv.url + "/api/v1/rules/echo/execute/T", content=chunks())
    assert r.status_code == 413
    assert llm.chat_requests == []  # nothing reached the model
    r = httpx.post(url, json={"model": "helper", "messages": [{"role": "user", "content": "ok?"}]})
    assert r.json()["choices"][0]["message"]["content"] == "fine"


def test_a_failing_model_is_a_stream_error_frame(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"status": 401, "message": "bad key"}, {"status": 401, "message": "bad key"}])
    srv = serve({"helper.json": agent_doc(llm.url)})
    body = {"model": "helper", "messages": [{"role": "user", "content": "hi"}]}
    r = httpx.post(srv.url + "/v1/chat/completions", json=body)
    assert r.status_code == 500 and "401" in r.json()["error"]["message"]
    frames = _sse(httpx.post(srv.url + "/v1/chat/completions", json={**body, "stream": True}))
    assert frames[-1]["error"]["type"] == "stream_error"
    assert "401" in frames[-1]["error"]["message"]


def test_a_served_agent_uses_the_served_chains_as_tools(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"tool_calls": [{"name": "double", "arguments": {"n": 4}}]}, {"text": "8"}])
    doc = agent_doc(llm.url, tools=[{"type": "rulechain", "targetId": "echo", "name": "double",
                                     "description": "Double n"}])
    # "a_helper.json" sorts before "echo.json": chains still load first
    srv = serve({"a_helper.json": doc, "echo.json": echo_chain()})
    r = httpx.post(srv.url + "/v1/chat/completions",
                   json={"model": "helper", "messages": [{"role": "user", "content": "double 4"}]},
                   timeout=30)
    assert r.json()["choices"][0]["message"]["content"] == "8"
    tool_msg = llm.chat_requests[1].messages[-1]
    assert tool_msg["role"] == "tool" and orjson.loads(tool_msg["content"]) == {"n": 8}
