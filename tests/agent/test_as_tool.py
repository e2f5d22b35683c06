"""Agents as tools of other agents: input, history, nested events."""

from __future__ import annotations

from chainreact.agent import Agent
from chainreact.testing import FakeLLM
from chainreact.types import TextDelta, ToolResultEvent

from .conftest import call


def two_agents(outer_srv: FakeLLM, inner_srv: FakeLLM, **kw: object) -> tuple[Agent, Agent]:
    inner = Agent(name="researcher", description="Finds facts.", instruction="You research.",
                  url=inner_srv.url, model="inner-model")
    outer = Agent(name="boss", instruction="You delegate.", url=outer_srv.url, model="outer-model",
                  tools=[inner.as_tool(**kw)])  # type: ignore[arg-type]
    return outer, inner


async def test_default_input_and_result() -> None:
    with FakeLLM([]) as o, FakeLLM([]) as i:
        o.add_turns([{"tool_calls": [call("researcher", {"request": "capital of France?"}, id="r")]},
                     {"text": "Paris, says my researcher."}])
        i.add_turns([{"text": "Paris"}])
        outer, _ = two_agents(o, i)
        result = await outer.run("ask")
        assert result.content == "Paris, says my researcher."
        assert [m.content for m in result.messages if m.role == "tool"] == ["Paris"]
        inner_sent = i.chat_requests[0].body["messages"]
        assert inner_sent[-1] == {"role": "user", "content": "capital of France?"}
        tool_spec = o.chat_requests[0].body["tools"][0]["function"]
        assert tool_spec["name"] == "researcher" and tool_spec["description"] == "Finds facts."
        assert tool_spec["parameters"]["required"] == ["request"]


async def test_full_history_is_passed_as_context() -> None:
    with FakeLLM([]) as o, FakeLLM([]) as i:
        o.add_turns([{"tool_calls": [call("researcher", {"request": "go deeper"})]}, {"text": "done"}])
        i.add_turns([{"text": "deep"}])
        outer, _ = two_agents(o, i, full_history=True)
        await outer.run("my original question about whales")
        inner_sent = i.chat_requests[0].body["messages"]
        assert "my original question about whales" in inner_sent[1]["content"]
        assert inner_sent[-1]["content"] == "go deeper"
        assert all(m["role"] != "tool" for m in inner_sent)


async def test_custom_input_schema() -> None:
    schema = {"type": "object", "properties": {"topic": {"type": "string"}, "depth": {"type": "integer"}},
              "required": ["topic"]}
    with FakeLLM([]) as o, FakeLLM([]) as i:
        o.add_turns([{"tool_calls": [call("researcher", {"topic": "owls", "depth": 2})]}, {"text": "ok"}])
        i.add_turns([{"text": "owls are birds"}])
        outer, _ = two_agents(o, i, input_schema=schema)
        await outer.run("x")
        assert i.chat_requests[0].body["messages"][-1]["content"] == '{"topic":"owls","depth":2}'


async def test_internal_events_stream_live_with_path() -> None:
    with FakeLLM([]) as o, FakeLLM([]) as i:
        o.add_turns([{"tool_calls": [call("researcher", {"request": "q"}, id="r")]}, {"text": "outer done"}])
        i.add_turns([{"text": "inner words here", "chunks": 3}])
        outer, _ = two_agents(o, i, emit_internal_events=True)
        events = [e async for e in outer.stream("x")]
        inner_text = [e for e in events if isinstance(e, TextDelta) and e.agent == "researcher"]
        assert "".join(e.text for e in inner_text) == "inner words here"
        assert all(e.path == ("boss", "researcher") for e in inner_text)
        result_idx = next(n for n, e in enumerate(events) if isinstance(e, ToolResultEvent))
        assert all(events.index(e) < result_idx for e in inner_text)  # live, before the tool result
        outer_text = [e for e in events if isinstance(e, TextDelta) and e.agent == "boss"]
        assert "".join(e.text for e in outer_text) == "outer done"


async def test_an_inner_interrupt_is_an_error_result_not_an_empty_answer() -> None:
    from chainreact.agent import ToolInterrupt
    from chainreact.tools import tool

    from .conftest import call

    @tool
    def ask_user(question: str) -> str:
        """Ask the user."""
        raise ToolInterrupt(question)

    with FakeLLM([]) as o, FakeLLM([]) as i:
        inner = Agent(name="researcher", url=i.url, model="m", tools=[ask_user])
        outer = Agent(name="boss", url=o.url, model="m", tools=[inner.as_tool()])
        o.add_turns([{"tool_calls": [call("researcher", {"request": "find it"}, id="r")]}, {"text": "ok"}])
        i.add_turns([{"tool_calls": [call("ask_user", {"question": "Which year?"})]}])
        result = await outer.run("go")
        tool_msg = next(m for m in result.messages if m.role == "tool")
        assert str(tool_msg.content).startswith("Error: the researcher agent stopped to ask: Which year?")
