"""before_agent changing the run's deferred tools in a durable run (in the workflow code, and as an
activity): the model gets the same requests as in process, tool_search searches the run's deferred tools."""

from __future__ import annotations

from typing import Any

import pytest

from chainreact import Agent, Middleware
from chainreact.agent.middleware import AgentContext
from chainreact.durable import AgentHost, DurableAgent, durable_worker
from chainreact.testing import FakeLLM

from ..agent.conftest import add, convert_currency, get_weather


class Redefer(Middleware):
    """Takes get_weather out of the deferred tools and defers `add` instead of listing it (by name: in the
    workflow the tools are stand-ins, in an activity the worker's own)."""

    async def before_agent(self, ctx: AgentContext) -> None:
        listed = next(t for t in ctx.tools if t.name == "add")
        ctx.tools = [t for t in ctx.tools if t is not listed]
        ctx.deferred = [*(t for t in ctx.deferred if t.name != "get_weather"), listed]


class RedeferInTheWorker(Redefer):
    durable = "activity"


SCRIPT = [
    {"tool_calls": [{"id": "s", "name": "tool_search", "arguments": {"query": "weather add integers"}}]},
    {"tool_calls": [{"id": "a", "name": "add", "arguments": {"a": 2, "b": 3}},
                    {"id": "w", "name": "get_weather", "arguments": {"city": "Oslo"}}]},
    {"text": "5"},
]


def _agent(llm: FakeLLM, mw: Middleware) -> Agent:
    return Agent(name="redeferred", instruction="Use tools.", url=llm.url, model="m", tools=[add],
                 deferred_tools=[get_weather, convert_currency], middleware=[mw])


def _strip(d: dict[str, Any]) -> dict[str, Any]:
    return {**d, "metadata": {k: v for k, v in d["metadata"].items() if k != "run_id"}}


@pytest.mark.parametrize("where", [Redefer, RedeferInTheWorker])
async def test_before_agent_deferred_tools_give_the_same_requests_durably(
        temporal_client: Any, task_queue: str, where: type[Redefer]) -> None:
    with FakeLLM([*SCRIPT, *SCRIPT]) as llm:
        reference = await _agent(llm, where()).run("2+3?")
        local = [r.body for r in llm.chat_requests]
        agent = _agent(llm, where())
        async with durable_worker(temporal_client, task_queue, AgentHost([agent])):
            result = await DurableAgent(agent, client=temporal_client, task_queue=task_queue).run("2+3?")
        durable = [r.body for r in llm.chat_requests][len(local):]
        llm.assert_all_consumed()
    assert durable == local
    names = [[t["function"]["name"] for t in body["tools"]] for body in durable]
    assert names == [["tool_search"], ["tool_search", "add"], ["tool_search", "add"]]
    assert "(2 available" in durable[0]["tools"][0]["function"]["description"]
    found = durable[1]["messages"][-1]["content"]  # the tool_search result, searched in the worker
    assert "- add: Add two integers." in found and "get_weather" not in found
    assert _strip(result.to_dict()) == _strip(reference.to_dict())
    outputs = {m.tool_call_id: str(m.content) for m in result.messages if m.role == "tool"}
    assert outputs["a"] == "5" and "unknown tool 'get_weather'" in outputs["w"]
    assert result.content == "5"
