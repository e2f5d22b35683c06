"""before_agent may change the run's deferred tools (the ChatModelAgent design's BeforeAgent may change
ToolSearchTool): add them, remove them, or turn deferral off, for that run only."""

from __future__ import annotations

from typing import Any

import pytest

from chainreact.agent import AgentContext, Middleware
from chainreact.testing import FakeLLM

from .conftest import add, call, convert_currency, get_weather, make_agent


class Defer(Middleware):
    """Changes the deferred tools of the runs made while `on` is true."""

    def __init__(self, change: Any) -> None:
        self.change, self.on, self.seen = change, True, []

    async def before_agent(self, ctx: AgentContext) -> None:
        self.seen.append([t.name for t in ctx.deferred])
        if self.on:
            self.change(ctx)


def _tools(server: FakeLLM, i: int) -> list[str]:
    return [t["function"]["name"] for t in server.chat_requests[i].body.get("tools", [])]


def _search_description(server: FakeLLM, i: int) -> str:
    return next(t["function"]["description"] for t in server.chat_requests[i].body["tools"]
                if t["function"]["name"] == "tool_search")


def _results(messages: list[Any]) -> dict[str, str]:
    return {m.tool_call_id: str(m.content) for m in messages if m.role == "tool"}


async def test_before_agent_adds_deferred_tools_to_an_agent_without_any(server: FakeLLM) -> None:
    mw = Defer(lambda ctx: ctx.deferred.append(get_weather))
    agent = make_agent(server, middleware=[mw])
    server.add_turns([
        {"tool_calls": [call("tool_search", {"query": "weather"}, id="s")]},
        {"tool_calls": [call("get_weather", {"city": "Oslo"}, id="w")]},
        {"text": "It is sunny."},
    ])
    result = await agent.run("weather in Oslo?")
    assert [_tools(server, i) for i in range(3)] == [["add", "tool_search"],
                                                     ["add", "tool_search", "get_weather"],
                                                     ["add", "tool_search", "get_weather"]]
    assert "(1 available" in _search_description(server, 0)
    results = _results(result.messages)
    assert "- get_weather: Current weather for a city." in results["s"]
    assert results["w"] == "sunny in Oslo" and result.content == "It is sunny."
    # The next run starts from the agent's configuration: no deferred tools, no tool_search.
    mw.on = False
    server.add_turns([{"text": "plain"}])
    await agent.run("again")
    assert _tools(server, 3) == ["add"]
    assert mw.seen == [[], []]


async def test_before_agent_removes_a_deferred_tool_and_moves_a_listed_one_in(server: FakeLLM) -> None:
    def change(ctx: AgentContext) -> None:
        ctx.deferred = [t for t in ctx.deferred if t.name != "get_weather"]
        ctx.tools = [t for t in ctx.tools if t.name != "add"]
        ctx.deferred.append(add)

    mw = Defer(change)
    agent = make_agent(server, deferred_tools=[get_weather, convert_currency], middleware=[mw])
    server.add_turns([
        {"tool_calls": [call("tool_search", {"query": "weather add integers"}, id="s")]},
        {"tool_calls": [call("add", {"a": 2, "b": 3}, id="a"),
                        call("get_weather", {"city": "Oslo"}, id="w")]},
        {"text": "5"},
    ])
    result = await agent.run("2+3, and the weather?")
    assert _tools(server, 0) == ["tool_search"]
    assert "(2 available" in _search_description(server, 0)
    assert _tools(server, 1) == ["tool_search", "add"]  # the search found add, not the removed tool
    results = _results(result.messages)
    assert "- add: Add two integers." in results["s"] and "get_weather" not in results["s"]
    assert results["a"] == "5" and "unknown tool 'get_weather'" in results["w"]
    # The agent's configuration is untouched: the next run has its two deferred tools and add again.
    mw.on = False
    server.add_turns([{"tool_calls": [call("tool_search", {"query": "weather"}, id="s2")]}, {"text": "ok"}])
    again = await agent.run("weather?")
    assert _tools(server, 3) == ["add", "tool_search"]
    assert "(2 available" in _search_description(server, 3)
    assert "- get_weather:" in _results(again.messages)["s2"]
    assert mw.seen == [["get_weather", "convert_currency"]] * 2


@pytest.mark.parametrize("how", ["clear", "undefer"])
async def test_before_agent_turns_deferral_off(server: FakeLLM, how: str) -> None:
    def change(ctx: AgentContext) -> None:
        if how == "clear":
            ctx.deferred = []  # the run has no deferred tools at all
        else:
            ctx.undefer()  # the run lists them up front

    agent = make_agent(server, deferred_tools=[get_weather, convert_currency], middleware=[Defer(change)])
    server.add_turns([{"tool_calls": [call("get_weather", {"city": "Oslo"}, id="w")]}, {"text": "done"}])
    result = await agent.run("weather?")
    if how == "clear":
        assert _tools(server, 0) == ["add"]
        assert "unknown tool 'get_weather'" in _results(result.messages)["w"]
    else:
        assert _tools(server, 0) == ["add", "get_weather", "convert_currency"]
        assert _results(result.messages)["w"] == "sunny in Oslo"


def test_undefer_moves_only_the_named_tools() -> None:
    ctx = AgentContext(instruction="", tools=[add], return_directly=set(),
                       deferred=[get_weather, convert_currency])
    ctx.undefer(["convert_currency"])
    assert [t.name for t in ctx.tools] == ["add", "convert_currency"]
    assert [t.name for t in ctx.deferred] == ["get_weather"]
