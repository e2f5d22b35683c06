"""Agent runs as Temporal workflows on the real dev server, with an in-process worker: the same results as
an in-process run, the loop's decisions in the workflow, errors, interrupts, cancel modes, streaming."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from chainreact import Agent, tool
from chainreact.agent.interrupts import AskUserTool
from chainreact.durable import AgentHost, DurableAgent, DurableOptions, DurableRunError, durable_worker
from chainreact.testing import FakeLLM, tool_steps_responder
from chainreact.tools import ToolContext

CALLS: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    CALLS.append(f"add {a} {b}")
    return a + b


@tool
async def slow(seconds: float) -> str:
    """Wait."""
    CALLS.append(f"slow {seconds}")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        CALLS.append("slow cancelled")
        raise
    CALLS.append("slow done")
    return "waited"


@tool
def key_of(ctx: ToolContext) -> str:
    """The call's idempotency key."""
    return ctx.idempotency_key


def _agent(llm: FakeLLM, **kw: Any) -> Agent:
    return Agent(name=kw.pop("name", "calc"), instruction="Use tools.", url=llm.url, model="m",
                 tools=kw.pop("tools", [add]), **kw)


@contextlib.asynccontextmanager
async def _durable(client: Any, queue: str, agent: Agent, store: Any = None,
                   options: DurableOptions | None = None) -> AsyncIterator[DurableAgent]:
    async with durable_worker(client, queue, AgentHost([agent], store=store)):
        yield DurableAgent(agent, client=client, task_queue=queue, options=options)


def _strip(d: dict[str, Any]) -> dict[str, Any]:
    d = dict(d)
    d["metadata"] = {k: v for k, v in d["metadata"].items() if k != "run_id"}
    return d


async def test_result_equals_in_process_run(temporal_client: Any, task_queue: str) -> None:
    with FakeLLM(tool_steps_responder(2)) as llm:
        agent = _agent(llm)
        reference = await agent.run("go")
        in_process_requests = len(llm.chat_requests)
        async with _durable(temporal_client, task_queue, _agent(llm)) as durable:
            CALLS.clear()
            result = await durable.run("go")
        assert _strip(result.to_dict()) == _strip(reference.to_dict())
        assert result.stop_reason == "stop" and result.steps == 3
        assert result.metadata["run_id"].startswith("calc-")
        assert CALLS == ["add 0 1", "add 1 1"]  # each tool call ran once
        assert len(llm.chat_requests) - in_process_requests == 3  # each model call once


async def test_loop_decisions_run_in_the_workflow(temporal_client: Any, task_queue: str) -> None:
    # An unknown tool, then arguments failing the schema: the loop answers both without any tool activity;
    # then a ReturnDirectly tool ends the run with its result (no further model call).
    script = [{"tool_calls": [{"id": "c1", "name": "nope", "arguments": {}}]},
              {"tool_calls": [{"id": "c2", "name": "add", "arguments": {"a": "x"}}]},
              {"tool_calls": [{"id": "c3", "name": "add", "arguments": {"a": 20, "b": 22}}]}]
    with FakeLLM(script) as llm:
        async with _durable(temporal_client, task_queue, _agent(llm, return_directly=["add"])) as durable:
            CALLS.clear()
            result = await durable.run("go")
        llm.assert_all_consumed()
    assert result.stop_reason == "return_directly" and result.content == "42"
    tool_msgs = [m for m in result.messages if m.role == "tool"]
    assert "unknown tool 'nope'" in tool_msgs[0].text
    assert "invalid arguments for add" in tool_msgs[1].text
    assert CALLS == ["add 20 22"]


async def test_model_error_fails_the_run_without_retrying_a_client_error(temporal_client: Any,
                                                                        task_queue: str) -> None:
    with FakeLLM([{"status": 400, "message": "bad request body"}]) as llm:
        async with _durable(temporal_client, task_queue, _agent(llm)) as durable:
            with pytest.raises(DurableRunError, match="bad request body") as info:
                await durable.run("go")
        assert len(llm.chat_requests) == 1  # non-retryable: one activity attempt
    assert info.value.error_type == "ModelError"


