"""Loop-hook middleware in durable runs (it runs in the workflow code, in the loop's order) and an honest
stream when a model activity is retried after it streamed part of its text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chainreact import Agent, Middleware, tool
from chainreact.agent.middleware import AgentContext, RunState
from chainreact.agent.result import RunResult
from chainreact.durable import AgentHost, DurableAgent, DurableOptions, durable_worker
from chainreact.testing import FakeLLM, tool_steps_responder
from chainreact.types import Message


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def hidden(x: str) -> str:
    """A tool that before_agent takes away."""
    return x


class Shaping(Middleware):
    """Every loop hook, each changing what the model sees or what the run returns; logs its calls."""

    def __init__(self) -> None:
        self.log: list[str] = []

    async def before_agent(self, ctx: AgentContext) -> None:
        self.log.append(f"before_agent {sorted(t.name for t in ctx.tools)}")
        ctx.instruction += " Answer briefly."
        ctx.tools = [t for t in ctx.tools if t.name != "hidden"]

    async def before_model(self, state: RunState) -> None:
        state.values["calls"] = state.values.get("calls", 0) + 1
        self.log.append(f"before_model {state.step} {len(state.messages)}")
        state.messages.append(Message("user", f"(model call {state.values['calls']})"))

    async def after_model(self, state: RunState) -> None:
        last = state.messages[-1]
        self.log.append(f"after_model {state.step} {bool(last.tool_calls)}")
        if not last.tool_calls:
            state.messages[-1] = Message("assistant", last.text.upper())

    async def after_agent(self, state: RunState, result: RunResult) -> None:
        self.log.append(f"after_agent {result.steps} {result.content[:3]}")

    async def on_agent_error(self, state: RunState | None, error: BaseException | None) -> None:
        self.log.append(f"on_agent_error {error!r}")


class WorkerOnly(Middleware):
    durable = "worker"  # measures one process: left out of the workflow

    def __init__(self) -> None:
        self.calls = 0

    async def before_model(self, state: RunState) -> None:
        self.calls += 1


def _agent(llm: FakeLLM, *middleware: Middleware) -> Agent:
    return Agent(name="shaped", instruction="Use tools.", url=llm.url, model="m", tools=[add, hidden],
                 middleware=list(middleware))


def _strip(d: dict[str, Any]) -> dict[str, Any]:
    return {**d, "metadata": {k: v for k, v in d["metadata"].items() if k != "run_id"}}


class ShapingInTheWorker(Shaping):
    durable = "activity"  # each hook an activity: as if it did I/O


@pytest.mark.parametrize("where", [Shaping, ShapingInTheWorker])
async def test_loop_hooks_give_the_same_result_in_process_and_durably(temporal_client: Any, task_queue: str,
                                                                      where: type[Shaping]) -> None:
    with FakeLLM(tool_steps_responder(2)) as llm:
        local_mw = where()
        reference = await _agent(llm, local_mw).run("go")
        local_requests = [r.body for r in llm.chat_requests]
        durable_mw, worker_only = where(), WorkerOnly()
        agent = _agent(llm, durable_mw, worker_only)
        async with durable_worker(temporal_client, task_queue, AgentHost([agent])):
            result = await DurableAgent(agent, client=temporal_client, task_queue=task_queue).run("go")
        durable_requests = [r.body for r in llm.chat_requests][len(local_requests):]
    assert _strip(result.to_dict()) == _strip(reference.to_dict())
    assert result.content.startswith("ALL 2 TOOL STEPS")  # after_model rewrote the answer
    assert durable_requests == local_requests  # the model saw the same messages and tools
    first = durable_requests[0]
    assert first["messages"][0]["content"] == "Use tools. Answer briefly."  # before_agent's instruction
    assert [t["function"]["name"] for t in first["tools"]] == ["add"]
    assert first["messages"][-1]["content"] == "(model call 1)"
    assert durable_mw.log == local_mw.log  # the same hooks, in the same order, with the same state
    assert local_mw.log[0] == "before_agent ['add', 'hidden']" and local_mw.log[-1] == "after_agent 3 ALL"
    assert worker_only.calls == 0
    history = await temporal_client.get_workflow_handle(result.metadata["run_id"]).fetch_history()
    hooks = [e for e in history.events if e.activity_task_scheduled_event_attributes.activity_type.name ==
             "chainreact.agent.hook"]
    # In the worker: before_agent, 3 x before_model and after_model, after_agent; else none (in workflow).
    assert len(hooks) == (8 if where is ShapingInTheWorker else 0)


async def test_a_retried_model_call_resets_its_stream(temporal_client: Any, task_queue: str,
                                                     tmp_path: Path) -> None:
    from chainreact.state import open_store

    answer = "The quick brown fox jumps over the lazy dog, twice and then once more for good measure."
    # The first attempt is cut after 5 of 12 chunks (the reader has seen part of the answer); the
    # activity's retry streams it again from the start.
    script = [{"text": answer, "chunks": 12, "fault": "disconnect", "after_chunks": 5},
              {"text": answer, "chunks": 12}]
    async with await open_store(f"sqlite:///{tmp_path / 'state.db'}") as store:
        with FakeLLM(script) as llm:
            agent = Agent(name="streamer", instruction="Talk.", url=llm.url, model="m",
                          config={"maxRetries": 2})
            async with durable_worker(temporal_client, task_queue, AgentHost([agent], store=store)):
                durable = DurableAgent(agent, client=temporal_client, task_queue=task_queue,
                                       options=DurableOptions(initial_interval=0.05))
                run = await durable.start("go", stream=True)
                events = [ev async for ev in run.events(store)]
                result = await run.result()
            llm.assert_all_consumed()
    assert result.content == answer and result.stop_reason == "stop"
    kinds = [e["type"] for e in events]
    assert kinds.count("stream_reset") == 1
    reset = kinds.index("stream_reset")
    before = "".join(e["text"] for e in events[:reset] if e["type"] == "text_delta")
    assert before and answer.startswith(before) and before != answer  # part of the text came, then the cut
    assert events[reset]["attempt"] == 2
    # A reader that drops the step's text at a reset shows exactly the answer, nothing twice.
    shown = ""
    for e in events:
        if e["type"] == "stream_reset":
            shown = ""
        elif e["type"] == "text_delta":
            shown += e["text"]
    assert shown == answer
