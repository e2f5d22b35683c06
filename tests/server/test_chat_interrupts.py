"""A chat completion whose agent stops to ask (ask_user, an approval): HTTP 409 `run_interrupted` in
OpenAI's error shape (an error event when streamed) naming the run and its resume route, which answers
it; every chunk names the requested model id; the in-memory runs store is pruned (TTL, max count)."""

from __future__ import annotations

import time
from typing import Any

import httpx
import openai
import orjson
import pytest

from tests.server.runs_helpers import agent_doc

ASK = {"tool_calls": [{"id": "q1", "name": "ask_user",
                       "arguments": {"question": "Which unit?", "schema": {"enum": ["C", "F"]}}}]}


@pytest.mark.parametrize("state", [False, True], ids=["memory", "sqlite"])
def test_an_interrupted_chat_is_a_409_that_says_how_to_resume(fake_llm: Any, serve: Any, tmp_path: Any,
                                                              state: bool) -> None:
    llm = fake_llm([ASK, {"text": "It is 70 F."}, ASK, {"text": "It is 21 C."}])
    extras = {"state": f"sqlite:///{tmp_path}/s.db"} if state else {}
    srv = serve({"helper.json": agent_doc(llm.url, tools=["ask_user"])}, **extras)
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none", max_retries=0)

    with pytest.raises(openai.ConflictError) as caught:
        client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "weather?"}])
    err = caught.value.body
    assert isinstance(err, dict) and err["code"] == "run_interrupted" and err["type"] == "run_interrupted"
    run_id = err["run_id"]
    assert err["resume"] == f"/api/v1/runs/{run_id}/resume" and err["resume"] in err["message"]
    assert [(q["id"], q["question"]) for q in err["questions"]] == [("q1", "Which unit?")]
    assert "Which unit?" in err["message"]

    view = httpx.get(f"{srv.url}/api/v1/runs/{run_id}", timeout=10).json()
    assert view["status"] == "interrupted" and view["questions"][0]["id"] == "q1"
    done = httpx.post(srv.url + err["resume"], json={"answers": {"q1": "F"}}, timeout=30).json()
    assert done["status"] == "done" and done["result"]["content"] == "It is 70 F."
    assert [m for m in llm.chat_requests[1].messages if m["role"] == "tool"] == [
        {"role": "tool", "tool_call_id": "q1", "content": "F"}]

    # streamed: an error event of the documented shape, then the stream ends (no [DONE])
    with httpx.stream("POST", srv.url + "/v1/chat/completions", timeout=30, json={
            "model": "helper", "stream": True, "messages": [{"role": "user", "content": "again?"}]}) as r:
        assert r.status_code == 200
        frames = [orjson.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
    event = frames[-1]["error"]
    assert event["type"] == "stream_error" and event["code"] == "run_interrupted"
    assert event["resume"] == f"/api/v1/runs/{event['run_id']}/resume"
    assert event["questions"][0]["question"] == "Which unit?"
    done = httpx.post(srv.url + event["resume"], json={"answers": {"q1": "C"}}, timeout=30).json()
    assert done["status"] == "done" and done["result"]["content"] == "It is 21 C."


def test_every_chunk_and_the_completion_name_the_requested_model(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "one two three", "chunks": 3}, {"text": "four"}])
    srv = serve({"helper.json": agent_doc(llm.url)})  # the agent's own model is fake-model
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    chunks = list(client.chat.completions.create(model="helper", stream=True,
                                                 messages=[{"role": "user", "content": "count"}]))
    assert len(chunks) >= 4 and chunks[-1].choices[0].finish_reason == "stop"
    assert {c.model for c in chunks} == {"helper"}
    done = client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "more"}])
    assert done.model == "helper"


def _start(url: str, text: str) -> str:
    r = httpx.post(f"{url}/api/v1/agents/helper/runs", json={"input": text}, timeout=30)
    assert r.status_code == 200 and r.json()["status"] == "done", r.text
    return str(r.json()["id"])


def test_the_in_memory_runs_store_keeps_at_most_runs_max_stopped_runs(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "ok"}], loop=True)
    srv = serve({"helper.json": agent_doc(llm.url)}, runs_max=2)
    ids = [_start(srv.url, f"run {i}") for i in range(4)]
    status = [httpx.get(f"{srv.url}/api/v1/runs/{i}", timeout=10).status_code for i in ids]
    assert status == [404, 404, 200, 200]  # the oldest went first


def test_stopped_runs_expire_after_runs_ttl(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "ok"}], loop=True)
    srv = serve({"helper.json": agent_doc(llm.url)}, runs_ttl=0.3)
    run_id = _start(srv.url, "short-lived")
    deadline = time.monotonic() + 20  # a bound against hanging: the sweep runs every ttl/4
    while httpx.get(f"{srv.url}/api/v1/runs/{run_id}", timeout=10).status_code != 404:
        assert time.monotonic() < deadline, "the stopped run was never pruned"
        time.sleep(0.05)
    assert len(llm.chat_requests) == 1
