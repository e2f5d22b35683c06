"""Middleware hook order and persistence, asserted by the recorded call sequence."""

from __future__ import annotations

from typing import Any

from chainreact.agent import AgentContext, Middleware, RunState, ToolCallInfo
from chainreact.agent.middleware import ModelFn, ToolFn
from chainreact.testing import FakeLLM
from chainreact.tools import ToolOutput, tool
from chainreact.types import Message

from .conftest import add, call, make_agent


class Recorder(Middleware):
    def __init__(self, tag: str, log: list[str]):
        self.tag, self.log = tag, log

    async def before_agent(self, ctx: AgentContext) -> None:
        self.log.append(f"{self.tag}.before_agent")

    async def after_agent(self, state: RunState, result: Any) -> None:
        self.log.append(f"{self.tag}.after_agent:{result.content}")

    async def before_model(self, state: RunState) -> None:
        self.log.append(f"{self.tag}.before_model:{state.step}")

    async def after_model(self, state: RunState) -> None:
        self.log.append(f"{self.tag}.after_model:{state.step}")

    def wrap_model(self, call_model: ModelFn) -> ModelFn:
        async def wrapped(request: Any):
            self.log.append(f"{self.tag}.wrap_model.enter")
            async for item in call_model(request):
                yield item
            self.log.append(f"{self.tag}.wrap_model.exit")
        return wrapped

    def wrap_tool_call(self, call_tool: ToolFn, info: ToolCallInfo) -> ToolFn:
        async def wrapped(args: dict) -> ToolOutput:
            self.log.append(f"{self.tag}.wrap_tool.enter:{info.name}")
            out = await call_tool(args)
            self.log.append(f"{self.tag}.wrap_tool.exit")
            return out
        return wrapped


async def test_hook_order(server: FakeLLM) -> None:
    log: list[str] = []
    server.add_turns([{"tool_calls": [call("add", {"a": 1, "b": 2})]}, {"text": "3"}])
    agent = make_agent(server, middleware=[Recorder("A", log), Recorder("B", log)])
    await agent.run("x")
    assert log == [
        "A.before_agent", "B.before_agent",
        "A.before_model:1", "B.before_model:1",
        "A.wrap_model.enter", "B.wrap_model.enter", "B.wrap_model.exit", "A.wrap_model.exit",
        "A.after_model:1", "B.after_model:1",
        "A.wrap_tool.enter:add", "B.wrap_tool.enter:add", "B.wrap_tool.exit", "A.wrap_tool.exit",
        "A.before_model:2", "B.before_model:2",
        "A.wrap_model.enter", "B.wrap_model.enter", "B.wrap_model.exit", "A.wrap_model.exit",
        "A.after_model:2", "B.after_model:2",
        "A.after_agent:3", "B.after_agent:3",
    ]


async def test_wrap_model_is_inside_retry(server: FakeLLM) -> None:
    log: list[str] = []
    server.add_turns([{"status": 503, "body": "busy", "headers": {"Retry-After": "0"}}, {"text": "ok"}])
    agent = make_agent(server, tools=[], middleware=[Recorder("A", log)])
    await agent.run("x")
    # one before_model, but the wrapped model ran once per attempt
    assert log.count("A.before_model:1") == 1
    assert log.count("A.wrap_model.enter") == 2


class Compressor(Middleware):
    """Rewrites history before each model call; the rewrite must persist."""

    async def before_model(self, state: RunState) -> None:
        if not any(m.role == "system" and m.content == "NOTE" for m in state.messages):
            state.messages.insert(1, Message("system", "NOTE"))


async def test_before_model_changes_persist(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("add", {"a": 1, "b": 2})]}, {"text": "3"}])
    result = await make_agent(server, middleware=[Compressor()]).run("x")
    for req in server.chat_requests:
        assert sum(1 for m in req.body["messages"] if m["content"] == "NOTE") == 1
    assert result.messages[1].content == "NOTE"


class Reconfigure(Middleware):
    async def before_agent(self, ctx: AgentContext) -> None:
        @tool
        def secret() -> str:
            """Reveal the secret."""
            return "42"

        ctx.instruction = "Rewritten instruction."
        ctx.tools = [secret]
        ctx.return_directly.add("secret")


async def test_before_agent_changes_instruction_tools_and_return_directly(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("secret", {})]}])
    result = await make_agent(server, middleware=[Reconfigure()]).run("x")
    body = server.chat_requests[0].body
    assert body["messages"][0]["content"] == "Rewritten instruction."
    assert [t["function"]["name"] for t in body["tools"]] == ["secret"]
    assert result.content == "42" and result.stop_reason == "return_directly"


class Deny(Middleware):
    def wrap_tool_call(self, call_tool: ToolFn, info: ToolCallInfo) -> ToolFn:
        async def denied(args: dict) -> ToolOutput:
            return ToolOutput(f"Error: permission denied for {info.name}", is_error=True)
        return denied if info.name == "add" else call_tool


async def test_wrap_tool_call_can_deny(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("add", {"a": 1, "b": 2})]}, {"text": "denied"}])
    result = await make_agent(server, middleware=[Deny()]).run("x")
    assert [m.content for m in result.messages if m.role == "tool"] == ["Error: permission denied for add"]


class Narrow(Middleware):
    """before_model drops every tool but `add` (ToolInfos); after_model rewrites the model's answer."""

    async def before_model(self, state: RunState) -> None:
        if state.step == 1:
            state.tool_specs[:] = [s for s in state.tool_specs if s["function"]["name"] == "add"]

    async def after_model(self, state: RunState) -> None:
        last = state.messages[-1]
        if not last.tool_calls:
            state.messages[-1] = Message("assistant", f"[checked] {last.content}")


async def test_before_model_tool_specs_and_after_model_rewrite_persist(server: FakeLLM) -> None:
    @tool
    def other() -> str:
        """Another tool."""
        return "x"

    server.add_turns([{"tool_calls": [call("add", {"a": 1, "b": 2})]}, {"text": "3"}])
    result = await make_agent(server, tools=[add, other], middleware=[Narrow()]).run("x")
    # The tool list edited before the first call is still the list of the second (persisted in state).
    for req in server.chat_requests:
        assert [t["function"]["name"] for t in req.body["tools"]] == ["add"]
    # The rewritten response is the answer and stays in the history.
    assert result.content == "[checked] 3"
    assert result.messages[-1].content == "[checked] 3"
