"""The activities of a durable flow turn: every I/O of the turn, executed in a worker that hosts the flow.

    chainreact.flow.load     the flow document (the turn routes with it to its end) and the stored session
                             with its version
    chainreact.flow.node.*   an `aiagent` node's I/O: its start (memory, recall), each model call, each tool
                             call, the suspended run, the memory writes (flow_node_activities.py)
    chainreact.flow.chain    one `rulechain` node
    chainreact.flow.save     the session saved with the version it was read at, then the turn's last events
    chainreact.flow.publish  events into the log (a failed turn's `error`)

The turn's recording (its reads, its agents' model and tool calls, its `turn` record) goes to the
session's log as in process (flow_recording.py).

A `FlowHost` (hosts.py) holds the worker's flows by id. Flows need a state store (sessions, memory); the
worker's store (`chainreact worker --state URL`) is given to every flow, else each flow opens its own (the
document's `state`, `$CHAINREACT_STATE`). The turn's events go to the same store's event log, under the
turn id, so a caller reading that store sees them live.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..flows.engine import Flow
from ..flows.model import RuleChainNode
from .codec import JSON
from .flow_recording import record_turn, recording_reads
from .hosts import FlowHost
from .worker_io import Publisher, heartbeating

if TYPE_CHECKING:
    from ..state.base import Store


def turn_log(store: Store | None, log_id: str) -> Publisher:
    """A turn's events (FlowEvent dicts, `{"event": type, "node": ..., ...}`) into the store's log."""
    return Publisher(store, log_id, key="event")


def turn_failure(e: Exception) -> ApplicationError:
    """A node's error fails the turn (never retried: it is the flow's answer, as in process)."""
    return ApplicationError(f"{type(e).__name__}: {e}", type=type(e).__name__, non_retryable=True)


class FlowActivities:
    """The activity implementations over a FlowHost (register `activities()` with a Worker)."""

    def __init__(self, host: FlowHost):
        self.host = host

    def activities(self) -> list[Any]:
        return [self.load, self.chain, self.save, self.publish]

    async def _log(self, flow: Flow, req: JSON) -> Publisher:
        log = turn_log(await flow.store() if req.get("events", True) else None, req["log"])
        for d in req.get("publish") or ():
            log.add(d)
        return log

    @activity.defn(name="chainreact.flow.load")
    async def load(self, req: JSON) -> JSON:
        flow = self.host.flow(req["flow"])
        async with recording_reads(flow, await flow.store(), req) as store:
            rec = await store.get_run(flow.session_key(req["session"]))
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
                async with recording_reads(flow, await flow.store(), req):  # its agent nodes' calls
                    output = await flow.run_chain(node, dict(req["env"]))
            except Exception as e:
                raise turn_failure(e) from None
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
        await record_turn(flow, store, req)
        log = await self._log(flow, req)
        await log.flush()

    @activity.defn(name="chainreact.flow.publish")
    async def publish(self, req: JSON) -> None:
        flow = self.host.flow(req["flow"])
        log = await self._log(flow, req)
        await log.flush()
