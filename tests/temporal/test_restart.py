"""An interrupted run outlives its worker: answered or cancelled while no worker runs, then finished by a
new worker (a fresh process state: the history is replayed, no model or tool call is repeated)."""

from __future__ import annotations

import asyncio
from typing import Any

from chainreact import Agent, tool
from chainreact.agent.interrupts import AskUserTool, require_approval
from chainreact.durable import AgentHost, DurableAgent, durable_worker
from chainreact.testing import FakeLLM

SENT: list[str] = []


@tool
def send(to: str) -> str:
    """Send the report."""
    SENT.append(to)
    return f"sent to {to}"


def _agent(llm: FakeLLM) -> Agent:
    # A new Agent object per worker: nothing survives in memory from the first worker.
    return Agent(name="reporter", instruction="Report.", url=llm.url, model="m",
                 tools=[AskUserTool(), require_approval(send)])


async def test_answer_and_approval_across_worker_restarts(temporal_client: Any, task_queue: str) -> None:
    script = [{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "To whom?"}}]},
              {"tool_calls": [{"id": "s1", "name": "send", "arguments": {"to": "ana"}}]},
              {"text": "Report sent to ana."}]
    SENT.clear()
    with FakeLLM(script) as llm:
        durable = DurableAgent("reporter", client=temporal_client, task_queue=task_queue)
        async with durable_worker(temporal_client, task_queue, AgentHost([_agent(llm)])):
            run = await durable.start("send the report")
            first = await run.result()
        assert first.stop_reason == "interrupted"
        # No worker runs: the answer (an update, validated by the workflow) waits for one to come back.
        answering = asyncio.ensure_future(run.answer({"q1": "ana"}))
        await asyncio.sleep(0.5)
        assert not answering.done()
        async with durable_worker(temporal_client, task_queue, AgentHost([_agent(llm)])):
            await answering
            second = await run.result()
        assert second.stop_reason == "interrupted"
        assert second.interruption.questions[0].kind == "approval" and SENT == []
        async with durable_worker(temporal_client, task_queue, AgentHost([_agent(llm)])):
            await run.answer({"s1": True})
            final = await run.result()
        llm.assert_all_consumed()
        assert len(llm.chat_requests) == 3  # no model call repeated by the replays
    assert final.content == "Report sent to ana." and SENT == ["ana"]
    assert [m.text for m in final.messages if m.role == "tool"] == ["ana", "sent to ana"]


async def test_cancel_while_interrupted_and_no_worker_runs(temporal_client: Any, task_queue: str) -> None:
    script = [{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "To whom?"}}]}]
    with FakeLLM(script) as llm:
        durable = DurableAgent("reporter", client=temporal_client, task_queue=task_queue)
        async with durable_worker(temporal_client, task_queue, AgentHost([_agent(llm)])):
            run = await durable.start("send the report")
            assert (await run.result()).stop_reason == "interrupted"
        await run.cancel("after_tools")  # a signal, delivered when a worker is back
        async with durable_worker(temporal_client, task_queue, AgentHost([_agent(llm)])):
            result = await run.result()
    assert result.stop_reason == "cancelled"
    assert result.messages[-1].role == "tool" and result.messages[-1].text.startswith("Cancelled")
    assert len(llm.chat_requests) == 1
