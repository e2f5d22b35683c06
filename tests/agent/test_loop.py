"""The ReAct loop against the scripted server: every rule runs in both streaming and non-streaming mode."""

from __future__ import annotations

import asyncio

import pytest

from chainreact.agent import Agent
from chainreact.errors import MaxStepsError, ModelError
from chainreact.testing import FakeLLM
from chainreact.tools import ToolContext, tool
from chainreact.types import Final, ModelCallEnd, RunStart, StepEnd, TextDelta, ToolCallEvent, ToolResultEvent

from .conftest import call, make_agent

both = pytest.mark.parametrize("stream", [False, True], ids=["sync", "stream"])


@both
async def test_plain_answer(server: FakeLLM, stream: bool) -> None:
    server.add_turns([{"text": "Hello there, friend.", "usage": {"prompt_tokens": 7, "completion_tokens": 4,
                                                                  "total_tokens": 11}}])
    result = await make_agent(server, tools=[]).run("hi", stream=stream)
    assert result.content == "Hello there, friend."
    assert result.steps == 1 and result.stop_reason == "stop"
    assert result.usage.total_tokens == 11
    assert [m.role for m in result.messages] == ["system", "user", "assistant"]
    body = server.chat_requests[0].body
    assert body["messages"][0] == {"role": "system", "content": "You are a test agent."}
    assert body["messages"][1] == {"role": "user", "content": "hi"}
    assert bool(body.get("stream")) is stream


@both
async def test_tool_round_then_answer(server: FakeLLM, stream: bool) -> None:
    server.add_turns([
        {"tool_calls": [call("add", {"a": 2, "b": 3}, id="c1")], "arg_chunks": 3},
        {"text": "The sum is 5."},
    ])
    result = await make_agent(server).run("2+3?", stream=stream)
    assert result.content == "The sum is 5."
    assert result.steps == 2
    second = server.chat_requests[1].body["messages"]
    assert second[-2]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a": 2, "b": 3}'} or \
        second[-2]["tool_calls"][0]["function"]["name"] == "add"
    assert second[-1] == {"role": "tool", "content": "5", "tool_call_id": "c1"}
    # tools were offered on every step
    assert server.chat_requests[0].body["tools"][0]["function"]["name"] == "add"


@both
async def test_events_are_stamped_and_ordered(server: FakeLLM, stream: bool) -> None:
    server.add_turns([{"tool_calls": [call("add", {"a": 1, "b": 1})]}, {"text": "two"}])
    agent = make_agent(server)
    events = [ev async for ev in agent.stream("1+1")] if stream else None
    if events is None:
        from chainreact.agent.loop import ReactLoop

        loop = ReactLoop(await agent.plan(), streaming=False)
        events = [ev async for ev in loop.events("1+1")]
    types = [type(e) for e in events]
    assert types[0] is RunStart and types[-1] is Final
    assert ToolCallEvent in types and ToolResultEvent in types and StepEnd in types
    assert types.index(ToolCallEvent) < types.index(ToolResultEvent) < types.index(StepEnd)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len({e.run_id for e in events}) == 1
    assert all(e.agent == "tester" and e.path == ("tester",) for e in events)
    assert {e.step for e in events if isinstance(e, ModelCallEnd)} == {1, 2}
    final = events[-1]
    assert isinstance(final, Final) and final.content == "two" and final.full_content
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "two"


@both
async def test_parallel_calls_run_concurrently_results_in_call_order(server: FakeLLM, stream: bool) -> None:
    barrier = asyncio.Barrier(2)

    @tool
    async def wait_a() -> str:
        """A"""
        await asyncio.wait_for(barrier.wait(), 5)  # deadlocks (then times out) if run one after the other
        await asyncio.sleep(0.05)
        return "A done"

    @tool
    async def wait_b() -> str:
        """B"""
        await asyncio.wait_for(barrier.wait(), 5)
        return "B done"

    server.add_turns([
        {"tool_calls": [call("wait_a", {}, id="a"), call("wait_b", {}, id="b")], "interleave": True},
        {"text": "ok"},
    ])
    result = await make_agent(server, tools=[wait_a, wait_b]).run("go", stream=stream)
    tool_msgs = [m for m in result.messages if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tool_msgs] == [("a", "A done"), ("b", "B done")]


