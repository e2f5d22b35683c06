"""The activities of an `aiagent` node in a durable turn: the node's I/O, one call at a time.

    chainreact.flow.node.start    prompts rendered, the memory window (and its summary), long-term recall,
                                  and what the workflow's loop needs of the node's agent (tool specs after
                                  askUserForToolsInput's wrapping, limits); or, for an answered question,
                                  the stored agent run claimed and its state to resume from
    chainreact.flow.node.model    one model call of the node's agent (its endpoint, its client's retries)
    chainreact.flow.node.tool     one tool call (HTTP/MCP tools, collaborators, ask_user; the tool budget)
    chainreact.flow.node.suspend  an agent run that stopped to ask the user, saved in the store (the next
                                  turn resumes it, in process or durable)
    chainreact.flow.node.finish   the conversation memory appended, long-term memories written, a resumed
                                  run marked done

The node's agent is made in the worker as in process (flows.agent_node.build_agent), once per flow, node
and turn inputs (a small LRU cache): a collaborator's prompts depend on the turn's names. The tool
budget's count lives in the workflow and travels with each tool call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..agent.interrupt import ANSWER
from ..agent.middleware import AgentContext
from ..agent.plan import RunPlan
from ..errors import ModelError
from ..flows.agent_node import EXTRACT_SYSTEM, SUMMARY_SYSTEM, build_agent, memory_key, plain_call
from ..flows.engine import Flow
from ..flows.events import FlowEvent, from_agent_event
from ..flows.exprs import render
from ..flows.memory import SUMMARY_HEADER, memories_block, read_context, recall_memories, summary_request
from ..flows.model import AIAgentNode
from ..flows.prompts import system_message
from ..flows.tooling import AskForTools, ToolBudget
from ..tools.base import Tool, ToolContext
from ..types import Event, Message, ReasoningChunk, TextChunk, ToolCall
from .activities import heartbeating
from .codec import (
    JSON,
    call_from_dict,
    call_to_dict,
    client_event_to_dict,
    messages_from_list,
    messages_to_list,
    output_to_dict,
    response_to_dict,
)
from .flow_activities import FlowHost, _failure, _Log

CACHE_SIZE = 32


@dataclass
class NodeIO:
    agent: Any
    plan: RunPlan
    tools: list[Tool]  # as the loop sees them (askUserForToolsInput: wrapped, ask_user added)
    budget: ToolBudget


class NodeAgents:
    """The node agents of runs in flight in this worker, by flow, node and the turn's inputs (LRU)."""

    def __init__(self, size: int = CACHE_SIZE):
        self.size = size
        self._cache: OrderedDict[str, NodeIO] = OrderedDict()
        self._lock = asyncio.Lock()

    async def get(self, flow: Flow, node: AIAgentNode, env: JSON | None) -> NodeIO:
        key = hashlib.sha256(json.dumps([flow.id, node.name, env], sort_keys=True, default=str)
                             .encode()).hexdigest()
        async with self._lock:
            io = self._cache.get(key)
            if io is not None:
                self._cache.move_to_end(key)
                return io
            budget = ToolBudget(node.maxToolExecutions)
            agent = build_agent(node, "", dict(env or {}), flow=flow.definition, base_dir=flow.base_dir,
                                budget=budget)
            plan = await agent.plan()
            ctx = AgentContext(instruction=plan.instruction, tools=list(plan.tools),
                               return_directly=set(plan.return_directly), agent=plan.agent)
            for m in plan.middleware.before_agent:
                if isinstance(m, AskForTools):  # the tools the model sees; the rest runs in the workflow
                    await m.before_agent(ctx)
            io = self._cache[key] = NodeIO(agent, plan, ctx.tools, budget)
            while len(self._cache) > self.size:
                _, old = self._cache.popitem(last=False)
                await old.agent.aclose()
            return io

    async def aclose(self) -> None:
        for io in self._cache.values():
            await io.agent.aclose()
        self._cache.clear()


def _tool_spec(t: Tool) -> JSON:
    return {"name": t.name, "description": t.description, "parameters": t.parameters, "spec": t.spec(),
            "timeout": t.timeout, "history": bool(getattr(t, "full_history", False))}


def _agent_event(node: str, d: JSON) -> JSON:
    return FlowEvent("agent", node, {"agent_event": d}).to_dict()


