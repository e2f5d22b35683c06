"""The activities: every I/O of a durable agent run, executed in a worker.

    chainreact.agent.plan    resolve the agent (tools, MCP servers, model client) and snapshot what the
                             workflow's loop needs: the rendered instruction, the first messages, the
                             tool specs, the limits, the model call's retry/timeout figures
    chainreact.agent.model   one model call (the document's endpoints, failover, circuit breaker)
    chainreact.agent.tool    one tool call (middleware wrap_tool_call, the tool's timeout, errors as results)
    chainreact.events.publish  the run's last events and its status into the state store's event log

An `AgentHost` holds the worker's agents by name, made from the documents the worker was started with,
and optionally a state store: with one, the run's events go to its event log while the run goes on
(model text deltas and live tool output straight from the activity; the loop's own events travel with
the next activity's input, so the workflow itself never writes). A worker owns its agents: their model
client's own retries are turned off, because the activity's retry policy retries instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..agent.agent import Agent
from ..agent.inputs import build_messages, gen_messages
from ..agent.interrupt import ANSWER
from ..agent.plan import RunPlan
from ..agent.special_tools import ToolSearchTool
from ..errors import ModelError
from ..tools.base import Tool, ToolContext
from ..types import Event, Message, ReasoningChunk, TextChunk, ToolCall
from .codec import (
    JSON,
    call_from_dict,
    client_event_to_dict,
    messages_from_list,
    messages_to_list,
    output_to_dict,
    response_to_dict,
)
from .hooks import HOOK_ACTIVITY, mode, run_hook

log = logging.getLogger("chainreact.durable")

FLUSH_EVERY = 0.05  # seconds: live events are appended in small batches, not one write per token
STREAM_RESET = "stream_reset"  # a retried model attempt starts over: drop the step's streamed text so far


class UnknownAgentError(ApplicationError):
    pass


class AgentHost:
    """The agents a worker serves (by name) and the optional state store for event logs."""

    def __init__(self, agents: Iterable[Agent] | Mapping[str, Agent] = (), *, store: Any = None):
        items = agents.items() if isinstance(agents, Mapping) else ((a.name, a) for a in agents)
        self.agents: dict[str, Agent] = {}
        self.store = store
        self._io: dict[str, RunPlan] = {}
        self._retries: dict[str, int] = {}
        self._lock = asyncio.Lock()
        for name, agent in items:
            self.add(agent, name)

    def add(self, agent: Agent, name: str | None = None) -> None:
        key = name or agent.name
        if key in self.agents and self.agents[key] is not agent:
            raise ValueError(f"two agents named {key!r} in one worker: give each document a distinct name")
        self.agents[key] = agent

    def agent(self, name: str) -> Agent:
        agent = self.agents.get(name)
        if agent is None:
            known = ", ".join(sorted(self.agents)) or "none"
            raise ApplicationError(f"agent {name!r} is not served by this worker (it serves: {known}); start "
                                   "a worker with its document on this task queue", type="UnknownAgent",
                                   non_retryable=True)
        return agent

    async def io_plan(self, name: str) -> RunPlan:
        """The agent's I/O functions (model client with wrap_model, tools with wrap_tool_call), made once."""
        plan = self._io.get(name)
        if plan is None:
            async with self._lock:
                plan = self._io.get(name)
                if plan is None:
                    plan = await self.agent(name).plan()
                    client = plan.client
                    if client is not None and hasattr(client, "max_retries"):
                        # Temporal retries the activity (maxRetries + 1 attempts); the client must not too.
                        self._retries[name] = int(client.max_retries)
                        client.max_retries = 0
                    self._io[name] = plan
        return plan

    def model_retries(self, name: str, default: int) -> int:
        """The document's retries per model call (-1: none), before the worker turned the client's off."""
        return max(-1, self._retries.get(name, default))

    def tool(self, plan: RunPlan, name: str) -> Tool | None:
        for t in (*plan.tools, *plan.deferred_tools):
            if t.name == name:
                return t
        return None

    async def aclose(self) -> None:
        for agent in self.agents.values():
            await agent.aclose()


# The hosts of this process's workers, by task queue: the workflow code finds its agent's loop-hook
# middleware here (chainreact is passed through the sandbox, so this is the same dict in there).
HOSTS: dict[str, AgentHost] = {}


def loop_middleware(task_queue: str, agent: str) -> tuple[Any, ...]:
    """The middleware of `agent` in this process's worker for `task_queue`, in order (durable/hooks.py
    decides where each one's loop hooks run)."""
    host = HOSTS.get(task_queue)
    found = host.agents.get(agent) if host is not None else None
    if found is None:
        return ()
    return found.middleware.all


