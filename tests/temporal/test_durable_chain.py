"""Rule chains as Temporal workflows on the real dev server: the same ends as the in-process engine for a
chain with fork/join and an agent node (a child agent workflow), Failure paths, and what runs where."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chainreact.chains import RuleEngine, RuleMsg
from chainreact.durable import (
    ChainHost,
    DurableAgent,
    DurableChain,
    DurableOptions,
    DurableRunError,
    durable_chain_worker,
)
from chainreact.testing import FakeLLM


def fork_join_chain(url: str) -> dict[str, Any]:
    """fork -> (ai/agent | exprTransform) -> join (merged) -> exprFilter -True-> exprTransform."""
    nodes = [
        {"id": "s1", "type": "fork", "name": "fan out"},
        {"id": "ask", "type": "ai/agent", "name": "assistant",
         "configuration": {"url": url, "model": "m", "systemPrompt": "Answer in one word."}},
        {"id": "calc", "type": "exprTransform", "configuration": {"mapping": {"double": "msg.n * 2"}}},
        {"id": "j1", "type": "join", "configuration": {"mergeToMap": True, "timeout": 60}},
        {"id": "chk", "type": "exprFilter", "configuration": {"expr": "msg.double == 42"}},
        {"id": "report", "type": "exprTransform",
         "configuration": {"mapping": {"answer": "msg.ask", "double": "msg.double"}}},
    ]
    conns = [("s1", "ask", "Success"), ("s1", "calc", "Success"), ("ask", "j1", "Success"),
             ("calc", "j1", "Success"), ("j1", "chk", "Success"), ("chk", "report", "True")]
    return {"ruleChain": {"id": "forkjoin", "name": "fork join"},
            "metadata": {"nodes": nodes,
                         "connections": [{"fromId": a, "toId": b, "type": t} for a, b, t in conns]}}


def failing_chain(url: str) -> dict[str, Any]:
    """A function that raises, its Failure routed to a handler; an agent whose model call fails."""
    nodes = [
        {"id": "s1", "type": "fork"},
        {"id": "f1", "type": "functions", "configuration": {"functionName": "boom"}},
        {"id": "onerr", "type": "exprTransform",
         "configuration": {"mapping": {"handled": "metadata.errorMsg"}}},
        {"id": "ask", "type": "ai/agent",
         "configuration": {"url": url, "model": "m", "maxRetries": -1}},
    ]
    conns = [("s1", "f1", "Success"), ("s1", "ask", "Success"), ("f1", "onerr", "Failure")]
    return {"ruleChain": {"id": "failing", "name": "failing"},
            "metadata": {"nodes": nodes,
                         "connections": [{"fromId": a, "toId": b, "type": t} for a, b, t in conns]}}


def boom(ctx: Any, msg: RuleMsg) -> None:
    raise ValueError("the function failed")


def _engine(*docs: dict[str, Any]) -> RuleEngine:
    engine = RuleEngine(functions={"boom": boom})
    for d in docs:
        engine.load(d)
    return engine


def _ends(ends: list[Any]) -> list[dict[str, Any]]:
    return sorted(({**e.to_dict(), "node": e.node_id} for e in ends),
                  key=lambda d: (d["node"], d["relation"]))


async def _history_kinds(client: Any, run_id: str) -> tuple[list[str], list[str]]:
    """(activity types scheduled, child workflow types started) in the chain workflow's history."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    acts, children = [], []
    for ev in history.events:
        if ev.HasField("activity_task_scheduled_event_attributes"):
            acts.append(ev.activity_task_scheduled_event_attributes.activity_type.name)
        if ev.HasField("start_child_workflow_execution_initiated_event_attributes"):
            children.append(ev.start_child_workflow_execution_initiated_event_attributes.workflow_type.name)
    return acts, children


