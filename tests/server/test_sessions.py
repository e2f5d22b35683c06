"""Sessions (`user` / X-Session-Key on chat completions, `session` on runs) and disconnects that cancel."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import openai

from chainreact.state import open_store
from tests.server.runs_helpers import agent_doc, sse_events, wait_status


def _history(url: str, session: str) -> list[tuple[str, str]]:
    async def read() -> list[tuple[str, str]]:
        async with await open_store(url) as store:
            return [(m.role, m.content or "") for m in await store.history(session)]
    return asyncio.run(read())


def test_chat_user_is_the_session_key(fake_llm: Any, serve: Any, store_url: str) -> None:
    llm = fake_llm([{"text": "Hello Ann."}, {"text": "Your name is Ann."}, {"text": "Still Ann."},
                    {"text": "Who?"}])
    srv = serve({"helper.json": agent_doc(llm.url)}, state=store_url)
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")

    first = client.chat.completions.with_raw_response.create(
        model="helper", user="ann", messages=[{"role": "user", "content": "I am Ann."}])
    assert first.headers["x-run-id"]
    assert first.parse().choices[0].message.content == "Hello Ann."
    # streaming, only the new message: the history comes from the store
    chunks = list(client.chat.completions.create(model="helper", user="ann", stream=True,
                                                 messages=[{"role": "user", "content": "My name?"}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Your name is Ann."
    sent = [(m["role"], m["content"]) for m in llm.chat_requests[1].messages]
    assert sent == [("system", "You help."), ("user", "I am Ann."), ("assistant", "Hello Ann."),
                    ("user", "My name?")]
    # a chat UI sending the whole conversation again: the stored part is not counted twice
    whole = [{"role": "user", "content": "I am Ann."}, {"role": "assistant", "content": "Hello Ann."},
             {"role": "user", "content": "My name?"}, {"role": "assistant", "content": "Your name is Ann."},
             {"role": "user", "content": "Sure?"}]
    httpx.post(f"{srv.url}/v1/chat/completions", headers={"X-Session-Key": "ann"}, timeout=10,
               json={"model": "helper", "messages": whole})
    sent = [m["content"] for m in llm.chat_requests[2].messages]
    assert sent == ["You help.", "I am Ann.", "Hello Ann.", "My name?", "Your name is Ann.", "Sure?"]
    # another session knows nothing of it; no session, stateless
    client.chat.completions.create(model="helper", user="bob", messages=[{"role": "user", "content": "Me?"}])
    assert [m["content"] for m in llm.chat_requests[3].messages] == ["You help.", "Me?"]
    assert _history(store_url, "agent:helper:ann") == [
        ("user", "I am Ann."), ("assistant", "Hello Ann."), ("user", "My name?"),
        ("assistant", "Your name is Ann."), ("user", "Sure?"), ("assistant", "Still Ann.")]


def test_two_agents_given_the_same_user_keep_two_conversations(fake_llm: Any, serve: Any,
                                                                  tmp_path: Path) -> None:
    """OpenAI clients put their end-user's id in `user`: one user talking to two agents of a server must
    not hand the second agent the first one's answers as its own."""
    url = f"sqlite:///{tmp_path}/s.db"
    llm = fake_llm([{"text": "Refund noted."}, {"text": "Hello."}, {"text": "Still noted."}])
    srv = serve({"support.json": agent_doc(llm.url, "support"), "sales.json": agent_doc(llm.url, "sales")},
                state=url)
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    for model, text in (("support", "I want a refund."), ("sales", "Hi."), ("support", "And?")):
        client.chat.completions.create(model=model, user="ann", messages=[{"role": "user", "content": text}])
    assert [m["content"] for m in llm.chat_requests[1].messages] == ["You help.", "Hi."]
    assert [m["content"] for m in llm.chat_requests[2].messages] == [
        "You help.", "I want a refund.", "Refund noted.", "And?"]
    assert [c for _, c in _history(url, "agent:sales:ann")] == ["Hi.", "Hello."]
    assert _history(url, "ann") == []  # nothing under the bare key