class Publisher:
    """Appends events to one run's log in the state store, batched (nothing without a store)."""

    def __init__(self, store: Any, run_id: str):
        self.store = store
        self.run_id = run_id
        self.pending: list[tuple[str, Any]] = []
        self._last = time.monotonic()

    def add(self, d: JSON) -> None:
        if self.store is not None:
            self.pending.append((str(d["type"]), d))

    async def maybe_flush(self) -> None:
        if self.pending and time.monotonic() - self._last >= FLUSH_EVERY:
            await self.flush()

    async def flush(self) -> None:
        self._last = time.monotonic()
        if self.pending and self.store is not None:
            batch, self.pending = self.pending, []
            await self.store.append_events(self.run_id, batch)


@contextlib.asynccontextmanager
async def heartbeating(every: float) -> AsyncIterator[None]:
    """Heartbeat while the activity runs: a dead worker is noticed, a cancel request is delivered."""

    async def beat() -> None:
        # Not at once: a heartbeat is a server write, and most calls end before the first one is due.
        while True:
            await asyncio.sleep(every)
            activity.heartbeat()

    task = asyncio.ensure_future(beat())
    try:
        yield
    finally:
        task.cancel()


def _stamp(d: JSON, req: JSON) -> JSON:
    return {**d, "run_id": req["run_id"], "agent": req["agent"], "step": req.get("step", 0), "seq": 0,
            "path": list(req.get("path") or [req["agent"]])}


