"""The A2A face (`/a2a/{id}`) with the official `a2a-sdk` client against a real server and the scripted model:
card resolution, a blocking and a streamed send, get, cancel, an input-required task resumed by the next
message, chains and flows as A2A agents, and the card's security scheme with API keys."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, new_text_message
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, TaskNotCancelableError, TaskNotFoundError

from tests.server.runs_helpers import agent_doc
from tests.server.test_chain_sessions import two_agent_chain
from tests.server.test_flow_agui import ANSWER, model_turns, shop_api, shop_flow

OWN_ADD = {"type": "python", "name": "tests.agent.conftest:add"}


async def client_for(base: str, ident: str, *, streaming: bool, headers: dict[str, str] | None = None) -> Any:
    http = httpx.AsyncClient(timeout=30, headers=headers)
    factory = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http))
    return await factory.create_from_url(f"{base}/a2a/{ident}"), http


def user(text: str, **ids: Any) -> SendMessageRequest:
    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER, **ids))


async def collect(client: Any, request: SendMessageRequest) -> list[Any]:
    return [r async for r in client.send_message(request)]


def test_card_blocking_send_get_and_a_finished_task(fake_llm: Any, serve: Any) -> None:
    call = {"tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}}]}
    llm = fake_llm([call, {"text": "It is 5."}])
    doc = agent_doc(llm.url, tools=[OWN_ADD])
    doc["configuration"]["description"] = "Adds numbers."
    srv = serve({"helper.json": doc})

    async def go() -> None:
        client, http = await client_for(srv.url, "helper", streaming=False)
        async with contextlib.aclosing(http):
            card = client._card
            assert (card.name, card.description) == ("helper", "Adds numbers.")
            assert card.capabilities.streaming
            assert card.supported_interfaces[0].url == f"{srv.url}/a2a/helper"
            assert card.supported_interfaces[0].protocol_binding == "JSONRPC"
            assert [s.name for s in card.skills] == ["helper", "add"] and not card.security_schemes
            [resp] = await collect(client, user("2+3?"))
            task = resp.task
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            assert get_artifact_text(task.artifacts[0]) == "It is 5."
            assert [(m.role, m.parts[0].text) for m in task.history] == [
                (Role.ROLE_USER, "2+3?"), (Role.ROLE_AGENT, "It is 5.")]
            got = await client.get_task(GetTaskRequest(id=task.id, history_length=1))
            assert got.status.state == TaskState.TASK_STATE_COMPLETED and len(got.history) == 1
            assert got.context_id == task.context_id
            # the task is a run of the runs API
            view = httpx.get(f"{srv.url}/api/v1/runs/{task.id}", timeout=10).json()
            assert view["status"] == "done" and view["result"]["content"] == "It is 5."
            with pytest.raises(TaskNotCancelableError):
                await client.cancel_task(CancelTaskRequest(id=task.id))
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id="nope"))

    asyncio.run(go())


def test_a_streamed_send_sends_status_and_artifact_updates(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "Paris is the capital.", "chunks": 3}])
    srv = serve({"helper.json": agent_doc(llm.url)})

    async def go() -> None:
        client, http = await client_for(srv.url, "helper", streaming=True)
        async with contextlib.aclosing(http):
            out = await collect(client, user("Capital of France?"))
        kinds = [r.WhichOneof("payload") for r in out]
        assert kinds[:2] == ["task", "status_update"] and kinds[-1] == "status_update"
        chunks = [r.artifact_update for r in out if r.WhichOneof("payload") == "artifact_update"]
        assert "".join(get_artifact_text(c.artifact) for c in chunks) == "Paris is the capital."
        assert len(chunks) >= 3 and chunks[-1].last_chunk and not chunks[0].append and chunks[1].append
        assert out[1].status_update.status.state == TaskState.TASK_STATE_WORKING
        assert out[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED

    asyncio.run(go())


def test_input_required_and_the_answer_that_resumes_it(fake_llm: Any, serve: Any, tmp_path: Any) -> None:
    ask = {"tool_calls": [{"id": "q1", "name": "ask_user",
                           "arguments": {"question": "Which unit?", "schema": {"enum": ["C", "F"]}}}]}
    llm = fake_llm([ask, {"text": "It is 70 F."}, {"text": "You asked about the weather."}])
    srv = serve({"helper.json": agent_doc(llm.url, tools=["ask_user"])}, state=f"sqlite:///{tmp_path}/s.db")

    async def go() -> None:
        client, http = await client_for(srv.url, "helper", streaming=True)
        async with contextlib.aclosing(http):
            out = await collect(client, user("weather?"))
            status = out[-1].status_update.status
            assert status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert "Which unit?" in status.message.parts[0].text
            task_id, ctx_id = out[0].task.id, out[0].task.context_id
            with pytest.raises(InvalidParamsError):  # the schema refuses it; the task still waits
                await collect(client, user("K", task_id=task_id, context_id=ctx_id))
            out = await collect(client, user("F", task_id=task_id, context_id=ctx_id))
            assert out[0].task.id == task_id
            assert out[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
            text = "".join(get_artifact_text(r.artifact_update.artifact) for r in out
                           if r.WhichOneof("payload") == "artifact_update")
            assert text == "It is 70 F."
            # the context is the session (--state): the next task in it sees the conversation
            out = await collect(client, user("What did I ask?", context_id=ctx_id))
            assert out[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        sent = [(m["role"], m.get("content")) for m in llm.chat_requests[2].messages if m["role"] == "user"]
        assert sent == [("user", "weather?"), ("user", "What did I ask?")]

    asyncio.run(go())


def test_cancel_a_working_task(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "slow answer", "delay": 20}])
    srv = serve({"helper.json": agent_doc(llm.url)})

    async def go() -> None:
        client, http = await client_for(srv.url, "helper", streaming=False)
        async with contextlib.aclosing(http):
            request = user("take your time")
            request.configuration.return_immediately = True
            [resp] = await collect(client, request)
            assert resp.task.status.state == TaskState.TASK_STATE_WORKING
            task = await client.cancel_task(CancelTaskRequest(id=resp.task.id))
            assert task.status.state == TaskState.TASK_STATE_CANCELED
            got = await client.get_task(GetTaskRequest(id=resp.task.id))
            assert got.status.state == TaskState.TASK_STATE_CANCELED

    asyncio.run(go())


def test_chains_and_flows_are_a2a_agents(fake_llm: Any, serve: Any) -> None:
    with shop_api() as api:
        llm = fake_llm([{"text": "draft"}, {"text": "DRAFT"}, *model_turns("o1")])
        srv = serve({"pipe.json": two_agent_chain(llm.url), "shop.json": shop_flow(llm.url, api)})

        async def go() -> None:
            client, http = await client_for(srv.url, "pipe", streaming=False)
            async with contextlib.aclosing(http):
                [resp] = await collect(client, user("write"))
                assert resp.task.status.state == TaskState.TASK_STATE_COMPLETED
                assert get_artifact_text(resp.task.artifacts[0]) == "DRAFT"
                assert resp.task.metadata["kind"] == "chain"
            client, http = await client_for(srv.url, "shop", streaming=True)
            async with contextlib.aclosing(http):
                out = await collect(client, user("Where is my order A1?", context_id="s-1"))
                assert out[0].task.context_id == "s-1"
                assert out[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
                text = "".join(get_artifact_text(r.artifact_update.artifact) for r in out
                               if r.WhichOneof("payload") == "artifact_update")
                assert text == "Hello!\n\n" + ANSWER
            session = httpx.get(f"{srv.url}/api/v1/flows/shop/sessions/s-1", timeout=10).json()
            assert session["node"] == "clerk"  # the context is the flow's session

        asyncio.run(go())


def test_the_card_names_the_security_scheme_and_keys_apply(fake_llm: Any, serve: Any) -> None:
    keys = {"keys": [{"name": "peer", "sha256": hashlib.sha256(b"peer-key").hexdigest(), "ids": ["helper"],
                      "permissions": ["read", "execute"]}]}
    srv = serve({"helper.json": agent_doc(fake_llm([{"text": "ok"}]).url)}, keys=keys)
    assert httpx.get(f"{srv.url}/a2a/helper/.well-known/agent-card.json", timeout=10).status_code == 401
    assert httpx.post(f"{srv.url}/a2a/helper", json={}, timeout=10).status_code == 401

    async def go() -> None:
        client, http = await client_for(srv.url, "helper", streaming=False,
                                        headers={"Authorization": "Bearer peer-key"})
        async with contextlib.aclosing(http):
            scheme = client._card.security_schemes["apiKey"].http_auth_security_scheme
            assert scheme.scheme == "Bearer"
            assert "apiKey" in client._card.security_requirements[0].schemes
            [resp] = await collect(client, user("hi"))
            assert get_artifact_text(resp.task.artifacts[0]) == "ok"

    asyncio.run(go())


def test_the_a2a_tool_calls_a_chainreact_served_agent(fake_llm: Any, serve: Any) -> None:
    from chainreact import Agent

    helper_llm = fake_llm([{"text": "Paris."}])
    doc = agent_doc(helper_llm.url)
    doc["configuration"]["description"] = "Knows capitals."
    srv = serve({"helper.json": doc})
    boss_llm = fake_llm([{"tool_calls": [{"id": "h1", "name": "helper",
                                          "arguments": {"message": "Capital of France?"}}]},
                         {"text": "The helper says Paris."}])
    boss = Agent.from_config({"url": boss_llm.url, "key": "k", "model": "m", "maxRetries": -1,
                              "tools": [{"type": "a2a", "url": f"{srv.url}/a2a/helper"}]})
    assert boss.run_sync("Ask the helper.").content == "The helper says Paris."
    [tool] = boss_llm.chat_requests[0].body["tools"]
    assert tool["function"]["name"] == "helper"
    assert tool["function"]["description"].startswith("Knows capitals.")
    assert [m["content"] for m in boss_llm.chat_requests[1].messages if m["role"] == "tool"] == ["Paris."]
    assert helper_llm.chat_requests[0].messages[-1] == {"role": "user", "content": "Capital of France?"}


def test_both_faces_of_a_chainreact_serve_process(fake_llm: Any, tmp_path: Any) -> None:
    """`chainreact serve` itself (a process, with a keys file): the a2a-sdk client resolves the card and
    streams a task, and the ag-ui-validate CLI finds nothing wrong with /agui/{id}."""
    import json
    import signal

    from tests.server.runs_helpers import free_port, start_serve
    from tests.server.test_agui import validator_cli

    llm = fake_llm([{"text": "served over A2A", "chunks": 2}, {"text": "served over AG-UI"}])
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "bot.json").write_text(json.dumps(agent_doc(llm.url, "bot")))
    (tmp_path / "keys.json").write_text(json.dumps({"keys": [{"name": "peer", "sha256": hashlib.sha256(
        b"peer-key").hexdigest(), "ids": ["*"], "permissions": ["read", "execute"]}]}))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_serve([str(tmp_path / "docs"), "--keys", str(tmp_path / "keys.json")], port)
    try:
        async def go() -> list[Any]:
            client, http = await client_for(base, "bot", streaming=True,
                                            headers={"Authorization": "Bearer peer-key"})
            async with contextlib.aclosing(http):
                assert "apiKey" in client._card.security_schemes
                return await collect(client, user("hi"))

        out = asyncio.run(go())
        assert out[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        assert "".join(get_artifact_text(r.artifact_update.artifact) for r in out
                       if r.WhichOneof("payload") == "artifact_update") == "served over A2A"
        report = validator_cli(f"{base}/agui/bot", ["--header", "Authorization: Bearer peer-key"])
        assert not [d for d in report["diagnostics"] if d["severity"] in ("error", "warning")]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
