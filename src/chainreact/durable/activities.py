"""The activities: every I/O of a durable agent run, executed in a worker.

    chainreact.agent.plan    resolve the agent (tools, MCP servers, model client) and snapshot what the
                             workflow's loop needs: the rendered instruction, the first messages, the
                             tool specs, the limits, the model call's retry/timeout figures
    chainreact.agent.model   one model call (the document's endpoints, failover, circuit breaker)
    chainreact.agent.tool    one tool call (middleware wrap_tool_call, the tool's timeout, errors as results)
    chainreact.events.publish  the run's last events and its status into the state store's event log

They run over an AgentHost (hosts.py: the worker's agents by name, made from the documents the worker
was started with, and optionally a state store). With a store, the run's events go to its event log while
the run goes on (model text deltas and live tool output straight from the activity, worker_io.py; the
loop's own events travel with the next activity's input, so the workflow itself never writes). A worker
owns its agents: their model client's own retries are turned off, because the activity's retry policy
retries instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..agent.inputs import build_messages, gen_messages
from ..agent.recording import IO_EVENT
from ..agent.special_tools import ToolSearchTool
from ..types import Event, ModelResponse
from .codec import JSON, messages_to_list, output_to_dict
from .hooks import HOOK_ACTIVITY, mode, run_hook
from .hosts import AgentHost
from .recording import model_io, record_plan, recording_tool, tool_io
from .records import durable_record
from .worker_io import Publisher, model_call, stamp, tool_call, tool_spec, unavailable

log = logging.getLogger("chainreact.durable")


class AgentActivities:
    """The activity implementations over an AgentHost (register `activities()` with a Worker)."""

    def __init__(self, host: AgentHost):
        self.host = host

    def activities(self) -> list[Any]:
        return [self.plan, self.model, self.tool, self.publish, self.hook]

    def _log(self, req: JSON) -> Publisher:
        """The run's event log, with the loop's events the workflow handed over first (its order)."""
        pub = Publisher(self.host.store if req.get("events") else None, req["run_id"])
        for d in req.get("publish") or ():
            pub.add(d)
        return pub

    @activity.defn(name="chainreact.agent.plan")
    async def plan(self, req: JSON) -> JSON:
        name = req["agent"]
        agent = self.host.agent(name)
        await self.host.io_plan(name)  # first: it records the client's retries before turning them off
        plan = await agent.plan(metadata=req.get("metadata"), session_values=req.get("session_values"))
        data = req.get("input")
        generated = plan.gen_model_input is not None
        if plan.gen_model_input is not None:
            messages = await gen_messages(plan.gen_model_input, plan.instruction, data)
        else:
            # The conversation only: the workflow puts the instruction in front (build_messages' own rule)
            # once before_agent middleware has had its say on it (workflow.first_messages).
            messages = build_messages(data, "", plan.preset, plan.system_hook)
        run_id = activity.info().workflow_id  # the run's id (the workflow runs this local activity)
        if self.host.store is not None and run_id:  # the recording `runs export` reads (recording.py)
            await record_plan(self.host.store, run_id, agent, await self.host.io_plan(name), data)
        cfg = agent.config
        return {
            "agent": name,
            "instruction": plan.instruction,
            "messages": messages_to_list(messages),
            "generated": generated,
            "tools": [tool_spec(t) for t in plan.tools],
            "deferred": [tool_spec(t) for t in plan.deferred_tools],
            "return_directly": sorted(plan.return_directly),
            "limits": dataclasses.asdict(plan.limits),
            "keep_think": plan.keep_think,
            "output_key": plan.output_key,
            "model": {"retries": self.host.model_retries(name, cfg.maxRetries),
                      "total": cfg.timeouts.total, "endpoints": 1 + len(cfg.failover)},
            "events": self.host.store is not None,
            "version": hashlib.sha256(cfg.model_dump_json().encode()).hexdigest()[:16],
        }

    @activity.defn(name="chainreact.agent.model")
    async def model(self, req: JSON) -> JSON:
        name = req["agent"]
        plan = await self.host.io_plan(name)
        agent = self.host.agent(name)

        pub = self._log(req)

        def record(response: ModelResponse) -> None:  # written with the call's last events
            pub.add_as(IO_EVENT, model_io(agent, plan, req, response))

        return await model_call(plan, req, pub, stream=bool(req.get("stream")), live=bool(req.get("live")),
                                retried_here=True, record=record if pub.store is not None else None)

    @activity.defn(name="chainreact.agent.tool")
    async def tool(self, req: JSON) -> JSON:
        plan = await self.host.io_plan(req["agent"])
        pub = self._log(req)
        name = req["call"]["name"]
        tool = self.host.tool(plan, name)
        if req.get("search") is not None:  # a tool_search over the run's deferred tools, not the agent's
            found = (self.host.tool(plan, n) for n in req["search"]["tools"])
            tool = ToolSearchTool([t for t in found if t is not None], int(req["search"]["limit"]))
        if tool is None:
            await pub.flush()
            return unavailable(name)

        def entry(ev: Event) -> JSON:
            d = ev.to_dict()
            return d if ev.run_id else stamp(d, req)  # a streaming tool's pieces: this run's

        with recording_tool(self.host.agent(req["agent"]), plan, req) as nested:
            out = await tool_call(plan, tool, req, pub, entry)
        if pub.store is not None:  # recorded only once the call is done: a retried attempt adds nothing
            for r in tool_io(self.host.agent(req["agent"]), plan, req, out, nested):
                pub.add_as(IO_EVENT, r)
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
            await store.save_run(req["run_id"], durable_record(req["run_id"], result=req.get("result")),
                                 status=req["status"], agent=req.get("agent"))