class NodeActivities:
    """The activity implementations of agent nodes over a FlowHost."""

    def __init__(self, host: FlowHost):
        self.host = host
        if host.node_agents is None:
            host.node_agents = NodeAgents()  # closed with the host
        self.agents: NodeAgents = host.node_agents

    def activities(self) -> list[Any]:
        return [self.start, self.model, self.tool, self.suspend, self.finish]

    def _node(self, req: JSON) -> tuple[Flow, AIAgentNode]:
        flow = self.host.flow(req["flow"])
        node = flow.definition.node(req["node"])
        if not isinstance(node, AIAgentNode):
            raise ApplicationError(f"flow {flow.id!r}: this worker's document has no aiagent node "
                                   f"{req['node']!r} (changed under a turn in flight?)", type="FlowError",
                                   non_retryable=True)
        return flow, node

    async def _log(self, flow: Flow, req: JSON) -> _Log:
        log = _Log(await flow.store(), req["log"])
        for d in req.get("publish") or ():
            log.add_event(d)
        return log

    @activity.defn(name="chainreact.flow.node.start")
    async def start(self, req: JSON) -> JSON:
        from ..state.checkpoint import load_snapshot, prepare_resume, save_snapshot

        flow, node = self._node(req)
        env = dict(req["env"])
        store = await flow.store()
        log = await self._log(flow, req)
        async with heartbeating(float(req.get("heartbeat", 10.0))):
            await log.flush()
            try:
                io = await self.agents.get(flow, node, env)
                plan = io.plan
                out: JSON = {
                    "agent": plan.agent, "tools": [_tool_spec(t) for t in io.tools],
                    "return_directly": sorted(plan.return_directly), "keep_think": plan.keep_think,
                    "limits": {"max_steps": plan.limits.max_steps,
                               "max_step_policy": plan.limits.max_step_policy,
                               "max_tool_output": plan.limits.max_tool_output,
                               "parallel_tool_calls": plan.limits.parallel_tool_calls}}
                resume = req.get("resume")
                if resume is not None:
                    snap, version = await load_snapshot(store, resume["run_id"])
                    if snap.status == "running" and activity.info().attempt > 1:
                        # This activity's first attempt claimed the run (its answers checked), then its
                        # worker was lost: go on from the claim.
                        checked, out["version"] = dict(resume["answers"] or {}), version
                    else:
                        snap, version, checked = await prepare_resume(store, resume["run_id"],
                                                                      resume["answers"])
                        snap.status, snap.questions = "running", []
                        # Claimed before anything runs, as in process: a second resumer gets RunConflictError.
                        out["version"] = await save_snapshot(store, snap, expect_version=version)
                    out["system"] = system_message(node, env)
                    out["resume"] = {
                        "messages": messages_to_list(snap.messages), "step": snap.step,
                        "pending": [call_to_dict(c) for c in snap.pending_tool_calls],
                        "completed": {k: {"content": v.content, "is_error": v.is_error}
                                      for k, v in snap.completed_tool_results.items()},
                        "answers": checked}
                    return out
                system = system_message(node, env)
                key = memory_key(node, env, flow.session_key(req["session"]))

                async def summarize(prompt: str, previous: str | None, old: list[Message]) -> str:
                    ask = plain_call(node, flow.base_dir, SUMMARY_SYSTEM)
                    return await ask(summary_request(prompt, previous, old))

                context = await read_context(node, store, key, summarize)
                if context.summary:
                    system += "\n\n" + SUMMARY_HEADER + context.summary
                memories = await recall_memories(node, env, store)
                if memories:
                    system += "\n\n" + memories_block(node, memories)
            except ApplicationError:
                raise
            except Exception as e:
                raise _failure(e) from None
        out.update(system=system, user_text=render(node.userMessage, env), key=key,
                   history=messages_to_list(context.history), memories=memories)
        return out

    @activity.defn(name="chainreact.flow.node.model")
    async def model(self, req: JSON) -> JSON:
        flow, node = self._node(req)
        io = await self.agents.get(flow, node, req.get("env"))
        log = await self._log(flow, req)
        live = bool(req.get("stream"))
        side: list[Event] = []
        response: JSON | None = None
        async with heartbeating(float(req.get("heartbeat", 10.0))):
            await log.flush()
            try:
                stream = io.plan.model(messages_from_list(req["messages"]), req.get("tools"), stream=live,
                                       on_event=side.append)
                async for item in stream:
                    if isinstance(item, TextChunk | ReasoningChunk):
                        if live and item.text:
                            kind = "text_delta" if isinstance(item, TextChunk) else "reasoning_delta"
                            log.add_event(_agent_event(node.name, _stamp({"type": kind, "text": item.text},
                                                                         req)))
                            await log.maybe_flush()
                    elif hasattr(item, "message"):
                        response = response_to_dict(item)  # type: ignore[arg-type]
            except ModelError as e:
                await log.flush()
                # The node's client retried already (its llmConfig): the turn fails, as in process.
                raise ApplicationError(str(e), type=type(e).__name__, non_retryable=True) from None
            await log.flush()
        if response is None:
            raise ApplicationError("the model call ended without a response", type="ModelError",
                                   non_retryable=True)
        return {"response": response, "events": [client_event_to_dict(e) for e in side]}

    @activity.defn(name="chainreact.flow.node.tool")
    async def tool(self, req: JSON) -> JSON:
        flow, node = self._node(req)
        io = await self.agents.get(flow, node, req["env"])
        call: ToolCall = call_from_dict(req["call"])
        log = await self._log(flow, req)
        tool = next((t for t in io.tools if t.name == call.name), None)
        if tool is None:  # the document changed under a turn in flight
            await log.flush()
            return {"content": f"Error: tool {call.name!r} is not available on this worker", "is_error": True,
                    "tools_used": int(req.get("tools_used") or 0)}
        pending: list[Event] = []
        agent_events = bool(req.get("agent_events"))
        ctx = ToolContext(call.id, req["run_id"], io.plan.agent, tuple(req.get("path") or (io.plan.agent,)),
                          messages_from_list(req.get("history") or []), pending.append)
        if "answer" in req:
            ctx.state[ANSWER] = req["answer"]

        def drain() -> None:
            for ev in pending:  # a collaborator's events, live tool output: as the in-process turn shows them
                if agent_events:
                    log.add_event(_agent_event(node.name, ev.to_dict()))
                else:
                    fe = from_agent_event(ev, node.name)
                    if fe is not None:
                        log.add_event(fe.to_dict())
            pending.clear()

        io.budget.used = int(req.get("tools_used") or 0)  # the run's count, kept by the workflow
        async with heartbeating(float(req.get("heartbeat", 10.0))):
            await log.flush()
            work = asyncio.ensure_future(io.plan.call_tool(call, tool, dict(req.get("args") or {}), ctx))
            try:
                while not work.done():
                    await asyncio.wait((work,), timeout=0.05)
                    drain()
                    await log.flush()
            finally:
                if not work.done():
                    work.cancel()
            out = work.result()
            drain()
            await log.flush()
        return {**output_to_dict(out), "tools_used": io.budget.used}

    @activity.defn(name="chainreact.flow.node.suspend")
    async def suspend(self, req: JSON) -> JSON:
        """Save the interrupted agent run (a RunSnapshot, as the in-process checkpointer writes it)."""
        from ..state.checkpoint import RunSnapshot, load_snapshot, save_snapshot
        from ..state.errors import RunConflictError

        flow, _ = self._node(req)
        store = await flow.store()
        snap = RunSnapshot.from_dict(req["snapshot"])
        try:
            version = await save_snapshot(store, snap, expect_version=int(req.get("version") or 0))
        except RunConflictError:
            stored, version = await load_snapshot(store, snap.run_id)
            if stored.status != "interrupted" or stored.step != snap.step:
                raise
            # A retried attempt: the first one saved it.
        log = await self._log(flow, req)
        await log.flush()
        return {"version": version}

    @activity.defn(name="chainreact.flow.node.finish")
    async def finish(self, req: JSON) -> JSON:
        """After a valid answer: memory appended (the turn's user message and the answer), long-term memories
        written, the resumed agent run marked done."""
        from ..flows.memory import write_memory
        from ..state.checkpoint import RunSnapshot, save_snapshot

        flow, node = self._node(req)
        store = await flow.store()
        log = await self._log(flow, req)
        async with heartbeating(float(req.get("heartbeat", 10.0))):
            await log.flush()
            try:
                await store.append(req["key"], [Message("user", req["user_text"]),
                                                Message("assistant", req["content"])])
                text = req.get("text")
                written = await write_memory(node, dict(req["env"]), store,
                                             text if text is not None else req["content"],
                                             plain_call(node, flow.base_dir, EXTRACT_SYSTEM),
                                             list(req.get("memories") or []))
                done = req.get("done")
                if done is not None:
                    snap = RunSnapshot(done["run_id"], "done", int(done["steps"]),
                                       messages_from_list(done["messages"]), agent=done.get("agent"),
                                       session=done.get("session"), extra=dict(done.get("extra") or {}))
                    await save_snapshot(store, snap, expect_version=int(done["version"]))
            except Exception as e:
                raise _failure(e) from None
        return {"written": written}


def _stamp(d: JSON, req: JSON) -> JSON:
    return {**d, "run_id": req["run_id"], "agent": req.get("agent", ""), "step": req.get("step", 0),
            "seq": 0, "path": list(req.get("path") or [req.get("agent", "")])}