class AgentActivities:
    """The activity implementations over an AgentHost (register `activities()` with a Worker)."""

    def __init__(self, host: AgentHost):
        self.host = host

    def activities(self) -> list[Any]:
        return [self.plan, self.model, self.tool, self.publish, self.hook]

    @activity.defn(name="chainreact.agent.plan")
    async def plan(self, req: JSON) -> JSON:
        name = req["agent"]
        agent = self.host.agent(name)
        await self.host.io_plan(name)  # first: it records the client's retries before turning them off
        plan = await agent.plan(metadata=req.get("metadata"), session_values=req.get("session_values"))
        data = req.get("input")
        system = "generated"
        if plan.gen_model_input is not None:
            messages = await gen_messages(plan.gen_model_input, plan.instruction, data)
        else:
            # build_messages(data, instruction, ...) in two halves, so that the workflow can put another
            # instruction in front when before_agent middleware changes it (see workflow._messages)
            messages = build_messages(data, "", plan.preset, plan.system_hook)
            system = "own" if any(m.role == "system" for m in messages) else "instruction"
            if system == "instruction" and plan.instruction:
                messages.insert(0, Message("system", plan.instruction))
        cfg = agent.config
        return {
            "agent": name,
            "instruction": plan.instruction,
            "messages": messages_to_list(messages),
            "system": system,
            "tools": [_tool_spec(t) for t in plan.tools],
            "deferred": [_tool_spec(t) for t in plan.deferred_tools],
            "return_directly": sorted(plan.return_directly),
            "limits": {"max_steps": plan.limits.max_steps, "max_step_policy": plan.limits.max_step_policy,
                       "max_tool_output": plan.limits.max_tool_output,
                       "parallel_tool_calls": plan.limits.parallel_tool_calls},
            "keep_think": plan.keep_think,
            "output_key": plan.output_key,
            "model": {"retries": self.host.model_retries(name, cfg.maxRetries),
                      "total": cfg.timeouts.total, "endpoints": 1 + len(cfg.failover)},
            "events": self.host.store is not None,
            "version": hashlib.sha256(cfg.model_dump_json().encode()).hexdigest()[:16],
        }

    @activity.defn(name="chainreact.agent.model")
    async def model(self, req: JSON) -> JSON:
        plan = await self.host.io_plan(req["agent"])
        pub = Publisher(self.host.store if req.get("events") else None, req["run_id"])
        for d in req.get("publish") or ():
            pub.add(d)
        live = bool(req.get("live"))
        attempt = activity.info().attempt
        if live and attempt > 1:
            # An earlier attempt may have streamed part of its text: readers drop it (docs/durable.md).
            pub.add(_stamp({"type": STREAM_RESET, "attempt": attempt}, req))
        side: list[Event] = []
        response: JSON | None = None
        delivered = 0
        async with heartbeating(float(req.get("heartbeat", 10.0))):
            await pub.flush()
            try:
                stream = plan.model(messages_from_list(req["messages"]), req.get("tools"),
                                    stream=bool(req.get("stream")), on_event=side.append)
                async for item in stream:
                    if isinstance(item, TextChunk | ReasoningChunk):
                        delivered += 1
                        if live and item.text:
                            kind = "text_delta" if isinstance(item, TextChunk) else "reasoning_delta"
                            pub.add(_stamp({"type": kind, "text": item.text, "attempt": attempt}, req))
                            await pub.maybe_flush()
                    elif hasattr(item, "message"):
                        response = response_to_dict(item)  # type: ignore[arg-type]
            except ModelError as e:
                await pub.flush()
                delay = timedelta(seconds=e.retry_after) if e.retry_after else None
                # from None: the client's error chain can be long (and Temporal serialises all of it)
                raise ApplicationError(str(e), type=type(e).__name__,
                                       non_retryable=not _retryable(e, delivered),
                                       next_retry_delay=delay) from None
            await pub.flush()
        if response is None:
            raise ApplicationError("the model call ended without a response", type="ModelError")
        return {"response": response, "events": [client_event_to_dict(e) for e in side]}

    @activity.defn(name="chainreact.agent.tool")
    async def tool(self, req: JSON) -> JSON:
        plan = await self.host.io_plan(req["agent"])
        call: ToolCall = call_from_dict(req["call"])
        pub = Publisher(self.host.store if req.get("events") else None, req["run_id"])
        for d in req.get("publish") or ():
            pub.add(d)
        tool = self.host.tool(plan, call.name)
        if req.get("search") is not None:  # a tool_search over the run's deferred tools, not the agent's
            found = (self.host.tool(plan, n) for n in req["search"]["tools"])
            tool = ToolSearchTool([t for t in found if t is not None], int(req["search"]["limit"]))
        if tool is None:  # the document changed under a run in flight (docs/durable.md, "Versioning")
            await pub.flush()
            return {"content": f"Error: tool {call.name!r} is not available on this worker", "is_error": True}
        pending: list[Event] = []

        def emit(ev: Event) -> None:
            pending.append(ev)

        ctx = ToolContext(call.id, req["run_id"], req["agent"], tuple(req.get("path") or (req["agent"],)),
                          messages_from_list(req.get("history") or []), emit)
        if "answer" in req:
            ctx.state[ANSWER] = req["answer"]
        async with heartbeating(float(req.get("heartbeat", 10.0))):
            await pub.flush()
            work = asyncio.ensure_future(plan.call_tool(call, tool, dict(req.get("args") or {}), ctx))
            try:
                while not work.done():
                    await asyncio.wait((work,), timeout=FLUSH_EVERY)
                    _drain(pending, pub, req)
                    await pub.flush()
            finally:
                if not work.done():
                    work.cancel()
            out = work.result()
            _drain(pending, pub, req)
            await pub.flush()
        return output_to_dict(out)

    @activity.defn(name=HOOK_ACTIVITY)
    async def hook(self, req: JSON) -> JSON:
        """One loop hook of a middleware whose hooks run in the worker (`durable = "activity"`)."""
        name = req["agent"]
        plan = await self.host.io_plan(name)
        tools = {t.name: t for t in (*plan.tools, *plan.deferred_tools)}
        chain = self.host.agent(name).middleware.all
        index = int(req["index"])
        if index >= len(chain) or mode(chain[index]) != "activity":
            raise ApplicationError(f"agent {name!r}: middleware {index} runs no hooks in the worker (the "
                                   "workers of a queue must serve the same agents)", type="HookError",
                                   non_retryable=True)
        return await run_hook(chain[index], tools, name, req)

    @activity.defn(name="chainreact.events.publish")
    async def publish(self, req: JSON) -> None:
        """The run's last events and its status (done, failed, cancelled, interrupted) in the store."""
        store = self.host.store
        if store is None:
            return
        if req.get("publish"):
            await store.append_events(req["run_id"], [(d["type"], d) for d in req["publish"]])
        if req.get("status"):
            await store.save_run(req["run_id"], {"format": "temporal", "workflow_id": req["run_id"],
                                                 "result": req.get("result")},
                                 status=req["status"], agent=req.get("agent"))


def _retryable(e: ModelError, delivered: int) -> bool:
    """The client refuses to retry a stream that failed after its first chunk (the caller saw part of the
    answer). A durable run may: the next attempt starts with a `stream_reset` event, so readers drop the
    partial text. Retried then when the underlying failure is retryable (a cut connection, a 5xx)."""
    if e.retryable:
        return True
    # The client's failure as it was, before the "stream failed after N items" wrapper (its cause, or its
    # context when a failover layer re-raised the wrapper from itself).
    inner = (e.__cause__, e.__context__)
    return bool(delivered) and any(isinstance(x, ModelError) and x is not e and x.retryable for x in inner)


def _drain(pending: list[Event], pub: Publisher, req: JSON) -> None:
    for ev in pending:
        d = ev.to_dict()
        pub.add(d if ev.run_id else _stamp(d, req))
    pending.clear()


def _tool_spec(t: Tool) -> JSON:
    return {"name": t.name, "description": t.description, "parameters": t.parameters, "timeout": t.timeout,
            "history": bool(getattr(t, "full_history", False))}
