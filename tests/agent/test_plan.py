"""The run plan: the loop runs a plan, every I/O of a run goes through the plan's two functions."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from chainreact.agent import Agent, RunPlan
from chainreact.agent.loop import ReactLoop
from chainreact.errors import ConfigError
from chainreact.testing import FakeLLM
from chainreact.types import ErrorEvent, Final

from .conftest import call, make_agent


async def test_plan_is_immutable_and_rendered_for_the_run(server: FakeLLM) -> None:
    agent = make_agent(server, instruction="Hello ${metadata.user}.", max_steps=7)
    plan = await agent.plan(metadata={"user": "ada"})
    assert plan.instruction == "Hello ada."
    assert plan.agent == "tester" and plan.limits.max_steps == 7
    assert [t.name for t in plan.tools] == ["add"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.instruction = "x"  # type: ignore[misc]
    assert (await agent.plan(metadata={"user": "bob"})).instruction == "Hello bob."


@pytest.mark.parametrize("stream", [False, True])
async def test_every_model_and_tool_call_goes_through_the_plan(server: FakeLLM, stream: bool) -> None:
    server.add_turns([
        {"tool_calls": [call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})]},
        {"tool_calls": [call("add", {"a": 5, "b": 6})]},
        {"text": "done"},
    ])
    agent = make_agent(server)
    plan = await agent.plan()
    seen: list[Any] = []

    def model(messages: Any, tools: Any, *, stream: bool, on_event: Any) -> Any:
        seen.append(("model", len(messages)))
        return plan.model(messages, tools, stream=stream, on_event=on_event)

    async def call_tool(c: Any, tool: Any, args: dict[str, Any], ctx: Any) -> Any:
        seen.append(("tool", args["a"]))
        return await plan.call_tool(c, tool, args, ctx)

    loop = ReactLoop(plan.replace(model=model, call_tool=call_tool), streaming=stream)
    events = [ev async for ev in loop.events("sum things")]
    assert isinstance(events[-1], Final) and events[-1].content == "done"
    assert seen == [("model", 2), ("tool", 1), ("tool", 3), ("model", 5), ("tool", 5), ("model", 7)]
    assert len(server.requests) == 3  # nothing reached the server except through plan.model


async def test_a_durable_layer_can_replace_the_io_without_a_server() -> None:
    """The loop needs nothing but the plan: scripted I/O functions stand in for model and tools."""
    from chainreact.tools.base import ToolOutput
    from chainreact.types import Message, ModelResponse, ToolCall

    replies = [Message("assistant", "", [ToolCall("c1", "add", '{"a": 2, "b": 2}')]),
               Message("assistant", "4")]

    async def model(messages: Any, tools: Any, *, stream: bool, on_event: Any) -> Any:
        yield ModelResponse(replies.pop(0), finish_reason="stop")

    async def call_tool(c: Any, tool: Any, args: dict[str, Any], ctx: Any) -> ToolOutput:
        return ToolOutput(str(args["a"] + args["b"]))

    agent = Agent(name="offline", instruction="x", url="http://127.0.0.1:9/v1", model="m",
                  tools=[_add()])
    plan = (await agent.plan()).replace(model=model, call_tool=call_tool)
    loop = ReactLoop(plan, streaming=False)
    [ev async for ev in loop.events("2+2")]
    assert loop.result is not None and loop.result.content == "4"
    assert [m.text for m in loop.result.messages if m.role == "tool"] == ["4"]


def _add() -> Any:
    from .conftest import add

    return add


async def test_a_plan_that_cannot_be_made_ends_the_stream_with_an_error_event(server: FakeLLM) -> None:
    agent = make_agent(server, tools=[{"type": "builtin"}])  # a builtin without a name
    events: list[Any] = []
    with pytest.raises(ConfigError):
        async for ev in agent.stream("hi"):
            events.append(ev)
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    assert events[0].agent == "tester" and "needs a name" in events[0].error
    run = agent.start("hi")
    got = [ev async for ev in _drain(run)]
    assert isinstance(got[0], ErrorEvent) and got[0].run_id == run.run_id
    assert len(server.requests) == 0


async def _drain(run: Any) -> Any:
    try:
        async for ev in run:
            yield ev
    except ConfigError:
        pass


async def test_self_heal_switches_the_agent_to_drain_through_the_plan(server: FakeLLM) -> None:
    agent = make_agent(server, stream_tool_call_check="firstContent")
    plan = await agent.plan()
    assert isinstance(plan, RunPlan) and plan.detection.mode == "firstContent"
    server.add_turns([{"text": "Let me add. ", "tool_calls": [call("add", {"a": 1, "b": 1})]}, {"text": "2"}])
    events = [ev async for ev in ReactLoop(plan, streaming=True).events("1+1")]
    assert any(ev.type == "preamble" for ev in events)
    assert plan.detection.mode == "firstContent"  # the plan did not change
    assert (await agent.plan()).detection.mode == "drain"  # the agent's next plans drain