async def _replay(client: Any, run_id: str) -> None:
    from temporalio.worker import Replayer
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    from chainreact.durable.chain_workflow import ChainWorkflow
    from chainreact.durable.worker import PASSTHROUGH

    runner = SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH))
    history = await client.get_workflow_handle(run_id).fetch_history()
    result = await Replayer(workflows=[ChainWorkflow], workflow_runner=runner).replay_workflow(
        history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


async def test_fork_join_with_agent_node_equals_in_process(temporal_client: Any, task_queue: str) -> None:
    msg = RuleMsg(type="Q", data='{"n": 21}', metadata={"user": "ana"})
    with FakeLLM([{"text": "Paris"}, {"text": "Paris"}]) as llm:
        local = _engine(fork_join_chain(llm.url))
        expected = await local.run("forkjoin", msg.copy())
        local.close()
        host = ChainHost(_engine(fork_join_chain(llm.url)))
        async with durable_chain_worker(temporal_client, task_queue, host):
            durable = DurableChain("forkjoin", client=temporal_client, task_queue=task_queue)
            run = await durable.start(msg.copy())
            got = await run.result()
            status = await run.status()
        llm.assert_all_consumed()
        # the agent saw the same request in both runs
        assert llm.chat_requests[0].body["messages"] == llm.chat_requests[1].body["messages"]
    assert _ends(got) == _ends(expected)
    assert len(got) == 1 and got[0].node_id == "report"
    out = got[0].msg
    assert out.json_value() == {"answer": "Paris", "double": 42}
    assert out.metadata["user"] == "ana" and out.metadata["model"] == "m"
    assert status == {"status": "done", "nodes": 4}
    # routing nodes (fork, join) ran in the workflow; the agent as a child agent workflow
    acts, children = await _history_kinds(temporal_client, run.run_id)
    assert sorted(acts) == ["chainreact.chain.node"] * 3 + ["chainreact.chain.plan"]
    assert children == ["chainreact.agent"]
    # the workflow code is deterministic: its history replays without a worker, taking the same path
    await _replay(temporal_client, run.run_id)


async def test_failure_relations_equal_in_process(temporal_client: Any, task_queue: str) -> None:
    msg = RuleMsg(type="Q", data="hello", data_type="TEXT")
    with FakeLLM([{"status": 400, "message": "bad request"}] * 2) as llm:
        local = _engine(failing_chain(llm.url))
        expected = await local.run("failing", msg.copy())
        local.close()
        host = ChainHost(_engine(failing_chain(llm.url)))
        async with durable_chain_worker(temporal_client, task_queue, host):
            got = await DurableChain("failing", client=temporal_client, task_queue=task_queue).run(msg.copy())
    by_node = {e.node_id: e for e in got}
    assert set(by_node) == {"onerr", "ask"}
    # the function's error went down its Failure relation, with errorMsg, as in process
    assert by_node["onerr"].relation == "Success"
    assert by_node["onerr"].msg.json_value() == {"handled": "the function failed"}
    assert _ends([by_node["onerr"]]) == _ends([e for e in expected if e.node_id == "onerr"])
    # the agent's model error ended its branch on Failure (no Failure connection)
    failed = by_node["ask"]
    local_failed = next(e for e in expected if e.node_id == "ask")
    assert failed.relation == local_failed.relation == "Failure"
    assert failed.error and failed.error.startswith("ModelError") and "400" in failed.error
    assert local_failed.error and local_failed.error.startswith("ModelError")


async def test_unknown_chain_fails_the_run(temporal_client: Any, task_queue: str) -> None:
    with FakeLLM([]) as llm:
        host = ChainHost(_engine(failing_chain(llm.url)))
        async with durable_chain_worker(temporal_client, task_queue, host):
            with pytest.raises(DurableRunError) as err:
                await DurableChain("nope", client=temporal_client, task_queue=task_queue).run("x")
    assert err.value.error_type == "UnknownChain" and "failing" in str(err.value)


def single_node_chain(chain_id: str, node: dict[str, Any]) -> dict[str, Any]:
    return {"ruleChain": {"id": chain_id, "name": chain_id}, "metadata": {"nodes": [{"id": "n1", **node}]}}


async def test_agent_stream_mode_frames_equal_in_process(temporal_client: Any, task_queue: str) -> None:
    doc = single_node_chain("streamer", {"type": "ai/agent",
                                         "configuration": {"url": "", "model": "m"}})
    msg = RuleMsg(type="Q", data="hi", data_type="TEXT", metadata={"stream": "true"})
    with FakeLLM([{"text": "Hello from the stream", "chunks": 4}] * 2) as llm:
        doc["metadata"]["nodes"][0]["configuration"]["url"] = llm.url
        local = _engine(doc)
        frames: list[RuleMsg] = []
        expected = await local.run("streamer", msg.copy(), on_stream=frames.append)
        local.close()
        async with durable_chain_worker(temporal_client, task_queue, ChainHost(_engine(doc))):
            durable = DurableChain("streamer", client=temporal_client, task_queue=task_queue)
            run = await durable.start(msg.copy())
            got = await run.result()
    assert _ends(got) == _ends(expected)
    assert got[0].msg.data == "Hello from the stream" and got[0].msg.metadata["full_content"] == "true"
    assert len(run.frames) == len(frames) > 2
    assert [(f.data, f.metadata) for f in run.frames] == [(f.data, f.metadata) for f in frames]


async def test_message_timeout_is_a_failure_end(temporal_client: Any, task_queue: str) -> None:
    doc = single_node_chain("slow", {"type": "delay", "configuration": {"delayMs": 20000}})
    msg = RuleMsg(type="Q", data="x", data_type="TEXT")
    local = _engine(doc)
    expected = await local.run("slow", msg.copy(), timeout=0.3)
    local.close()
    async with durable_chain_worker(temporal_client, task_queue, ChainHost(_engine(doc))):
        got = await DurableChain("slow", client=temporal_client, task_queue=task_queue).run(msg.copy(),
                                                                                             timeout=0.3)
    assert _ends(got) == _ends(expected)
    assert got[0].relation == "Failure" and "context deadline exceeded" in (got[0].error or "")


async def test_cancel_stops_every_branch(temporal_client: Any, task_queue: str) -> None:
    # two branches: a durable timer in the workflow, a slow model call in the agent's child workflow
    nodes = [{"id": "s1", "type": "fork"},
             {"id": "wait", "type": "delay", "configuration": {"delayMs": 20000}},
             {"id": "ask", "type": "ai/agent", "configuration": {"url": "", "model": "m"}}]
    doc = {"ruleChain": {"id": "slow", "name": "slow"},
           "metadata": {"nodes": nodes, "connections": [{"fromId": "s1", "toId": t, "type": "Success"}
                                                        for t in ("wait", "ask")]}}
    with FakeLLM([{"text": "late", "delay": 20.0}]) as llm:
        nodes[2]["configuration"]["url"] = llm.url
        async with durable_chain_worker(temporal_client, task_queue, ChainHost(_engine(doc))):
            durable = DurableChain("slow", client=temporal_client, task_queue=task_queue,
                                   options=DurableOptions(heartbeat_timeout=2.0))
            run = await durable.start("x")
            while not llm.chat_requests:  # the agent's model call is in flight
                await asyncio.sleep(0.05)
            await run.cancel()
            with pytest.raises(DurableRunError) as err:
                await asyncio.wait_for(run.result(), 15)
            assert (await run.status())["status"] == "cancelled"
            # the agent node's child run was cancelled too: it ends as a cancelled agent run
            agents = DurableAgent("", client=temporal_client, task_queue=task_queue)
            child = await agents.get(f"{run.run_id}.ask.1")
            result = await asyncio.wait_for(child.result(), 15)
    assert "cancel" in str(err.value).lower()
    assert result.stop_reason == "cancelled"


async def test_agent_node_session_history_equals_in_process(temporal_client: Any, task_queue: str) -> None:
    doc = single_node_chain("chat", {"type": "ai/agent", "configuration": {"url": "", "model": "m"}})
    meta = {"sessionKey": "s1", "loadHistory": "true"}
    turns = [RuleMsg(type="Q", data=q, data_type="TEXT", metadata=dict(meta)) for q in ("hi", "again")]
    with FakeLLM([{"text": "hello"}, {"text": "hello again"}] * 2) as llm:
        doc["metadata"]["nodes"][0]["configuration"]["url"] = llm.url
        local = _engine(doc)
        expected = [await local.run("chat", m.copy()) for m in turns]
        local.close()
        async with durable_chain_worker(temporal_client, task_queue, ChainHost(_engine(doc))):
            durable = DurableChain("chat", client=temporal_client, task_queue=task_queue)
            got = []
            for m in turns:
                run = await durable.start(m.copy())
                got.append(await run.result())
            acts, children = await _history_kinds(temporal_client, run.run_id)
        sent = [r.body["messages"] for r in llm.chat_requests]
    assert [_ends(e) for e in got] == [_ends(e) for e in expected]
    # the second turn saw the first exchange, from the worker's session store, as in process
    assert sent[3] == sent[1] and [m["content"] for m in sent[3]] == ["hi", "hello", "again"]
    assert children == ["chainreact.agent"]  # the agent still runs as a child workflow
    assert "chainreact.chain.agent_input" in acts and "chainreact.chain.agent_save" in acts


ANSWERED_BY = {"ruleChain": {"id": "asst", "name": "asst"},
               "metadata": {"nodes": [
                   {"id": "agent", "type": "ai/agent", "configuration": {"systemPrompt": "Answer."}},
                   {"id": "audit", "type": "metadataTransform",
                    "configuration": {"mapping": {"answeredBy": "metadata.model"}}}],
                   "connections": [{"fromId": "agent", "toId": "audit", "type": "Success"}]}}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("where", ["openai-env", "openai-env-model", "embedded"])
async def test_url_less_agent_node_says_who_answered_as_in_process(temporal_client: Any, task_queue: str,
                                                                   monkeypatch: Any, where: str,
                                                                   stream: bool) -> None:
    """A node without url (examples/chains/assistant.json) runs where OPENAI_BASE_URL points, with
    OPENAI_DEFAULT_MODEL (else gpt-4o-mini), or on the embedded model (here CHAINREACT_LOCAL_URL names a
    running one, whose model is the FakeLLM's): its answer's metadata.model, read as `answeredBy`, names
    the model that answered, the same on Temporal as in process, child workflow and stream mode alike."""
    # llama.cpp's server answers with its GGUF file's path as `model`; /v1/models lists the alias
    turn = {"text": "ok", **({"model": "/models/SmolLM2.gguf"} if where == "embedded" else {})}
    with FakeLLM([turn] * 2) as llm:
        for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_DEFAULT_MODEL", "CHAINREACT_LOCAL_URL"):
            monkeypatch.delenv(var, raising=False)
        if where == "embedded":
            monkeypatch.setenv("CHAINREACT_LOCAL_URL", llm.url)
        else:
            monkeypatch.setenv("OPENAI_BASE_URL", llm.url)
            if where == "openai-env-model":
                monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "fake-model")
        meta = {"stream": "true"} if stream else {}
        local = _engine(ANSWERED_BY)
        msg = RuleMsg(type="Q", data="hi", data_type="TEXT", metadata=meta)
        expected = await local.run("asst", msg.copy())
        local.close()
        async with durable_chain_worker(temporal_client, task_queue, ChainHost(_engine(ANSWERED_BY))):
            got = await DurableChain("asst", client=temporal_client, task_queue=task_queue).run(msg.copy())
        requested = [r.body["model"] for r in llm.chat_requests]
    said = [e.msg.metadata.get("answeredBy") for e in got]
    assert said == [e.msg.metadata.get("answeredBy") for e in expected]
    # the embedded model is named as it is asked for, by the name it was started with (not its file)
    named = {"openai-env": "gpt-4o-mini", "openai-env-model": "fake-model", "embedded": "fake-model"}[where]
    assert said == [requested[1]] == [named]
