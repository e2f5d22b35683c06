"""ChatModelAgent extension points (issue 9 item 13): GenModelInput, ShouldRetry / retry events,
ShouldFailover / GetFailoverModel, streaming tools, deferred tools with tool search, Exit, OutputKey."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from chainreact.agent import Middleware
from chainreact.agent.middleware import StreamToolFn, ToolCallInfo
from chainreact.agent.streaming import streaming_tool
from chainreact.errors import ModelError
from chainreact.testing import FakeLLM
from chainreact.types import Message, RetryEvent, ToolOutputDelta, ToolResultEvent

from .conftest import call, convert_currency, get_weather, make_agent

FAIL = {"status": 500, "message": "boom", "headers": {"Retry-After": "0"}}


@pytest.mark.parametrize("is_async", [False, True])
async def test_gen_model_input_builds_the_messages(server: FakeLLM, is_async: bool) -> None:
    seen: list[tuple[str, Any]] = []

    def gen(instruction: str, data: Any) -> list[Any]:
        seen.append((instruction, data))
        return [Message("system", instruction.upper()), {"role": "user", "content": f"Q: {data['q']}"}]

    async def agen(instruction: str, data: Any) -> list[Any]:
        return gen(instruction, data)

    server.add_turns([{"text": "ok"}])
    agent = make_agent(server, instruction="be brief", gen_model_input=agen if is_async else gen)
    result = await agent.run({"q": "why?"})
    assert seen == [("be brief", {"q": "why?"})]
    assert server.chat_requests[0].body["messages"] == [{"role": "system", "content": "BE BRIEF"},
                                                        {"role": "user", "content": "Q: why?"}]
    assert result.content == "ok"


async def test_should_retry_false_gives_up_at_once(server: FakeLLM) -> None:
    server.add_turns([FAIL, {"text": "ok"}])
    agent = make_agent(server, should_retry=lambda e: False)
    with pytest.raises(ModelError):
        await agent.run("x")
    assert len(server.chat_requests) == 1


async def test_a_retry_shows_in_the_stream_before_the_answer(server: FakeLLM) -> None:
    server.add_turns([FAIL, {"text": "ok"}])
    events = [ev async for ev in make_agent(server, tools=[]).stream("x")]
    retries = [ev for ev in events if isinstance(ev, RetryEvent)]
    assert len(retries) == 1 and retries[0].attempt == 1 and retries[0].status == 500
    assert retries[0].run_id == events[0].run_id  # stamped as part of this run
    assert [ev.type for ev in events][-1] == "final" and events[-1].content == "ok"  # type: ignore[attr-defined]


async def test_get_failover_model_names_a_backup(server: FakeLLM) -> None:
    with FakeLLM([{"text": "from the backup"}]) as backup:
        server.add_turns([FAIL])
        asked: list[Exception] = []

        def failover(e: Exception) -> Any:
            asked.append(e)
            return {"url": backup.url, "model": "backup-model"} if len(asked) == 1 else None

        agent = make_agent(server, tools=[], should_retry=lambda e: False, should_failover=lambda e: True,
                           get_failover_model=failover)
        result = await agent.run("x")
        assert result.content == "from the backup" and len(asked) == 1
        assert backup.chat_requests[0].body["model"] == "backup-model"


@streaming_tool
async def build(target: str) -> AsyncIterator[str]:
    """Build a target, reporting progress."""
    for step in ("configure ", "compile ", "link "):
        yield step
    yield f"built {target}"


class Shout(Middleware):
    def wrap_stream_tool_call(self, call: StreamToolFn, info: ToolCallInfo) -> StreamToolFn:
        async def loud(args: dict[str, Any]) -> AsyncIterator[Any]:
            async for piece in call(args):
                yield piece.upper() if isinstance(piece, str) else piece

        return loud


@pytest.mark.parametrize("shout", [False, True])
async def test_streaming_tool_pieces_go_out_live(server: FakeLLM, shout: bool) -> None:
    server.add_turns([{"tool_calls": [call("build", {"target": "app"}, id="b1")]}, {"text": "done"}])
    agent = make_agent(server, tools=[build], middleware=[Shout()] if shout else [])
    events = [ev async for ev in agent.stream("build it")]
    deltas = [ev for ev in events if isinstance(ev, ToolOutputDelta)]
    want = ["configure ", "compile ", "link ", "built app"]
    assert [d.text for d in deltas] == ([w.upper() for w in want] if shout else want)
    assert all(d.call_id == "b1" and d.name == "build" and d.run_id == events[0].run_id for d in deltas)
    result_ev = next(ev for ev in events if isinstance(ev, ToolResultEvent))
    assert events.index(deltas[-1]) < events.index(result_ev)
    assert result_ev.content == "".join(d.text for d in deltas)
    assert server.chat_requests[1].body["messages"][-1]["content"] == result_ev.content


async def test_deferred_tools_are_found_and_loaded(server: FakeLLM) -> None:
    server.add_turns([
        {"tool_calls": [call("tool_search", {"query": "weather forecast"}, id="s")]},
        {"tool_calls": [call("get_weather", {"city": "Oslo"}, id="w")]},
        {"text": "It is sunny."},
    ])
    agent = make_agent(server, tools=[], deferred_tools=[get_weather, convert_currency])
    result = await agent.run("weather in Oslo?")
    names = [[t["function"]["name"] for t in r.body.get("tools", [])] for r in server.chat_requests]
    assert names == [["tool_search"], ["tool_search", "get_weather"], ["tool_search", "get_weather"]]
    tools = {m.tool_call_id: m.content for m in result.messages if m.role == "tool"}
    assert "get_weather" in str(tools["s"]) and "convert_currency" not in str(tools["s"])
    assert tools["w"] == "sunny in Oslo" and result.content == "It is sunny."


async def test_calling_a_deferred_tool_before_loading_it_is_an_error(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("get_weather", {"city": "Oslo"}, id="w")]}, {"text": "hm"}])
    result = await make_agent(server, tools=[], deferred_tools=[get_weather]).run("x")
    assert "unknown tool 'get_weather'" in str(result.messages[-2].content)


async def test_exit_tool_ends_the_run_with_its_argument(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("exit", {"final_result": "all done"})]}])
    result = await make_agent(server, exit_tool=True).run("x")
    assert result.content == "all done" and result.stop_reason == "return_directly"
    assert len(server.chat_requests) == 1


async def test_output_key_stores_the_answer_in_the_session_values(server: FakeLLM) -> None:
    server.add_turns([{"text": "forty-two"}, {"text": "again"}])
    values: dict[str, Any] = {"who": "ada"}
    agent = make_agent(server, tools=[], output_key="answer", instruction="Hi {who}.")
    result = await agent.run("q", session_values=values)
    assert values == {"who": "ada", "answer": "forty-two"} and result.session_values is values
    assert (await agent.run("q")).session_values == {"answer": "again"}
