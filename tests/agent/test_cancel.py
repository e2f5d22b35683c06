"""Cancel at each safe point, escalation, and resuming from a cancelled history."""

from __future__ import annotations

import asyncio

from chainreact.agent import CancelMode
from chainreact.agent.cancel import CANCELLED_RESULT
from chainreact.testing import FakeLLM
from chainreact.tools import tool
from chainreact.types import Cancelled, ToolCallEvent

from .conftest import call, make_agent


async def test_immediate_cancel_during_model_call(server: FakeLLM) -> None:
    server.add_turns([{"text": "never", "first_byte_delay": 10}])
    run = make_agent(server, tools=[]).start("slow")
    await asyncio.sleep(0.2)
    handle = run.cancel("immediate")
    assert await asyncio.wait_for(handle.wait(), 5) == "cancelled"
    result = await run.result()
    assert result.stop_reason == "cancelled"
    assert [m.role for m in result.messages] == ["system", "user"]
    events = [e async for e in run]
    assert isinstance(events[-1], Cancelled) and events[-1].mode == "immediate"


async def test_after_model_gives_pending_calls_cancelled_results(server: FakeLLM) -> None:
    ran = []

    @tool
    def work() -> str:
        """Work."""
        ran.append(1)
        return "worked"

    server.add_turns([{"tool_calls": [call("work", {}, id="w1"), call("work", {"n": 1}, id="w2")],
                       "first_byte_delay": 0.3}])
    run = make_agent(server, tools=[work]).start("go")
    handle = run.cancel(CancelMode.AFTER_MODEL)
    assert await asyncio.wait_for(handle.wait(), 5) == "cancelled"
    result = await run.result()
    assert ran == []  # stopped before the tools
    tail = result.messages[-3:]
    assert tail[0].role == "assistant" and len(tail[0].tool_calls or []) == 2
    assert [(m.tool_call_id, m.content) for m in tail[1:]] == [
        ("w1", CANCELLED_RESULT), ("w2", CANCELLED_RESULT)]

    # the repaired history is valid input for a new run
    server.add_turns([{"text": "resumed"}])
    again = await make_agent(server, tools=[work]).run(
        {"messages": [m.to_openai() for m in result.messages] + [{"role": "user", "content": "continue"}]})
    assert again.content == "resumed"
    sent = server.chat_requests[-1].body["messages"]
    assert [m["role"] for m in sent][-4:] == ["assistant", "tool", "tool", "user"]


async def test_after_tools_lets_the_tools_finish(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("add", {"a": 1, "b": 2}, id="c")]}, {"text": "not reached"}])
    run = make_agent(server).start("go")
    async for ev in run:
        if isinstance(ev, ToolCallEvent):
            run.cancel("after_tools")
    result = await run.result()
    assert result.stop_reason == "cancelled"
    assert result.messages[-1].role == "tool" and result.messages[-1].content == "3"
    assert len(server.chat_requests) == 1


async def test_combined_modes_first_safe_point_wins(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("add", {"a": 1, "b": 2})], "first_byte_delay": 0.3}])
    run = make_agent(server).start("go")
    run.cancel(CancelMode.AFTER_MODEL | CancelMode.AFTER_TOOLS)
    result = await run.result()
    assert result.messages[-1].content == CANCELLED_RESULT  # after_model came first


async def test_timeout_escalates_to_immediate(server: FakeLLM) -> None:
    started = asyncio.Event()

    @tool
    async def forever() -> str:
        """Never ends."""
        started.set()
        await asyncio.sleep(60)
        return "unreachable"

    server.add_turns([{"tool_calls": [call("forever", {}, id="f")]}])
    run = make_agent(server, tools=[forever]).start("go")
    await asyncio.wait_for(started.wait(), 5)
    handle = run.cancel("after_tools", timeout=0.2)
    assert await asyncio.wait_for(handle.wait(), 5) == "escalated"
    result = await run.result()
    assert result.messages[-1].tool_call_id == "f" and result.messages[-1].content == CANCELLED_RESULT


async def test_cancel_after_finish_reports_finished(server: FakeLLM) -> None:
    server.add_turns([{"text": "quick"}])
    run = make_agent(server, tools=[]).start("go")
    result = await run.result()
    assert result.content == "quick"
    assert await run.cancel("immediate").wait() == "finished"


async def test_after_model_keeps_a_final_answer_the_model_completed(server: FakeLLM) -> None:
    """Issue 9 item 9: the model's answer is complete at the safe point, so the run ends with it."""
    server.add_turns([{"text": "the complete answer", "first_byte_delay": 0.3}])
    run = make_agent(server).start("go")
    handle = run.cancel("after_model")
    events = [ev async for ev in run]
    assert await asyncio.wait_for(handle.wait(), 5) == "finished"
    result = await run.result()
    assert result.content == "the complete answer" and result.stop_reason == "stop"
    assert events[-1].type == "final" and result.messages[-1].content == "the complete answer"