async def test_sequential_option_runs_calls_in_order(server: FakeLLM) -> None:
    order: list[str] = []

    @tool
    async def first() -> str:
        """1"""
        order.append("first start")
        await asyncio.sleep(0.05)
        order.append("first end")
        return "1"

    @tool
    def second() -> str:
        """2"""
        order.append("second")
        return "2"

    server.add_turns([{"tool_calls": [call("first", {}), call("second", {})]}, {"text": "done"}])
    await make_agent(server, tools=[first, second], parallel_tool_calls=False).run("go")
    assert order == ["first start", "first end", "second"]


@both
async def test_bad_calls_become_error_results(server: FakeLLM, stream: bool) -> None:
    @tool
    def boom(x: int) -> str:
        """Explodes."""
        raise RuntimeError(f"kaboom {x}")

    server.add_turns([
        {"tool_calls": [
            call("nope", {}, id="u"),
            call("add", "{not json", id="j"),
            call("add", {"a": "two", "b": 1}, id="s"),
            call("boom", {"x": 4}, id="e"),
            call("add", "", id="empty"),
        ]},
        {"text": "handled"},
    ])
    agent = make_agent(server, tools=[boom, _add_tool()])
    results = {}
    async for ev in (agent.stream("x") if stream else _events(agent, "x")):
        if isinstance(ev, ToolResultEvent):
            results[ev.call_id] = ev
    assert results["u"].is_error and "unknown tool 'nope'" in results["u"].content
    assert "add" in results["u"].content and "boom" in results["u"].content
    assert results["j"].is_error and "not valid JSON" in results["j"].content
    assert results["s"].is_error and "$.a" in results["s"].content
    assert results["e"].is_error and results["e"].content == "Error: RuntimeError: kaboom 4"
    # empty arguments mean {}: the schema then reports the missing fields, not a JSON error
    assert results["empty"].is_error and "required" in results["empty"].content.lower()
    last = server.chat_requests[1].body["messages"]
    assert sum(1 for m in last if m["role"] == "tool") == 5


def _add_tool():
    from .conftest import add

    return add


async def _events(agent: Agent, data: object):
    from chainreact.agent.loop import ReactLoop

    async for ev in ReactLoop(await agent.plan(), streaming=False).events(data):
        yield ev


async def test_tool_output_is_truncated_with_marker(server: FakeLLM) -> None:
    @tool
    def big() -> str:
        """Big output."""
        return "é" * 100

    server.add_turns([{"tool_calls": [call("big", {})]}, {"text": "ok"}])
    result = await make_agent(server, tools=[big], max_tool_output=10).run("x")
    content = next(m for m in result.messages if m.role == "tool").content
    assert content.startswith("é" * 10 + "\n[output truncated: 100 characters")
    assert "é" * 11 not in content


@both
async def test_doom_loop_guard_refuses_third_identical_call(server: FakeLLM, stream: bool) -> None:
    runs = []

    @tool
    def look(q: str) -> str:
        """Look something up."""
        runs.append(q)
        return f"found {q}"

    same = {"tool_calls": [call("look", {"q": "x"})]}
    server.add_turns([same, {"tool_calls": [call("look", {"q": "y"})]}, same,
                      {"tool_calls": [call("look", '{ "q" : "x" }')]}, {"text": "giving up"}])
    result = await make_agent(server, tools=[look]).run("find", stream=stream)
    assert runs == ["x", "y", "x"]  # the 3rd identical call (canonicalised arguments) never ran
    refused = [m for m in result.messages if m.role == "tool"][-1].content
    assert refused.startswith("Error: look was already called 2 times")
    assert result.content == "giving up"