def test_runs_api_session(fake_llm: Any, serve: Any, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    llm = fake_llm([{"text": "Noted."}, {"text": "Blue."}])
    srv = serve({"helper.json": agent_doc(llm.url)}, state=url)
    for text in ("My colour is blue.", "My colour?"):
        r = httpx.post(f"{srv.url}/api/v1/agents/helper/runs", json={"input": text, "session": "c1"},
                       timeout=10)
        assert r.json()["status"] == "done" and r.json()["session"] == "c1"
    assert [m["content"] for m in llm.chat_requests[1].messages] == [
        "You help.", "My colour is blue.", "Noted.", "My colour?"]
    assert len(_history(url, "agent:helper:c1")) == 4
    bad = httpx.post(f"{srv.url}/v1/chat/completions", timeout=10,
                     json={"model": "helper", "user": 42, "messages": [{"role": "user", "content": "x"}]})
    assert bad.status_code == 400 and "'user'" in bad.json()["error"]["message"]


def _slow(llm_factory: Any) -> Any:
    # A long answer streamed slowly: the client goes away long before its end.
    return llm_factory([{"text": "y" * 300, "chunks": 300, "chunk_delay": 0.05}], loop=True)


def test_disconnect_from_a_chat_stream_cancels_its_run(fake_llm: Any, serve: Any, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    llm = _slow(fake_llm)
    srv = serve({"helper.json": agent_doc(llm.url)}, state=url)
    body = {"model": "helper", "stream": True, "user": "dc",
            "messages": [{"role": "user", "content": "talk"}]}
    with httpx.Client(timeout=10) as client, \
            client.stream("POST", f"{srv.url}/v1/chat/completions", json=body) as resp:
        run_id = resp.headers["x-run-id"]
        for line in resp.iter_lines():
            if line.startswith("data: "):
                break  # first chunk: the run is streaming; now the client closes the connection
    view = wait_status(srv.url, run_id)
    assert view["status"] == "cancelled"
    # the cancelled run's (repaired) history is saved in its session: the prompt and no made-up answer
    assert _history(url, "agent:helper:dc")[0] == ("user", "talk")


def test_disconnect_cancels_an_attached_run_but_not_a_detached_one(fake_llm: Any, serve: Any,
                                                                     tmp_path: Path) -> None:
    llm = fake_llm([{"text": "z" * 300, "chunks": 300, "chunk_delay": 0.05}, {"text": "short", "chunks": 5,
                                                                              "chunk_delay": 0.05}])
    srv = serve({"helper.json": agent_doc(llm.url)}, state=f"sqlite:///{tmp_path}/s.db")
    ids = []
    for detached in (False, True):
        with httpx.Client(timeout=10) as client, \
                client.stream("POST", f"{srv.url}/api/v1/agents/helper/runs",
                              json={"input": "go", "stream": True, "detached": detached}) as resp:
            ids.append(resp.headers["x-run-id"])
            for f in sse_events(resp.iter_lines()):
                if f["event"] == "text_delta":
                    break
    assert wait_status(srv.url, ids[0])["status"] == "cancelled"
    detached_view = wait_status(srv.url, ids[1])
    assert detached_view["status"] == "done" and detached_view["result"]["content"] == "short"
    # a synchronous run whose client gives up is cancelled too
    llm.add_turns([{"text": "w" * 300, "chunks": 300, "chunk_delay": 0.05}])
    try:
        httpx.post(f"{srv.url}/api/v1/agents/helper/runs", json={"input": "go"}, timeout=0.5)
    except httpx.ReadTimeout:
        pass
    url = f"sqlite:///{tmp_path}/s.db"

    async def statuses() -> list[str]:
        async with await open_store(url) as store:
            return sorted(r.status for r in await store.runs())

    deadline = time.monotonic() + 30
    while (got := asyncio.run(statuses())) != ["cancelled", "cancelled", "done"]:
        assert time.monotonic() < deadline, got
        time.sleep(0.1)


def test_a_client_leaving_a_non_streamed_chat_cancels_its_run(fake_llm: Any, serve: Any,
                                                               tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    llm = fake_llm([{"text": "quick"}, {"text": "slow", "delay": 30}])
    srv = serve({"helper.json": agent_doc(llm.url)}, state=url)
    body = {"model": "helper", "messages": [{"role": "user", "content": "hi"}]}
    quick = httpx.post(f"{srv.url}/v1/chat/completions", json=body, timeout=10)
    # a chat run is checkpointed but keeps no event log (the runs API has one)
    events = httpx.get(f"{srv.url}/api/v1/runs/{quick.headers['x-run-id']}/events", timeout=10)
    assert [f["event"] for f in sse_events(iter(events.text.split("\n")))] == ["end"]
    deadline = time.monotonic() + 30
    while len(llm.chat_requests) < 2:
        try:
            httpx.post(f"{srv.url}/v1/chat/completions", json=body, timeout=0.5)
        except httpx.ReadTimeout:
            pass  # the client gives up, and closes the connection
        assert time.monotonic() < deadline

    async def statuses() -> list[str]:
        async with await open_store(url) as store:
            return sorted(r.status for r in await store.runs())

    while (got := asyncio.run(statuses())) != ["cancelled", "done"]:
        assert time.monotonic() < deadline, got
        time.sleep(0.1)


def test_a_chat_ui_resending_a_conversation_with_tool_calls_is_not_counted_twice(
        fake_llm: Any, serve: Any, tmp_path: Path) -> None:
    (tmp_path / "colour.txt").write_text("blue\n")
    # the agent's first answer comes after a tool call: the session holds the call and its result
    llm = fake_llm([{"tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "colour.txt"}}]},
                    {"text": "Blue noted."}, {"text": "Blue, still."}])
    read = {"type": "builtin", "name": "read", "config": {"workDir": str(tmp_path)}}
    srv = serve({"helper.json": agent_doc(llm.url, tools=[read])}, state=f"sqlite:///{tmp_path}/s.db")
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    first = client.chat.completions.create(model="helper", user="c", messages=[
        {"role": "user", "content": "My colour?"}])
    assert first.choices[0].message.content == "Blue noted."
    # a chat UI shows (and sends back) the user message and the answer, not the tool call
    client.chat.completions.create(model="helper", user="c", messages=[
        {"role": "user", "content": "My colour?"}, {"role": "assistant", "content": "Blue noted."},
        {"role": "user", "content": "Sure?"}])
    sent = [(m["role"], m.get("content")) for m in llm.chat_requests[2].messages]
    assert [c for _, c in sent].count("My colour?") == 1
    assert [r for r, _ in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[-2:] == [("assistant", "Blue noted."), ("user", "Sure?")]
