"""The runs API against a real server: start (sync, stream, detached), events over SSE with ids and a
Last-Event-ID reconnect, cancel, resume with answers, bad input, permissions. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import httpx

from chainreact.state import open_store
from chainreact.state.checkpoint import RunSnapshot, save_snapshot
from chainreact.types import Message
from tests.server.runs_helpers import agent_doc, sse_events, wait_status

TEXT = "one two three four five six seven eight nine ten eleven twelve"


def test_detached_run_events_resume_after_a_reconnect_without_gaps_or_duplicates(
        fake_llm: Any, serve: Any, store_url: str) -> None:
    llm = fake_llm([{"text": TEXT, "chunks": 12, "chunk_delay": 0.05}])
    srv = serve({"helper.json": agent_doc(llm.url)}, state=store_url)
    r = httpx.post(f"{srv.url}/api/v1/agents/helper/runs", json={"input": "count", "detached": True},
                   timeout=10)
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    assert r.headers["location"] == f"/api/v1/runs/{run_id}"

    seen: list[dict[str, Any]] = []
    with httpx.stream("GET", f"{srv.url}/api/v1/runs/{run_id}/events", timeout=10) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        for frame in sse_events(resp.iter_lines()):
            seen.append(frame)
            if len([f for f in seen if f["event"] == "text_delta"]) == 3:
                break  # the client goes away mid-run
    last = seen[-1]["id"]
    assert last is not None and last >= 3
    with httpx.stream("GET", f"{srv.url}/api/v1/runs/{run_id}/events", timeout=10,
                      headers={"Last-Event-ID": str(last)}) as resp:
        rest = list(sse_events(resp.iter_lines()))
    assert rest[-1]["event"] == "end" and rest[-1]["id"] is None
    assert rest[-1]["data"] == {"id": run_id, "status": "done"}
    events = seen + rest[:-1]
    ids = [f["id"] for f in events]
    assert ids == list(range(1, len(ids) + 1))  # no gap, no duplicate across the reconnect
    text = "".join(f["data"]["text"] for f in events if f["event"] == "text_delta")
    assert text == TEXT
    assert events[0]["event"] == "run_start" and events[-1]["event"] == "final"
    assert all(f["data"]["run_id"] == run_id for f in events)

    view = httpx.get(f"{srv.url}/api/v1/runs/{run_id}", timeout=10).json()
    assert view["status"] == "done" and view["result"] == {"content": TEXT, "stop_reason": "stop"}
    assert view["agent"] == "helper" and view["last_event_id"] == ids[-1] and view["live"] is False
    # ?after= is the same as Last-Event-ID (for clients that cannot set headers)
    tail = httpx.get(f"{srv.url}/api/v1/runs/{run_id}/events?after={ids[-2]}", timeout=10)
    assert [f["id"] for f in sse_events(iter(tail.text.split("\n")))] == [ids[-1], None]


def test_streaming_and_synchronous_runs(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "streamed answer", "chunks": 3}, {"text": "plain answer"}])
    srv = serve({"helper.json": agent_doc(llm.url)})  # no --state: runs kept in memory
    with httpx.stream("POST", f"{srv.url}/api/v1/agents/helper/runs",
                      json={"messages": [{"role": "user", "content": "hi"}], "stream": True},
                      timeout=10) as resp:
        assert resp.status_code == 200
        run_id = resp.headers["x-run-id"]
        frames = list(sse_events(resp.iter_lines()))
    assert [f["data"]["text"] for f in frames if f["event"] == "text_delta"] == ["strea", "med a", "nswer"]
    assert frames[-2]["event"] == "final" and frames[-2]["data"]["content"] == "streamed answer"
    assert frames[-1] == {"id": None, "event": "end", "data": {"id": run_id, "status": "done"}}

    r = httpx.post(f"{srv.url}/api/v1/agents/helper/runs", json={"input": {"q": "x"}}, timeout=10)
    assert r.status_code == 200
    view = r.json()
    assert view["status"] == "done" and view["result"]["content"] == "plain answer"
    assert llm.chat_requests[1].messages[-1] == {"role": "user", "content": '{"q":"x"}'}
    assert view["session"] is None


def test_cancel_a_detached_run_and_what_cancel_refuses(fake_llm: Any, serve: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "x" * 400, "chunks": 400, "chunk_delay": 0.05}])
    srv = serve({"helper.json": agent_doc(llm.url)}, state=f"sqlite:///{tmp_path}/s.db", grace=2)
    run_id = httpx.post(f"{srv.url}/api/v1/agents/helper/runs", json={"input": "go", "detached": True},
                        timeout=10).json()["id"]
    with httpx.stream("GET", f"{srv.url}/api/v1/runs/{run_id}/events", timeout=10) as resp:
        frames = sse_events(resp.iter_lines())
        for f in frames:
            if f["event"] == "text_delta":
                break  # the model is streaming: cancel now
        bad = httpx.post(f"{srv.url}/api/v1/runs/{run_id}/cancel", json={"mode": "sometimes"}, timeout=10)
        assert bad.status_code == 400 and "unknown cancel mode" in bad.json()["error"]["message"]
        ok = httpx.post(f"{srv.url}/api/v1/runs/{run_id}/cancel", json={"mode": "immediate"}, timeout=10)
        assert ok.status_code == 202 and ok.json()["status"] == "cancelling"
        rest = list(frames)
    assert rest[-2]["event"] == "cancelled" and rest[-1]["data"]["status"] == "cancelled"
    assert [m["role"] for m in rest[-2]["data"]["messages"]][-1] == "user"
    view = wait_status(srv.url, run_id)
    assert view["status"] == "cancelled"
    again = httpx.post(f"{srv.url}/api/v1/runs/{run_id}/cancel", timeout=10)
    assert again.status_code == 409 and again.json()["error"]["code"] == "not_running"
    assert httpx.post(f"{srv.url}/api/v1/runs/{run_id}/resume", json={"answers": {}},
                      timeout=10).status_code == 409


def test_interrupted_run_resumed_with_answers(fake_llm: Any, serve: Any, store_url: str) -> None:
    llm = fake_llm([
        {"tool_calls": [{"id": "q1", "name": "ask_user",
                         "arguments": {"question": "Which unit?", "schema": {"enum": ["C", "F"]}}}]},
        {"text": "It is 70 F."},
    ])
    srv = serve({"helper.json": agent_doc(llm.url, tools=["ask_user"])}, state=store_url)
    r = httpx.post(f"{srv.url}/api/v1/agents/helper/runs", json={"input": "weather?"}, timeout=10)
    view = r.json()
    assert view["status"] == "interrupted", view
    questions = [(q["id"], q["kind"], q["question"]) for q in view["questions"]]
    assert questions == [("q1", "ask_user", "Which unit?")]
    run_id = view["id"]
    assert httpx.get(f"{srv.url}/api/v1/runs/{run_id}", timeout=10).json()["questions"] == view["questions"]

    bad = httpx.post(f"{srv.url}/api/v1/runs/{run_id}/resume", json={"answers": {"q1": "Kelvin"}}, timeout=10)
    assert bad.status_code == 400 and "does not match" in bad.json()["error"]["message"]
    assert httpx.get(f"{srv.url}/api/v1/runs/{run_id}", timeout=10).json()["status"] == "interrupted"
    assert len(llm.chat_requests) == 1  # a refused answer ran nothing

    with httpx.stream("POST", f"{srv.url}/api/v1/runs/{run_id}/resume",
                      json={"answers": {"q1": "F"}, "stream": True}, timeout=10) as resp:
        assert resp.status_code == 200
        frames = list(sse_events(resp.iter_lines()))
    # the stream of a resume replays the run's log from the start, then goes on: one log per run
    ids = [f["id"] for f in frames[:-1]]
    assert ids == list(range(1, len(ids) + 1))
    types = [f["event"] for f in frames]
    assert types.index("interrupted") < types.index("final") and types[-1] == "end"
    assert frames[-1]["data"]["status"] == "done"
    tool_msgs = [m for m in llm.chat_requests[1].messages if m["role"] == "tool"]
    assert tool_msgs == [{"role": "tool", "tool_call_id": "q1", "content": "F"}]
    done = httpx.get(f"{srv.url}/api/v1/runs/{run_id}", timeout=10).json()
    assert done["status"] == "done" and done["result"]["content"] == "It is 70 F." and done["questions"] == []


def test_bad_input_gets_a_clear_4xx_and_changes_nothing(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "never"}])
    srv = serve({"helper.json": agent_doc(llm.url)})
    base = f"{srv.url}/api/v1"

    def post(path: str, **kw: Any) -> httpx.Response:
        return httpx.post(base + path, timeout=10, **kw)

    assert post("/agents/nobody/runs", json={"input": "x"}).status_code == 404
    assert post("/agents/helper/runs", content=b"{not json").json()["error"]["code"] == "invalid_json"
    assert post("/agents/helper/runs", json=[1]).status_code == 400
    assert post("/agents/helper/runs", json={}).json()["error"]["code"] == "invalid_body"
    assert post("/agents/helper/runs", json={"input": "x", "stream": "yes"}).status_code == 400
    assert post("/agents/helper/runs", json={"messages": [{"role": "wizard"}]}).status_code == 400
    no_store = post("/agents/helper/runs", json={"input": "x", "session": "s"})
    assert no_store.status_code == 400 and no_store.json()["error"]["code"] == "sessions_disabled"
    assert httpx.get(f"{base}/runs/nope", timeout=10).status_code == 404
    assert httpx.get(f"{base}/runs/bad%20id", timeout=10).json()["error"]["code"] == "invalid_run_id"
    for trick in ("..%2F..%2Fetc%2Fpasswd", "%2E%2E", "a" * 65):
        r = httpx.get(f"{base}/runs/{trick}", timeout=10)
        assert 400 <= r.status_code < 500, trick
    assert post("/runs/nope/cancel").status_code == 404
    assert post("/runs/nope/resume", json={"answers": {}}).status_code == 404
    assert len(llm.chat_requests) == 0

    run_id = post("/agents/helper/runs", json={"input": "x"}).json()["id"]
    events = httpx.get(f"{base}/runs/{run_id}/events", headers={"Last-Event-ID": "-1"}, timeout=10)
    assert events.status_code == 400 and events.json()["error"]["code"] == "invalid_event_id"
    assert post(f"/runs/{run_id}/resume", json={"answers": []}).status_code == 400
    assert post(f"/runs/{run_id}/cancel", json={"timeout": "soon"}).status_code == 400


def test_run_permissions(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "ok"}], loop=True)

    def key(name: str, perms: list[str], ids: list[str]) -> dict[str, Any]:
        return {"name": name, "sha256": hashlib.sha256(name.encode()).hexdigest(), "ids": ids,
                "permissions": perms}

    keys = {"keys": [key("runner", ["read", "execute"], ["helper"]), key("reader", ["read"], ["*"]),
                     key("other", ["read", "execute"], ["someone-else"])]}
    srv = serve({"helper.json": agent_doc(llm.url)}, keys=keys)
    base = f"{srv.url}/api/v1"

    def auth(k: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {k}"}

    assert httpx.post(f"{base}/agents/helper/runs", json={"input": "x"}, timeout=10).status_code == 401
    assert httpx.post(f"{base}/agents/helper/runs", json={"input": "x"}, headers=auth("reader"),
                      timeout=10).status_code == 403
    assert httpx.post(f"{base}/agents/helper/runs", json={"input": "x"}, headers=auth("other"),
                      timeout=10).status_code == 403
    r = httpx.post(f"{base}/agents/helper/runs", json={"input": "x"}, headers=auth("runner"), timeout=10)
    run_id = r.json()["id"]
    assert httpx.get(f"{base}/runs/{run_id}", headers=auth("reader"), timeout=10).json()["status"] == "done"
    assert httpx.get(f"{base}/runs/{run_id}", headers=auth("other"), timeout=10).status_code == 403
    assert httpx.get(f"{base}/runs/{run_id}/events", headers=auth("other"), timeout=10).status_code == 403
    assert httpx.post(f"{base}/runs/{run_id}/cancel", headers=auth("reader"), timeout=10).status_code == 403
    assert httpx.post(f"{base}/runs/{run_id}/resume", headers=auth("reader"), json={"answers": {}},
                      timeout=10).status_code == 403


def chat_chain(url: str) -> dict[str, Any]:
    return {"ruleChain": {"id": "chat", "name": "Chat"},
            "metadata": {"nodes": [{"id": "a", "type": "ai/agent", "configuration": {
                "url": url, "key": "unused", "model": "fake-model", "maxRetries": -1}}], "connections": []}}


def test_chain_runs(fake_llm: Any, serve: Any, store_url: str) -> None:
    llm = fake_llm([{"text": "chained answer", "chunks": 3},
                    {"text": "x" * 300, "chunks": 300, "chunk_delay": 0.05}])
    srv = serve({"chat.json": chat_chain(llm.url)}, state=store_url)
    base = f"{srv.url}/api/v1"
    with httpx.stream("POST", f"{base}/rules/chat/runs", json={"input": "hello", "stream": True},
                      timeout=10) as resp:
        assert resp.status_code == 200
        run_id = resp.headers["x-run-id"]
        frames = list(sse_events(resp.iter_lines()))
    assert frames[0]["event"] == "run_start"
    assert "".join(f["data"]["text"] for f in frames if f["event"] == "text_delta") == "chained answer"
    assert frames[-2]["event"] == "final" and frames[-1]["data"] == {"id": run_id, "status": "done"}
    assert [f["id"] for f in frames[:-1]] == list(range(1, len(frames)))
    view = httpx.get(f"{base}/runs/{run_id}", timeout=10).json()
    assert (view["kind"], view["chain"], view["agent"], view["status"]) == ("chain", "chat", None, "done")
    assert view["result"] == {"content": "chained answer", "stop_reason": "stop"}
    assert llm.chat_requests[0].messages[-1] == {"role": "user", "content": "hello"}

    slow = httpx.post(f"{base}/rules/chat/runs", json={"input": "more", "detached": True}, timeout=10).json()
    with httpx.stream("GET", f"{base}/runs/{slow['id']}/events", timeout=10) as resp:
        events = sse_events(resp.iter_lines())
        for f in events:
            if f["event"] == "text_delta":
                break
        refused = httpx.post(f"{base}/runs/{slow['id']}/cancel", json={"mode": "after_tools"}, timeout=10)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_mode"
        assert httpx.post(f"{base}/runs/{slow['id']}/cancel", timeout=10).status_code == 202
        rest = list(events)
    assert rest[-2]["event"] == "cancelled" and rest[-1]["data"]["status"] == "cancelled"
    assert wait_status(srv.url, slow["id"])["status"] == "cancelled"
    assert httpx.post(f"{base}/runs/{slow['id']}/resume", json={"answers": {}}, timeout=10).status_code == 409
    assert httpx.post(f"{base}/rules/nochain/runs", json={"input": "x"}, timeout=10).status_code == 404
    assert httpx.post(f"{base}/rules/chat/runs", json={"input": "x", "session": 42},
                      timeout=10).status_code == 400  # chain runs take a session (test_chain_sessions.py)


def test_a_run_left_running_by_a_dead_server_is_resumed(fake_llm: Any, serve: Any, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"

    async def leave_running() -> None:  # what a server killed mid-run leaves in the store
        async with await open_store(url) as store:
            snap = RunSnapshot("deadbeef01", "running", step=1, agent="helper", extra={"target": "helper"},
                               messages=[Message("system", "You help."), Message("user", "Still there?")])
            await save_snapshot(store, snap)
            await store.append_events("deadbeef01", [("run_start", {"type": "run_start"})])

    asyncio.run(leave_running())
    llm = fake_llm([{"text": "Yes."}])
    srv = serve({"helper.json": agent_doc(llm.url)}, state=url)
    base = f"{srv.url}/api/v1/runs/deadbeef01"
    assert httpx.get(base, timeout=10).json()["status"] == "running"
    refused = httpx.post(f"{base}/resume", json={"answers": {"q": 1}}, timeout=10)
    assert refused.status_code == 400 and "takes no answers" in refused.json()["error"]["message"]
    done = httpx.post(f"{base}/resume", json={}, timeout=10).json()
    assert done["status"] == "done" and done["result"]["content"] == "Yes."
    assert [m["content"] for m in llm.chat_requests[0].messages] == ["You help.", "Still there?"]
    events = httpx.get(f"{base}/events", timeout=10)
    ids = [f["id"] for f in sse_events(iter(events.text.split("\n"))) if f["id"] is not None]
    assert ids == list(range(1, len(ids) + 1)) and len(ids) > 1  # the log goes on after the old event