@both
async def test_max_steps_asks_for_final_answer_without_tools(server: FakeLLM, stream: bool) -> None:
    server.add_turns([
        {"tool_calls": [call("add", {"a": 1, "b": 1})]},
        {"tool_calls": [call("add", {"a": 2, "b": 2})]},
        {"text": "best effort: 4"},
    ])
    result = await make_agent(server, max_steps=2).run("loop", stream=stream)
    assert result.stop_reason == "max_steps" and result.content == "best effort: 4"
    assert result.steps == 3
    last = server.chat_requests[2].body
    assert "tools" not in last
    assert "maximum number of steps" in last["messages"][-1]["content"]


async def test_max_steps_error_policy_raises(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("add", {"a": 1, "b": 1})]}])
    with pytest.raises(MaxStepsError, match="maxStep=1"):
        await make_agent(server, max_steps=1, max_step_policy="error").run("loop")


@both
async def test_return_directly_ends_with_the_tool_result(server: FakeLLM, stream: bool) -> None:
    @tool
    def lookup(key: str) -> str:
        """Look up a key."""
        return f"value-of-{key}"

    server.add_turns([{"tool_calls": [call("add", {"a": 1, "b": 2}), call("lookup", {"key": "k"})]}])
    result = await make_agent(server, tools=[_add_tool(), lookup],
                              return_directly={"lookup"}).run("x", stream=stream)
    assert result.content == "value-of-k" and result.stop_reason == "return_directly"
    assert len(server.chat_requests) == 1


async def test_model_error_surfaces_typed(server: FakeLLM) -> None:
    server.add_turns([{"status": 400, "body": {"error": {"message": "bad model name"}}}])
    agent = make_agent(server)
    with pytest.raises(ModelError) as ei:
        await agent.run("x")
    assert ei.value.status == 400 and "bad model name" in str(ei.value)


async def test_keep_think_controls_reasoning(server: FakeLLM) -> None:
    server.add_turns([{"reasoning": "thinking hard", "text": "answer"},
                      {"reasoning": "thinking hard", "text": "answer"}])
    kept = await make_agent(server, keep_think=True).run("q", stream=True)
    assert kept.reasoning == "thinking hard" and kept.content == "answer"
    dropped = await make_agent(server).run("q", stream=True)
    assert dropped.reasoning is None and dropped.content == "answer"


async def test_think_tags_are_removed_from_content_unless_kept(server: FakeLLM) -> None:
    server.add_turns([{"text": "<think>hmm</think>\nThe answer."}])
    result = await make_agent(server, tools=[]).run("q")
    assert result.content == "The answer."


async def test_tool_context_carries_history(server: FakeLLM) -> None:
    seen: list[int] = []

    @tool
    def peek(ctx: ToolContext) -> str:
        """Peek at the conversation."""
        seen.append(len(ctx.messages))
        return ctx.call_id

    server.add_turns([{"tool_calls": [call("peek", {}, id="p1")]}, {"text": "ok"}])
    result = await make_agent(server, tools=[peek]).run("x")
    assert seen == [3]  # system, user, assistant-with-call
    assert next(m for m in result.messages if m.role == "tool").content == "p1"
    assert "ctx" not in peek.parameters["properties"]


async def test_tool_context_idempotency_key_is_run_step_and_call(server: FakeLLM) -> None:
    keys: list[str] = []

    @tool
    def charge(cents: int, ctx: ToolContext) -> str:
        """Charge once."""
        keys.append(ctx.idempotency_key)
        return "charged"

    server.add_turns([{"tool_calls": [call("charge", {"cents": 1}, id="c1")]},
                      {"tool_calls": [call("charge", {"cents": 2}, id="c1"),
                                      call("charge", {"cents": 3}, id="c2")]},
                      {"text": "ok"}])
    result = await make_agent(server, tools=[charge]).run("x")
    run_id = result.metadata["run_id"]
    # The same call id in a later step is another call: its key differs.
    assert sorted(keys) == [f"{run_id}/1/c1", f"{run_id}/2/c1", f"{run_id}/2/c2"]


def test_run_sync(server: FakeLLM) -> None:
    server.add_turns([{"text": "one"}, {"text": "two"}])
    agent = make_agent(server, tools=[])
    assert agent.run_sync("a").content == "one"
    assert agent.run_sync("b").content == "two"  # the pooled client survives between sync calls