async def test_retryable_error_retried_by_the_activity_policy(temporal_client: Any, task_queue: str) -> None:
    # maxRetries 2 = 3 attempts: two 500s then an answer. The client's own retries are off in the worker.
    script = [{"status": 500, "message": "down"}, {"status": 503, "message": "down"}, {"text": "fine"}]
    with FakeLLM(script) as llm:
        agent = _agent(llm, config={"maxRetries": 2})
        async with _durable(temporal_client, task_queue, agent,
                            options=DurableOptions(initial_interval=0.05)) as durable:
            result = await durable.run("go")
        llm.assert_all_consumed()
    assert result.content == "fine" and len(llm.chat_requests) == 3


async def test_interrupt_waits_for_an_answer_then_goes_on(temporal_client: Any, task_queue: str) -> None:
    script = [{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "Which city?"}}]},
              {"text": "Paris it is."}]
    with FakeLLM(script) as llm:
        async with _durable(temporal_client, task_queue, _agent(llm, tools=[AskUserTool()])) as durable:
            run = await durable.start("plan a trip")
            first = await run.result()
            assert first.stop_reason == "interrupted"
            assert [q.question for q in first.interruption.questions] == ["Which city?"]
            assert (await run.status())["status"] == "interrupted"
            with pytest.raises(DurableRunError, match="q1"):
                await run.answer({"q1": 7})  # the schema wants a string: refused, nothing changes
            await run.answer({"q1": "Paris"})
            final = await run.result()
        llm.assert_all_consumed()
    assert final.stop_reason == "stop" and final.content == "Paris it is."
    last = llm.chat_requests[-1].messages
    assert last[-1] == {"role": "tool", "content": "Paris", "tool_call_id": "q1"}


async def test_cancel_after_tools_lets_the_tool_finish(temporal_client: Any, task_queue: str) -> None:
    script = [{"tool_calls": [{"id": "s1", "name": "slow", "arguments": {"seconds": 1.0}}]},
              {"text": "never"}]
    with FakeLLM(script) as llm:
        async with _durable(temporal_client, task_queue, _agent(llm, tools=[slow])) as durable:
            CALLS.clear()
            run = await durable.start("go")
            while "slow 1.0" not in CALLS:
                await asyncio.sleep(0.02)
            await run.cancel("after_tools")
            result = await run.result()
        assert len(llm.chat_requests) == 1  # no model call after the safe point
    assert result.stop_reason == "cancelled"
    assert CALLS == ["slow 1.0", "slow done"]
    assert [m.text for m in result.messages if m.role == "tool"] == ["waited"]


@pytest.mark.parametrize("mode,timeout", [("immediate", None), ("after_tools", 0.5)],
                         ids=["immediate", "after_tools-escalated"])
async def test_cancel_immediate_is_workflow_cancellation(temporal_client: Any, task_queue: str, mode: str,
                                                         timeout: float | None) -> None:
    """`immediate` is a workflow cancellation; a safe-point cancel with a timeout while a long tool runs
    escalates to immediate when the timeout (a durable timer in the workflow) runs out, as in process.
    Either way the tool in flight is stopped and no model call follows."""
    script = [{"tool_calls": [{"id": "s1", "name": "slow", "arguments": {"seconds": 30}}]}, {"text": "never"}]
    with FakeLLM(script) as llm:
        async with _durable(temporal_client, task_queue, _agent(llm, tools=[slow]),
                            options=DurableOptions(heartbeat_timeout=2.0)) as durable:
            CALLS.clear()
            run = await durable.start("go")
            while "slow 30.0" not in CALLS:
                await asyncio.sleep(0.02)
            await run.cancel(mode, timeout=timeout)
            result = await asyncio.wait_for(run.result(), 20)  # without the escalation: 30 s
        assert len(llm.chat_requests) == 1
    assert result.stop_reason == "cancelled"
    assert CALLS == ["slow 30.0", "slow cancelled"]  # the tool in flight was stopped before the run ended
    assert result.messages[-1].role == "tool" and result.messages[-1].text.startswith("Cancelled")


