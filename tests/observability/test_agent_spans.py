"""The span tree and GenAI attributes of agent runs, against the scripted fake server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from chainreact.agent import Agent
from chainreact.agent.interrupt import ToolInterrupt
from chainreact.errors import ModelError
from chainreact.observability import OTelMiddleware
from chainreact.testing import FakeLLM
from chainreact.tools.base import Tool, ToolContext, ToolOutput
from chainreact.types import TextDelta

from .conftest import Traces, add, call, explode


class ToolOutputTool(Tool):
    name = "nope"
    description = "Answers with an error result."
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput("Error: not today", True)


def team(outer: FakeLLM, inner: FakeLLM, mw: OTelMiddleware, **kw: Any) -> Agent:
    researcher = Agent(name="researcher", description="Finds facts.", instruction="You research.",
                       url=inner.url, model="inner-model", key="k", tools=[add], middleware=[mw])
    return Agent(name="boss", instruction="You delegate.", url=outer.url, model="outer-model", key="k",
                 tools=[add, researcher.as_tool(**kw)], middleware=[mw])


def run_team(fake_llm: Any, traces: Traces, *, content: bool = False, **kw: Any) -> Any:
    outer = fake_llm([
        # Both calls in one turn: they run concurrently, each in its own task.
        {"tool_calls": [call("add", {"a": 2, "b": 3}, "c-add"),
                        call("researcher", {"request": "what is 4+5?"}, "c-res")]},
        {"text": "5 and 9"},
    ])
    inner = fake_llm([{"tool_calls": [call("add", {"a": 4, "b": 5}, "c-inner")]}, {"text": "9"}])
    mw = OTelMiddleware(tracer_provider=traces.provider, capture_content=content)
    result = team(outer, inner, mw, **kw).run_sync("add things")
    assert result.content == "5 and 9"
    return result


def test_span_tree_with_tools_and_a_sub_agent(fake_llm: Any, traces: Traces) -> None:
    result = run_team(fake_llm, traces)
    boss = traces.one("invoke_agent boss")
    assert boss.parent is None
    assert traces.children(boss) == ["chat outer-model", "chat outer-model", "execute_tool add",
                                     "execute_tool researcher"]
    res_tool = traces.one("execute_tool researcher")
    assert traces.children(res_tool) == ["invoke_agent researcher"]
    researcher = traces.one("invoke_agent researcher")
    assert traces.children(researcher) == ["chat inner-model", "chat inner-model", "execute_tool add"]
    assert len(traces.spans) == 9
    assert len({s.context.trace_id for s in traces.spans if s.context}) == 1  # one trace

    assert boss.kind == SpanKind.INTERNAL
    a = boss.attributes or {}
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.agent.name"] == "boss"
    assert a["gen_ai.provider.name"] == "openai" and a["gen_ai.system"] == "openai"
    assert a["gen_ai.request.model"] == "outer-model"
    assert a["gen_ai.usage.input_tokens"] == result.usage.prompt_tokens > 0
    assert a["gen_ai.usage.output_tokens"] == result.usage.completion_tokens > 0
    assert a["chainreact.run.id"] == result.metadata["run_id"]
    assert a["chainreact.stop_reason"] == "stop"
    assert boss.status.status_code == StatusCode.UNSET


def test_chat_span_attributes(fake_llm: Any, traces: Traces) -> None:
    run_team(fake_llm, traces)
    boss = traces.one("invoke_agent boss")
    first, second = sorted((s for s in traces.named("chat outer-model")
                            if s.parent and boss.context and s.parent.span_id == boss.context.span_id),
                           key=lambda s: s.start_time or 0)
    assert first.kind == SpanKind.CLIENT
    a = first.attributes or {}
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.request.model"] == "outer-model"
    assert a["gen_ai.response.model"] == "fake-model"  # what the server answered with
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("tool_calls",)  # type: ignore[arg-type]
    assert tuple((second.attributes or {})["gen_ai.response.finish_reasons"]) == ("stop",)  # type: ignore[arg-type]
    assert a["server.address"] == "127.0.0.1" and isinstance(a["server.port"], int)
    # The two calls' tokens add up to the run's totals on the agent span.
    b = boss.attributes or {}
    assert sum(int((s.attributes or {})["gen_ai.usage.input_tokens"]) for s in (first, second)) \
        == b["gen_ai.usage.input_tokens"]
    # No content unless asked for.
    assert not any(k in (s.attributes or {}) for s in traces.spans
                   for k in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                             "gen_ai.tool.call.result"))


def test_tool_span_attributes(fake_llm: Any, traces: Traces) -> None:
    run_team(fake_llm, traces)
    by_id = {(s.attributes or {})["gen_ai.tool.call.id"]: s for s in traces.spans
             if s.name.startswith("execute_tool")}
    assert set(by_id) == {"c-add", "c-res", "c-inner"}
    a = by_id["c-add"].attributes or {}
    assert a["gen_ai.operation.name"] == "execute_tool"
    assert a["gen_ai.tool.name"] == "add" and a["gen_ai.tool.type"] == "function"
    assert a["gen_ai.tool.description"].startswith("Add two integers")  # type: ignore[union-attr]
    assert by_id["c-res"].attributes["gen_ai.tool.description"] == "Finds facts."  # type: ignore[index]
    assert by_id["c-add"].kind == SpanKind.INTERNAL
    assert all(s.status.status_code == StatusCode.UNSET for s in by_id.values())


def test_content_is_recorded_when_asked(fake_llm: Any, traces: Traces) -> None:
    run_team(fake_llm, traces, content=True)
    first_chat = min(traces.named("chat outer-model"), key=lambda s: s.start_time or 0)
    sent = json.loads(str((first_chat.attributes or {})["gen_ai.input.messages"]))
    assert sent[-1] == {"role": "user", "parts": [{"type": "text", "content": "add things"}]}
    out = json.loads(str((first_chat.attributes or {})["gen_ai.output.messages"]))
    assert out[0]["finish_reason"] == "tool_calls"
    part = {"type": "tool_call", "id": "c-add", "name": "add", "arguments": {"a": 2, "b": 3}}
    assert part in out[0]["parts"]
    tool = next(s for s in traces.named("execute_tool add")
                if (s.attributes or {})["gen_ai.tool.call.id"] == "c-add")
    assert json.loads(str((tool.attributes or {})["gen_ai.tool.call.arguments"])) == {"a": 2, "b": 3}
    assert (tool.attributes or {})["gen_ai.tool.call.result"] == "5"
    boss_out = json.loads(str((traces.one("invoke_agent boss").attributes or {})["gen_ai.output.messages"]))
    assert boss_out[0]["parts"][0]["content"] == "5 and 9"


def test_content_switch_from_environment(monkeypatch: pytest.MonkeyPatch, traces: Traces) -> None:
    monkeypatch.setenv("CHAINREACT_OTEL_CONTENT", "1")
    assert OTelMiddleware(tracer_provider=traces.provider).capture_content is True
    monkeypatch.setenv("CHAINREACT_OTEL_CONTENT", "0")
    assert OTelMiddleware(tracer_provider=traces.provider).capture_content is False


def test_failing_tool_marks_its_span(fake_llm: Any, traces: Traces) -> None:
    srv = fake_llm([{"tool_calls": [call("explode", {"reason": "test"}, "c-x")]}, {"text": "it failed"}])
    mw = OTelMiddleware(tracer_provider=traces.provider)
    agent = Agent(name="a", url=srv.url, model="m", key="k", tools=[explode], middleware=[mw])
    assert agent.run_sync("go").content == "it failed"
    span = traces.one("execute_tool explode")
    assert span.status.status_code == StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "ValueError"  # the model got it as an Error: result
    assert "boom: test" in (span.status.description or "")
    assert [e.name for e in span.events] == ["exception"]
    assert traces.one("invoke_agent a").status.status_code == StatusCode.UNSET  # the run itself succeeded


def test_error_result_marks_its_span(fake_llm: Any, traces: Traces) -> None:
    srv = fake_llm([{"tool_calls": [call("nope", {}, "c-1"), call("add", {"a": "x"}, "c-2")]},
                    {"text": "done"}])
    mw = OTelMiddleware(tracer_provider=traces.provider)
    agent = Agent(name="a", url=srv.url, model="m", key="k", tools=[add, ToolOutputTool()], middleware=[mw])
    assert agent.run_sync("go").content == "done"
    span = traces.one("execute_tool nope")
    assert span.status.status_code == StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "tool_error"
    assert span.status.description == "Error: not today"
    # Refused before execution (invalid arguments): no tool ran, so no execute_tool span.
    assert traces.named("execute_tool add") == []


def test_failed_model_call_marks_chat_and_agent(fake_llm: Any, traces: Traces) -> None:
    srv = fake_llm([{"status": 400, "message": "bad request body"}])
    mw = OTelMiddleware(tracer_provider=traces.provider)
    agent = Agent(name="a", url=srv.url, model="m", key="k", middleware=[mw])
    with pytest.raises(ModelError):
        agent.run_sync("go")
    chat, run = traces.one("chat m"), traces.one("invoke_agent a")
    assert chat.parent is not None and run.context is not None and chat.parent.span_id == run.context.span_id
    for span in (chat, run):
        assert span.status.status_code == StatusCode.ERROR
        assert (span.attributes or {})["error.type"]
    assert any(e.name == "exception" for e in run.events)


async def test_run_nests_under_the_callers_span_and_restores_it(fake_llm: Any, traces: Traces) -> None:
    srv = fake_llm([{"text": "one"}, {"status": 400}, {"text": "three"}])
    mw = OTelMiddleware(tracer_provider=traces.provider)
    agent = Agent(name="a", url=srv.url, model="m", key="k", middleware=[mw])
    tracer = traces.provider.get_tracer("test")
    with tracer.start_as_current_span("request") as outer:
        assert (await agent.run("x")).content == "one"
        with pytest.raises(ModelError):
            await agent.run("y")  # a failed run must restore the context too
        async for _ in agent.stream("z"):
            pass
        assert trace.get_current_span() is outer
    runs = traces.named("invoke_agent a")
    assert len(runs) == 3
    assert all(r.parent is not None and r.parent.span_id == outer.get_span_context().span_id for r in runs)


async def test_cancelled_run_ends_its_spans(fake_llm: Any, traces: Traces) -> None:
    srv = fake_llm([{"text": "late", "delay": 5}])
    mw = OTelMiddleware(tracer_provider=traces.provider)
    agent = Agent(name="a", url=srv.url, model="m", key="k", middleware=[mw])
    run = agent.start("x")
    while not srv.chat_requests:  # the model call is in flight
        await asyncio.sleep(0.01)
    run.cancel("immediate")
    assert (await run.result()).stop_reason == "cancelled"
    span = traces.one("invoke_agent a")
    assert (span.attributes or {})["chainreact.stop_reason"] == "cancelled"
    assert span.status.status_code == StatusCode.UNSET  # cancelled is not failed
    assert traces.one("chat m").end_time is not None


class AskTool(Tool):
    name = "transfer"
    description = "Moves money (asks first)."
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raise ToolInterrupt("Transfer 100?", kind="approval")


async def test_interrupted_run_ends_its_span_and_restores_the_context(fake_llm: Any, traces: Traces) -> None:
    srv = fake_llm([{"tool_calls": [call("transfer", {}, "c-t")]}])
    mw = OTelMiddleware(tracer_provider=traces.provider)
    agent = Agent(name="bank", url=srv.url, model="m", key="k", tools=[AskTool()], middleware=[mw])
    with traces.provider.get_tracer("test").start_as_current_span("request") as outer:
        assert (await agent.run("pay")).stop_reason == "interrupted"
        assert trace.get_current_span() is outer
    run = traces.one("invoke_agent bank")
    assert (run.attributes or {})["chainreact.stop_reason"] == "interrupted"
    assert run.status.status_code == StatusCode.UNSET
    tool = traces.one("execute_tool transfer")
    assert (tool.attributes or {})["chainreact.tool.interrupt"] == "approval"
    assert tool.status.status_code == StatusCode.UNSET and "error.type" not in (tool.attributes or {})


def test_each_retry_attempt_is_a_chat_span(fake_llm: Any, traces: Traces) -> None:
    srv = fake_llm([{"status": 503, "headers": {"Retry-After": "0"}, "message": "overloaded"},
                    {"text": "ok"}])
    mw = OTelMiddleware(tracer_provider=traces.provider)
    agent = Agent(name="a", url=srv.url, model="m", key="k", middleware=[mw])
    assert agent.run_sync("x").content == "ok"
    failed, ok = sorted(traces.named("chat m"), key=lambda s: s.start_time or 0)
    assert failed.status.status_code == StatusCode.ERROR and (failed.attributes or {})["error.type"]
    assert (failed.attributes or {})["chainreact.attempt"] == 1
    assert ok.status.status_code == StatusCode.UNSET and (ok.attributes or {})["chainreact.attempt"] == 2
    assert traces.one("invoke_agent a").status.status_code == StatusCode.UNSET


def test_live_sub_agent_nests_too(fake_llm: Any, traces: Traces) -> None:
    run_team(fake_llm, traces, emit_internal_events=True)  # the inner run streams through a task
    researcher = traces.one("invoke_agent researcher")
    assert traces.children(traces.one("execute_tool researcher")) == ["invoke_agent researcher"]
    assert traces.children(researcher) == ["chat inner-model", "chat inner-model", "execute_tool add"]


async def test_breaking_out_of_a_stream_ends_the_span_and_restores_the_context(fake_llm: Any,
                                                                                traces: Traces) -> None:
    srv = fake_llm([{"text": "a long answer", "chunks": 5}])
    mw = OTelMiddleware(tracer_provider=traces.provider)
    agent = Agent(name="a", url=srv.url, model="m", key="k", middleware=[mw])
    with traces.provider.get_tracer("test").start_as_current_span("request") as outer:
        events = agent.stream("x")
        async for ev in events:
            if isinstance(ev, TextDelta):
                break
        await events.aclose()  # type: ignore[attr-defined]
        assert trace.get_current_span() is outer
    run = traces.one("invoke_agent a")
    assert (run.attributes or {})["chainreact.stop_reason"] == "closed"
    assert run.status.status_code == StatusCode.UNSET


def test_run_sync_nests_under_the_calling_threads_span(fake_llm: Any, traces: Traces) -> None:
    srv = fake_llm([{"text": "hi"}])
    agent = Agent(name="a", url=srv.url, model="m", key="k",
                  middleware=[OTelMiddleware(tracer_provider=traces.provider)])
    with traces.provider.get_tracer("test").start_as_current_span("request") as outer:
        agent.run_sync("x")
    run = traces.one("invoke_agent a")
    assert run.parent is not None and run.parent.span_id == outer.get_span_context().span_id
