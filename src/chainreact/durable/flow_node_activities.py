"""The activities of an `aiagent` node in a durable turn: the node's I/O, one call at a time.

    chainreact.flow.node.start    node_steps.prepare (prompts rendered, the memory window and its summary,
                                  long-term recall) and what the workflow's loop needs of the node's agent
                                  (tool specs after askUserForToolsInput's wrapping, limits); or, for an
                                  answered question, the stored agent run claimed (flows.driver.claim) and
                                  its state to resume from
    chainreact.flow.node.model    one model call of the node's agent (its endpoint, its client's retries)
    chainreact.flow.node.tool     one tool call (HTTP/MCP tools, collaborators, ask_user; the tool budget)
    chainreact.flow.node.suspend  an agent run that stopped to ask the user, saved in the store (the next
                                  turn resumes it, in process or durable)
    chainreact.flow.node.finish   node_steps.remember (the conversation memory appended, long-term
                                  memories written), a resumed run marked done

The model and tool calls are the agent activities' own (worker_io), with the turn's log; they and the
node's reads are recorded in the session's log (flow_recording.py). The node's agent
is made in the worker as in process (flows.agent_node.build_agent), once per flow, node and turn inputs
(a small LRU cache): a collaborator's prompts depend on the turn's names. The tool budget's count lives
in the workflow and travels with each tool call.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..flows.driver import flow_event
from ..flows.engine import Flow
from ..flows.model import AIAgentNode
from ..flows.node_steps import prepare, remember
from ..flows.prompts import system_message
from ..types import Event, ModelResponse
from .codec import JSON, call_to_dict, messages_from_list, messages_to_list, output_to_dict
from .flow_activities import turn_failure, turn_log
from .flow_recording import TurnTape, recording_reads
from .hosts import FlowHost
from .recording import model_io, recording_tool, slot_io, tool_io
from .worker_io import Publisher, heartbeating, model_call, tool_call, tool_spec, unavailable

if TYPE_CHECKING:
    from ..state.base import Store


class NodeActivities:
    """The activity implementations of agent nodes over a FlowHost."""

    def __init__(self, host: FlowHost):
        self.host = host
        self.agents = host.node_agents

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

    async def _log(self, flow: Flow, req: JSON) -> Publisher:
        log = turn_log(await flow.store(), req["log"])
        for d in req.get("publish") or ():
            log.add(d)
        return log

    @activity.defn(name="chainreact.flow.node.start")
    async def start(self, req: JSON) -> JSON:
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
                    "agent": plan.agent, "tools": [{**tool_spec(t), "spec": t.spec()} for t in io.tools],
                    "return_directly": sorted(plan.return_directly), "keep_think": plan.keep_think,
                    "limits": dataclasses.asdict(plan.limits)}
                resume = req.get("resume")
                async with recording_reads(flow, store, req) as reads:  # what the turn read, as in process
                    if resume is None:
                        key = flow.session_key(req["session"])
                        start = await prepare(node, env, reads, key, flow.base_dir)
                        return {**out, "system": start.system, "user_text": start.user_text, "key": start.key,
                                "history": messages_to_list(start.history), "memories": start.memories}
                    return {**out, "system": system_message(node, env), **await self._claim(reads, resume)}
            except ApplicationError:
                raise
            except Exception as e:
                raise turn_failure(e) from None

    async def _claim(self, store: Store, resume: JSON) -> JSON:
        """An answered question's stored run, claimed, and where it goes on from."""
        from ..state.checkpoint import load_snapshot
        from ..state.runs import claim

        snap, version = await load_snapshot(store, resume["run_id"])
        if snap.status == "running" and activity.info().attempt > 1:
            # This activity's first attempt claimed the run (its answers checked), then its worker was
            # lost: go on from the claim.
            checked = dict(resume["answers"] or {})
        else:
            snap, version, go_on = await claim(store, resume["run_id"], resume["answers"])
            checked = go_on.answers
        return {"version": version, "resume": {
            "messages": messages_to_list(snap.messages), "step": snap.step,
            "pending": [call_to_dict(c) for c in snap.pending_tool_calls],
            "completed": {k: {"content": v.content, "is_error": v.is_error}
                          for k, v in snap.completed_tool_results.items()},
            "answers": checked}}

    @activity.defn(name="chainreact.flow.node.model")
    async def model(self, req: JSON) -> JSON:
        flow, node = self._node(req)
        io = await self.agents.get(flow, node, req.get("env"))
        live = bool(req.get("stream"))
        tape = TurnTape(flow, await flow.store(), req)

        def entry(d: JSON) -> JSON:
            return flow_event_dict(node.name, d)

        def record(response: ModelResponse) -> None:  # the attempt that got its response (flow_recording)
            if req.get("slot"):
                tape.add(slot_io(io.agent, io.plan, req["run_id"]))
            tape.add(model_io(io.agent, io.plan, req, response))

        # The node's client retried already (its llmConfig): an error fails the turn, as in process.
        out = await model_call(io.plan, req, await self._log(flow, req), stream=live, live=live,
                               retried_here=False, entry=entry, record=record if tape.on else None)
        await tape.write()
        return out

    @activity.defn(name="chainreact.flow.node.tool")
    async def tool(self, req: JSON) -> JSON:
        flow, node = self._node(req)
        io = await self.agents.get(flow, node, req["env"])
        log = await self._log(flow, req)
        name = req["call"]["name"]
        tool = next((t for t in io.tools if t.name == name), None)
        if tool is None:  # the document changed under a turn in flight
            await log.flush()
            return {**unavailable(name), "tools_used": int(req.get("tools_used") or 0)}
        agent_events = bool(req.get("agent_events"))

        def entry(ev: Event) -> JSON | None:  # a collaborator's events, live tool output: as in process
            fe = flow_event(ev, node.name, agent_events)
            return fe.to_dict() if fe is not None else None

        io.budget.used = int(req.get("tools_used") or 0)  # the run's count, kept by the workflow
        with recording_tool(io.agent, io.plan, req) as nested:  # a collaborator's calls, as in process
            out = await tool_call(io.plan, tool, req, log, entry)
        tape = TurnTape(flow, await flow.store(), req)
        if tape.on:
            tape.add(*tool_io(io.agent, io.plan, req, out, nested))  # once the call is done
            await tape.write()
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
        """After a valid answer: node_steps.remember, and the resumed agent run marked done."""
        from ..state.checkpoint import RunSnapshot, save_snapshot

        flow, node = self._node(req)
        store = await flow.store()
        log = await self._log(flow, req)
        async with heartbeating(float(req.get("heartbeat", 10.0))):
            await log.flush()
            try:
                async with recording_reads(flow, store, req) as reads:  # the memory extractor's calls too
                    written = await remember(node, dict(req["env"]), reads, flow.base_dir, key=req["key"],
                                             user_text=req["user_text"], content=req["content"],
                                             text=req.get("text"), memories=list(req.get("memories") or []))
                done = req.get("done")
                if done is not None:
                    snap = RunSnapshot(done["run_id"], "done", int(done["steps"]),
                                       messages_from_list(done["messages"]), agent=done.get("agent"),
                                       session=done.get("session"), extra=dict(done.get("extra") or {}))
                    await save_snapshot(store, snap, expect_version=int(done["version"]))
            except Exception as e:
                raise turn_failure(e) from None
        return {"written": written}


def flow_event_dict(node: str, d: JSON) -> JSON:
    """A live agent event (a dict) as the turn's log holds it with `agent_events`: an `agent` FlowEvent."""
    from ..flows.events import FlowEvent

    return FlowEvent("agent", node, {"agent_event": d}).to_dict()