async def test_a_tool_reads_its_idempotency_key_as_in_process(temporal_client: Any, task_queue: str) -> None:
    """The key is the run's id (the workflow id), the step and the call id: what the tool sees in the
    activity, on any worker and any attempt (docs/durable.md, "Guarantees")."""
    script = [{"tool_calls": [{"id": "k1", "name": "key_of", "arguments": {}}]}, {"text": "ok"}]
    with FakeLLM(script) as llm:
        async with _durable(temporal_client, task_queue, _agent(llm, tools=[key_of])) as durable:
            result = await durable.run("go")
    run_id = result.metadata["run_id"]
    assert [m.text for m in result.messages if m.role == "tool"] == [f"{run_id}/1/k1"]


async def test_a_failed_tool_activity_is_an_error_result(temporal_client: Any, task_queue: str,
                                                        tmp_path: Path) -> None:
    """A tool activity whose attempts are spent (here its start-to-close timeout, one attempt) is an error
    result for the model, as a tool error in process: the loop goes on, its event says is_error."""
    from chainreact.state import open_store

    script = [{"tool_calls": [{"id": "s1", "name": "slow", "arguments": {"seconds": 5}}]},
              {"text": "gave up"}]
    async with await open_store(f"sqlite:///{tmp_path / 'state.db'}") as store:
        with FakeLLM(script) as llm:
            async with _durable(temporal_client, task_queue, _agent(llm, tools=[slow]), store=store,
                                options=DurableOptions(tool_timeout=1.0, tool_attempts=1)) as durable:
                run = await durable.start("go")
                events = [ev async for ev in run.events(store)]
                result = await run.result()
            answered = llm.chat_requests[1].messages[-1]
    assert result.content == "gave up"
    [res] = [e for e in events if e["type"] == "tool_result"]
    assert res["is_error"] is True and res["content"].startswith("Error: tool slow failed: ")
    assert answered == {"role": "tool", "content": res["content"], "tool_call_id": "s1"}


async def test_stream_events_reach_the_caller_through_the_store(temporal_client: Any, task_queue: str,
                                                                tmp_path: Path) -> None:
    from chainreact.state import open_store

    async with await open_store(f"sqlite:///{tmp_path / 'state.db'}") as store:
        with FakeLLM(tool_steps_responder(1)) as llm:
            async with _durable(temporal_client, task_queue, _agent(llm), store=store) as durable:
                run = await durable.start("go", stream=True)
                events = [ev async for ev in run.events(store)]
                result = await run.result()
        kinds = [e["type"] for e in events]
        assert kinds[0] == "run_start" and kinds[-1] == "final"
        assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("text_delta")
        deltas = [e["text"] for e in events if e["type"] == "text_delta"]
        assert len(deltas) > 1 and "".join(deltas) == result.content  # streamed in pieces, not once
        assert all(e["run_id"] == run.run_id for e in events)
        rec = await store.get_run(run.run_id)
        assert rec is not None and rec.status == "done"


async def test_run_returns_at_an_interrupt_and_the_run_goes_on_after_the_answer(temporal_client: Any,
                                                                                 task_queue: str) -> None:
    # durable.run() starts the run and waits in one request (update-with-start); an interrupt ends the wait.
    script = [{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "Which city?"}}]},
              {"text": "Lyon it is."}]
    with FakeLLM(script) as llm:
        async with _durable(temporal_client, task_queue, _agent(llm, tools=[AskUserTool()])) as durable:
            first = await durable.run("plan a trip")
            assert first.stop_reason == "interrupted" and first.interruption is not None
            run = await durable.get(first.metadata["run_id"])
            await run.answer({"q1": "Lyon"})
            final = await run.result()
        llm.assert_all_consumed()
    assert final.content == "Lyon it is." and final.metadata["run_id"] == first.metadata["run_id"]
