"""Checkpoints at safe points, tools that interrupt a run, and resuming without running anything twice."""

from __future__ import annotations

from typing import Any

from chainreact.agent import Checkpoint, Resume, ToolInterrupt
from chainreact.testing import FakeLLM
from chainreact.tools import ToolContext, tool
from chainreact.types import Interrupted

from .conftest import call, make_agent

ran: list[str] = []


@tool
def weather(city: str) -> str:
    """Weather for a city."""
    ran.append(city)
    return f"21 in {city}"


@tool
def ask_user(question: str, ctx: ToolContext) -> str:
    """Ask the user a question."""
    if "answer" not in ctx.state:
        raise ToolInterrupt(question, schema={"enum": ["C", "F"]})
    return str(ctx.state["answer"])


def saved(points: list[Checkpoint]):  # type: ignore[no-untyped-def]
    async def save(cp: Checkpoint) -> None:
        # serialise now, as a store would: the messages list lives on
        points.append(Checkpoint(cp.run_id, cp.agent, cp.step, cp.point,
                                 [m.to_openai() for m in cp.messages],  # type: ignore[misc]
                                 list(cp.pending), dict(cp.completed), list(cp.questions)))
    return save


async def test_checkpoints_at_every_safe_point(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("add", {"a": 1, "b": 2}, id="a1")]},
                      {"tool_calls": [call("add", {"a": 3, "b": 4}, id="a2")]}, {"text": "done"}])
    points: list[Checkpoint] = []
    result = await make_agent(server).run("sum", checkpoint=saved(points))
    assert [(p.point, p.step, [c.id for c in p.pending], sorted(p.completed)) for p in points] == [
        ("after_model", 1, ["a1"], []), ("after_tools", 1, [], ["a1"]),
        ("after_model", 2, ["a2"], []), ("after_tools", 2, [], ["a2"])]
    assert points[1].messages[-1] == {"role": "tool", "content": "3", "tool_call_id": "a1"}
    assert len(points[3].messages) == len(result.messages) - 1  # all but the final answer
    assert {p.run_id for p in points} == {result.metadata["run_id"]}


async def test_interrupt_then_resume_runs_each_call_once(server: FakeLLM) -> None:
    ran.clear()
    server.add_turns([
        {"tool_calls": [call("weather", {"city": "Lyon"}, id="w"),
                        call("ask_user", {"question": "Unit?"}, id="q")]},
        {"text": "21 C in Lyon"},
    ])
    points: list[Checkpoint] = []
    agent = make_agent(server, tools=[weather, ask_user], checkpoint=saved(points))
    events = [ev async for ev in agent.stream("weather in Lyon?")]
    assert isinstance(events[-1], Interrupted)
    assert events[-1].questions == [{"id": "q", "kind": "ask_user", "question": "Unit?", "tool": "ask_user",
                                     "arguments": '{"question":"Unit?"}', "schema": {"enum": ["C", "F"]}}]
    assert ran == ["Lyon"] and len(server.chat_requests) == 1
    cp = points[-1]
    assert cp.point == "interrupted" and [c.id for c in cp.pending] == ["q"] and list(cp.completed) == ["w"]
    assert [q.id for q in cp.questions] == ["q"]

    # later, maybe in another process: go on from the checkpoint with the answer
    result = await agent.run(resume=Resume(cp.messages, cp.step, cp.pending, cp.completed,
                                           answers={"q": "C"}, run_id=cp.run_id))
    assert result.content == "21 C in Lyon" and result.stop_reason == "stop"
    assert ran == ["Lyon"]  # the completed call did not run again
    sent = server.chat_requests[1].body["messages"]
    assert [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"] == [
        ("w", "21 in Lyon"), ("q", "C")]
    assert result.metadata["run_id"] == cp.run_id


async def test_interrupted_result_without_stream(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("ask_user", {"question": "Name?"}, id="q")]}])
    result = await make_agent(server, tools=[ask_user]).run("hi")
    assert result.stop_reason == "interrupted" and result.interruption is not None
    assert [q.question for q in result.interruption.questions] == ["Name?"]
    assert [c.id for c in result.interruption.pending] == ["q"]


async def test_resume_after_a_crash_between_model_and_tools(server: FakeLLM) -> None:
    ran.clear()
    server.add_turns([{"tool_calls": [call("weather", {"city": "Oslo"}, id="w")]}])
    points: list[Checkpoint] = []

    async def crash_after_model(cp: Checkpoint) -> None:
        await saved(points)(cp)
        if cp.point == "after_model":
            raise SystemExit  # the process dies right after saving

    try:
        await make_agent(server, tools=[weather]).run("weather?", checkpoint=crash_after_model)
    except SystemExit:
        pass
    assert ran == [] and points[-1].point == "after_model"
    server.add_turns([{"text": "21 in Oslo"}])
    cp = points[-1]
    agent: Any = make_agent(server, tools=[weather])
    result = await agent.run(resume=Resume(cp.messages, cp.step, cp.pending, cp.completed))
    assert ran == ["Oslo"] and result.content == "21 in Oslo" and result.steps == 2


async def test_start_resumes_too_and_keeps_the_run_id(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("ask_user", {"question": "Name?"}, id="q")]}, {"text": "Hi Ada"}])
    points: list[Checkpoint] = []
    agent = make_agent(server, tools=[ask_user])
    first = await agent.start("hi", checkpoint=saved(points)).result()
    assert first.stop_reason == "interrupted"
    cp = points[-1]
    run = agent.start(resume=Resume(cp.messages, cp.step, cp.pending, cp.completed, answers={"q": "Ada"},
                                    run_id=cp.run_id))
    assert run.run_id == cp.run_id
    events = [ev async for ev in run]
    assert events[-1].type == "final" and (await run.result()).content == "Hi Ada"
    assert {ev.run_id for ev in events} == {cp.run_id}


async def test_parallel_calls_checkpoint_as_each_finishes(server: FakeLLM) -> None:
    import asyncio

    done: list[str] = []

    @tool
    async def fast(n: int) -> str:
        """Fast."""
        done.append(f"fast{n}")
        return f"fast {n}"

    @tool
    async def slow(n: int) -> str:
        """Slow."""
        await asyncio.sleep(0.05)
        done.append(f"slow{n}")
        return f"slow {n}"

    server.add_turns([{"tool_calls": [call("slow", {"n": 1}, id="s"), call("fast", {"n": 2}, id="f")]},
                      {"text": "both"}])
    points: list[Checkpoint] = []
    await make_agent(server, tools=[slow, fast]).run("go", checkpoint=saved(points))
    assert [(p.point, sorted(p.completed)) for p in points] == [
        ("after_model", []), ("tool_result", ["f"]), ("tool_result", ["f", "s"]), ("after_tools", ["f", "s"])]

    # a process that died after the first call finished resumes with only the other call
    done.clear()
    cp = points[1]
    assert [c.id for c in cp.pending] == ["s", "f"]
    server.add_turns([{"text": "both again"}])
    result = await make_agent(server, tools=[slow, fast]).run(
        resume=Resume(cp.messages, cp.step, cp.pending, cp.completed))
    assert done == ["slow1"] and result.content == "both again"
    sent = server.chat_requests[-1].body["messages"]
    assert [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"] == [
        ("s", "slow 1"), ("f", "fast 2")]
