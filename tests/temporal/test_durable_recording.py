"""Durable agent runs recorded for replay: a worker with a state store appends the run's `io` records to its
event log (durable/recording.py), `export_run` makes a cassette of them that matches what the model saw
and answered, keys redacted, and the cassette replays offline. A retried model activity and a run that
stopped to ask and was resumed are each recorded once; the run's event readers never see the records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chainreact import Agent, tool
from chainreact.agent.interrupts import AskUserTool
from chainreact.durable import AgentHost, DurableAgent, DurableOptions, durable_worker
from chainreact.replay import export_run, replay
from chainreact.state import open_store
from chainreact.testing import FakeLLM

KEY = "sk-durable-0123456789abcdefSECRET"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def secret() -> str:
    """Tell the key."""
    return f"key={KEY}"


def _agent(url: str, **kw: Any) -> Agent:
    return Agent(name="calc", instruction="Use tools.", url=url, model="m", key=KEY,
                 tools=kw.pop("tools", [add, secret]), **kw)


async def _io(store: Any, run_id: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in await store.events(run_id) if e.type == "io"]


def _model_steps(records: list[dict[str, Any]]) -> list[int]:
    return [r["step"] for r in records if r["kind"] == "model"]


async def test_a_durable_run_exports_a_cassette_that_replays(temporal_client: Any, task_queue: str,
                                                             tmp_path: Path) -> None:
    script = [{"tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}},
                              {"id": "c2", "name": "secret", "arguments": {}}]},
              {"text": "2 + 3 = 5"}]
    async with await open_store(f"sqlite:///{tmp_path}/state.db") as store:
        with FakeLLM(script) as llm:
            url = llm.url
            agent = _agent(url)
            async with durable_worker(temporal_client, task_queue, AgentHost([agent], store=store)):
                durable = DurableAgent(agent, client=temporal_client, task_queue=task_queue)
                run = await durable.start("add 2 3")
                result = await run.result()
                shown = [d async for d in run.events(store)]
            llm.assert_all_consumed()
            seen = llm.chat_requests
            cassette = await export_run(store, run.run_id)
            logged = await _io(store, run.run_id)
        assert result.content == "2 + 3 = 5"
        # The records are not events of the run (a record has a `kind`, an event a `type`).
        assert all(d.get("type") for d in shown) and shown[-1]["type"] == "final"
        assert [r["kind"] for r in logged] == ["run", "slot", "model", "tool", "tool", "model"]
        assert KEY not in json.dumps(logged) and KEY not in json.dumps(cassette)

        assert cassette["kind"] == "agent" and cassette["status"] == "done"
        assert cassette["input"] == "add 2 3" and cassette["answer"] == "2 + 3 = 5"
        assert cassette["stop_reason"] == "stop"
        [rec] = cassette["agents"]
        assert rec["model"] == "m" and rec["parent"] is None and rec["endpoint"] == url
        assert [s["step"] for s in rec["steps"]] == [1, 2]
        for step, req in zip(rec["steps"], seen, strict=True):  # what the model got, keys redacted
            sent = json.loads(json.dumps(req.messages).replace(KEY, "[redacted]"))
            assert step["request"]["messages"] == sent
            assert [t["function"]["name"] for t in step["request"]["tools"]] == \
                [t["function"]["name"] for t in req.body["tools"]]
        assert rec["steps"][0]["response"]["message"]["tool_calls"][0]["function"]["name"] == "add"
        assert rec["steps"][1]["response"]["message"]["content"] == "2 + 3 = 5"
        assert rec["steps"][0]["tools"] == [
            {"id": "c1", "name": "add", "arguments": '{"a":2,"b":3}', "content": "5", "is_error": False},
            {"id": "c2", "name": "secret", "arguments": "{}", "content": "key=[redacted]", "is_error": False}]

        # Offline: the scripted model is stopped; the replayed run follows the recording.
        replayed = await replay(cassette, agent=_agent(url))
        assert replayed.ok, replayed.report()
        assert replayed.answer == "2 + 3 = 5" and replayed.steps == 2


async def test_a_retried_model_activity_is_recorded_once(temporal_client: Any, task_queue: str,
                                                         tmp_path: Path) -> None:
    script = [{"status": 500, "message": "down"},
              {"tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 1, "b": 1}}]},
              {"status": 503, "message": "down"}, {"text": "2"}]
    async with await open_store(f"sqlite:///{tmp_path}/state.db") as store:
        with FakeLLM(script) as llm:
            url = llm.url
            agent = _agent(url, config={"maxRetries": 2})
            async with durable_worker(temporal_client, task_queue, AgentHost([agent], store=store)):
                durable = DurableAgent(agent, client=temporal_client, task_queue=task_queue,
                                       options=DurableOptions(initial_interval=0.05))
                run = await durable.start("1 + 1?")
                result = await run.result()
            llm.assert_all_consumed()
            logged = await _io(store, run.run_id)
            cassette = await export_run(store, run.run_id)
        assert result.content == "2" and len(llm.chat_requests) == 4
        assert _model_steps(logged) == [1, 2]
        assert [r["kind"] for r in logged].count("tool") == 1
        assert [len(s["tools"]) for s in cassette["agents"][0]["steps"]] == [1, 0]
        replayed = await replay(cassette, agent=_agent(url))
        assert replayed.ok, replayed.report()


async def test_an_interrupted_and_resumed_run_is_recorded_once(temporal_client: Any, task_queue: str,
                                                               tmp_path: Path) -> None:
    script = [{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "Which city?"}}]},
              {"text": "Paris it is."}]
    async with await open_store(f"sqlite:///{tmp_path}/state.db") as store:
        with FakeLLM(script) as llm:
            url = llm.url
            agent = _agent(url, tools=[AskUserTool()])
            async with durable_worker(temporal_client, task_queue, AgentHost([agent], store=store)):
                run = await DurableAgent(agent, client=temporal_client, task_queue=task_queue).start("trip")
                assert (await run.result()).stop_reason == "interrupted"
                asked = await _io(store, run.run_id)
                assert [r["kind"] for r in asked] == ["run", "slot", "model", "tool"]
                assert asked[-1]["interrupt"]["question"] == "Which city?"  # a replay stops there too
                await run.answer({"q1": "Paris"})
                final = await run.result()
            llm.assert_all_consumed()
            logged = await _io(store, run.run_id)
            cassette = await export_run(store, run.run_id)
        assert final.content == "Paris it is."
        assert [r["kind"] for r in logged] == ["run", "slot", "model", "tool", "tool", "model"]
        assert _model_steps(logged) == [1, 2]
        [rec] = cassette["agents"]
        assert rec["steps"][0]["tools"] == [{"id": "q1", "name": "ask_user",
                                             "arguments": '{"question":"Which city?"}', "content": "Paris",
                                             "is_error": False}]
        assert cassette["answer"] == "Paris it is."
        replayed = await replay(cassette, agent=_agent(url, tools=[AskUserTool()]))
        assert replayed.ok, replayed.report()


async def test_a_plan_run_again_adds_no_second_run_record(tmp_path: Path) -> None:
    # A local activity runs again when the workflow task that ran it failed: the log has its records.
    from chainreact.durable.recording import record_plan, slot_id

    agent = _agent("http://127.0.0.1:9/v1")
    plan = await agent.plan()
    async with await open_store(f"sqlite:///{tmp_path}/state.db") as store:
        for _ in range(2):
            await record_plan(store, "run-1", agent, plan, "hi")
        logged = await _io(store, "run-1")
    await agent.aclose()
    assert [r["kind"] for r in logged] == ["run", "slot"]
    assert logged[1]["slot"] == slot_id("run-1") != slot_id("run-2") and logged[1]["endpoint"] == \
        "http://127.0.0.1:9/v1"
    assert logged[0]["input"] == "hi" and KEY not in json.dumps(logged)


def test_a_step_or_a_tool_call_recorded_twice_is_one_in_the_cassette() -> None:
    # A durable activity whose success was not acknowledged runs again and records again: the later one.
    from chainreact.replay.cassette import build_agents

    slot = {"kind": "slot", "slot": "s", "agent": "calc", "parent": None}
    ask = {"kind": "model", "slot": "s", "step": 1, "request": {"keep": 0, "messages": [{"role": "user"}]},
           "response": {"message": {"role": "assistant", "content": "a"}}}
    call = {"kind": "tool", "slot": "s", "step": 1, "id": "c1", "name": "add", "arguments": "{}",
            "content": "1", "is_error": False}
    [agent] = build_agents([slot, ask, ask, call, {**call, "content": "2"}], merge_top=True)
    [step] = agent["steps"]
    assert step["step"] == 1 and [t["content"] for t in step["tools"]] == ["2"]


async def test_an_agent_run_as_a_tool_is_recorded_with_its_call(temporal_client: Any, task_queue: str,
                                                                tmp_path: Path) -> None:
    script = [{"tool_calls": [{"id": "c1", "name": "helper", "arguments": {"request": "sum 2 3"}}]},
              {"text": "helper says 5"}, {"text": "it is 5"}]
    async with await open_store(f"sqlite:///{tmp_path}/state.db") as store:
        with FakeLLM(script) as llm:
            url = llm.url

            def outer() -> Agent:
                helper = Agent(name="helper", instruction="Help.", url=url, model="h", key=KEY)
                return _agent(url, tools=[helper.as_tool("helper")])

            agent = outer()
            async with durable_worker(temporal_client, task_queue, AgentHost([agent], store=store)):
                run = await DurableAgent(agent, client=temporal_client, task_queue=task_queue).start("go")
                assert (await run.result()).content == "it is 5"
            llm.assert_all_consumed()
            cassette = await export_run(store, run.run_id)
        top, nested = cassette["agents"]
        assert nested["agent"] == "helper" and nested["parent"] == [top["slot"], "c1"]
        assert nested["model"] == "h" and len(nested["steps"]) == 1
        assert top["steps"][0]["tools"][0]["content"] == "helper says 5"
        assert KEY not in json.dumps(cassette)
        replayed = await replay(cassette, agent=outer())
        assert replayed.ok, replayed.report()
