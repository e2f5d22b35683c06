"""The activities of a durable flow turn: every I/O of the turn, executed in a worker that hosts the flow.

    chainreact.flow.load     the flow document (the turn routes with it to its end) and the stored session
                             with its version
    chainreact.flow.node.*   an `aiagent` node's I/O: its start (memory, recall), each model call, each tool
                             call, the suspended run, the memory writes (flow_node_activities.py)
    chainreact.flow.chain    one `rulechain` node
    chainreact.flow.save     the session saved with the version it was read at, then the turn's last events
    chainreact.flow.publish  events into the log (a failed turn's `error`)

A `FlowHost` holds the worker's flows by id. Flows need a state store (sessions, memory); the worker's
store (`chainreact worker --state URL`) is given to every flow, else each flow opens its own (the
document's `state`, `$CHAINREACT_STATE`). The turn's events go to the same store's event log, under the
turn id, so a caller reading that store sees them live.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..flows.engine import Flow
from ..flows.model import RuleChainNode
from .activities import Publisher, heartbeating
from .codec import JSON


class FlowHost:
    """The flows a worker serves, by flow id."""

    def __init__(self, flows: Iterable[Flow] | Mapping[str, Flow] = ()):
        items = flows.items() if isinstance(flows, Mapping) else ((f.id, f) for f in flows)
        self.flows: dict[str, Flow] = {}
        self.node_agents: Any = None  # flow_node_activities.NodeAgents: agent nodes' agents in use
        for key, flow in items:
            if key in self.flows and self.flows[key] is not flow:
                raise ValueError(f"two flows with id {key!r} in one worker: give each document a distinct id")
            self.flows[key] = flow

    def flow(self, flow_id: str) -> Flow:
        flow = self.flows.get(flow_id)
        if flow is None:
            known = ", ".join(sorted(self.flows)) or "none"
            raise ApplicationError(f"flow {flow_id!r} is not served by this worker (it serves: {known}); "
                                   "start a worker with its document on this task queue", type="UnknownFlow",
                                   non_retryable=True)
        return flow

    async def aclose(self) -> None:
        if self.node_agents is not None:
            await self.node_agents.aclose()
        for flow in self.flows.values():
            await flow.aclose()


class _Log(Publisher):
    """A turn's events (FlowEvent dicts, `{"event": type, "node": ..., ...}`) into the store's log."""

    def add_event(self, d: JSON) -> None:
        if self.store is not None:
            self.pending.append((str(d["event"]), d))


def _failure(e: Exception) -> ApplicationError:
    """A node's error fails the turn (never retried: it is the flow's answer, as in process)."""
    return ApplicationError(f"{type(e).__name__}: {e}", type=type(e).__name__, non_retryable=True)


class FlowActivities:
    """The activity implementations over a FlowHost (register `activities()` with a Worker)."""

    def __init__(self, host: FlowHost):
        self.host = host

    def activities(self) -> list[Any]:
        return [self.load, self.chain, self.save, self.publish]

    async def _log(self, flow: Flow, req: JSON) -> _Log:
        log = _Log(await flow.store() if req.get("events", True) else None, req["log"])
        for d in req.get("publish") or ():
            log.add_event(d)
        return log

    @activity.defn(name="chainreact.flow.load")
    async def load(self, req: JSON) -> JSON:
        flow = self.host.flow(req["flow"])
        rec = await (await flow.store()).get_run(flow.session_key(req["session"]))
        return {"document": flow.definition.model_dump(mode="json", by_alias=True),
                "snapshot": rec.snapshot if rec is not None and isinstance(rec.snapshot, dict) else None,
                "version": rec.version if rec is not None else 0}

    @activity.defn(name="chainreact.flow.chain")
    async def chain(self, req: JSON) -> JSON:
        flow = self.host.flow(req["flow"])
        node = flow.definition.node(req["node"])
        if not isinstance(node, RuleChainNode):
            raise ApplicationError(f"flow {flow.id!r}: this worker's document has no rulechain node "
                                   f"{req['node']!r}", type="FlowError", non_retryable=True)
        log = await self._log(flow, req)
        await log.flush()
        async with heartbeating(float(req.get("heartbeat", 10.0))):  # a long chain is not a lost worker
            try:
                output = await flow.run_chain(node, dict(req["env"]))
            except Exception as e:
                raise _failure(e) from None
        return {"output": output}

    @activity.defn(name="chainreact.flow.save")
    async def save(self, req: JSON) -> None:
        """Save the session (expecting the version the turn read), then publish the turn's last events. A
        retried attempt whose first attempt saved already finds its own turn id in the session: done."""
        from ..state.errors import RunConflictError

        flow = self.host.flow(req["flow"])
        store = await flow.store()
        key = flow.session_key(req["session"])
        snapshot = {**req["snapshot"], "turn": req["log"]}
        try:
            await store.save_run(key, snapshot, status=req["status"], agent=flow.id, session=req["session"],
                                 expect_version=int(req["version"]))
        except RunConflictError as e:
            rec = await store.get_run(key)
            if rec is None or not isinstance(rec.snapshot, dict) or rec.snapshot.get("turn") != req["log"]:
                raise ApplicationError(f"session {req['session']!r} of flow {flow.id!r} was moved by another "
                                       f"turn meanwhile: {e}", type="RunConflictError",
                                       non_retryable=True) from None
        log = await self._log(flow, req)
        await log.flush()

    @activity.defn(name="chainreact.flow.publish")
    async def publish(self, req: JSON) -> None:
        flow = self.host.flow(req["flow"])
        log = await self._log(flow, req)
        await log.flush()
