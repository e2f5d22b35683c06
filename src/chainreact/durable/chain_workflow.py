"""A rule chain run as a Temporal workflow: the engine's own traversal, each node's I/O an activity.

    plan activity (the chain's snapshot) -> chainreact.chains.context.run_message over a graph built from
    the snapshot, the same routing code as RuleEngine.run (relations, fork, join on the lowest common
    ancestor, end nodes, the node budget, sub-chains, the message timeout as a durable timer)
      - routing nodes and delay (chain_plan.WORKFLOW_TYPES) run in the workflow, with the engine's own
        components (a delay is a durable timer)
      - ai/agent, ai/llm: a child agent workflow (`chainreact.agent`: its model and tool calls are activities)
      - every other node: activity `chainreact.chain.node`; the workflow replays what the node told

The ends are the workflow's result, with the Stream frames that reach the caller. A run started with
`stream` has its nodes' frames logged live instead (the node activity appends them to the state store's
log `chain_plan.frames_log(run id)` as they come, as the agent activities do a run's events), when the
frame would reach the caller (no node consumes it on Stream) and the worker has a store; the rest come
with the result. A run started with `stream` and `trace` (the runs API's) also logs its timeline there
(chains/trace.py: every node's IN/OUT, kept by the workflow and logged by its next activity; its agent
nodes' model calls, retries, failovers, breaker changes and tool results, logged by the node activity
that runs a streaming agent node). Everything the workflow decides is a function
of the snapshot and the activity results in the history, so a replay on another worker takes the same
path and runs no completed node again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

from ..agent.result import RunResult
from ..chains.catalog import builtin_components
from ..chains.components.ai_step import AgentNodeFailed, agent_node_step
from ..chains.context import NodeContext, run_message
from ..chains.lca import lca_of_node
from ..chains.model import DebugEvent, DebugFn, End, StreamFn
from ..chains.msg import STREAM, RuleMsg
from ..chains.trace import MAX_NODE_EVENTS, node_event
from ..types import Message
from .chain_plan import AGENT_TYPES, JSON, WORKFLOW_TYPES, agent_key, chain_outcome, frames_log
from .codec import messages_to_list, result_from_dict
from .failures import cancelled, failure
from .options import DurableOptions, plain_activity_options, tool_activity_options

CHAIN_WORKFLOW = "chainreact.chain"
AGENT_WORKFLOW = "chainreact.agent"


class NodeActivityError(RuntimeError):
    """A node's activity failed (attempts exhausted: lost workers, timeouts): the node's Failure."""


class AgentCancelledError(RuntimeError):
    """An agent node's child workflow was cancelled from outside the chain: that node's Failure."""


class WorkflowNode:
    """A node as the workflow's traversal sees it (chainreact.chains.model.NodeLike)."""

    __slots__ = ("cache_output", "chain", "component", "debug", "id", "is_end", "name", "routes", "type")

    def __init__(self, chain: WorkflowChain, d: JSON):
        self.chain = chain
        self.id: str = d["id"]
        self.type: str = d["type"]
        self.name: str = d.get("name") or ""
        self.debug = bool(d.get("debug"))
        self.is_end = bool(d.get("is_end"))
        self.cache_output = bool(d.get("cache"))
        self.routes: dict[str, list[WorkflowNode]] = {}
        self.component: Any = None


class WorkflowChain:
    """A chain's graph rebuilt from the snapshot (chainreact.chains.model.ChainLike)."""

    definition: Any = None  # only the worker's chains have their document

    def __init__(self, engine: WorkflowEngine, d: JSON, wf: ChainWorkflow):
        self.engine = engine
        self.id: str = d["id"]
        self.name: str = d.get("name") or ""
        self.debug = bool(d.get("debug"))
        self.vars: dict[str, Any] = dict(d.get("vars") or {})
        self.has_end_node = bool(d.get("has_end_node"))
        self.referenced_nodes: list[str] = list(d.get("referenced") or ())
        self.parents: dict[str, list[str]] = {k: list(v) for k, v in (d.get("parents") or {}).items()}
        self.nodes: dict[str, WorkflowNode] = {}
        self._lca: dict[str, str | None] = {}
        registry = builtin_components()
        for nd in d["nodes"]:
            node = WorkflowNode(self, nd)
            self.nodes[node.id] = node
            remote = RemoteNode(wf)
            if node.type in WORKFLOW_TYPES:
                cls = registry[node.type]
                node.component = cls(cls.Config.model_validate(nd.get("config") or {}), node.id, self)
            elif node.type in AGENT_TYPES:
                node.component = AgentChildNode(wf, str(nd.get("model") or ""), remote)
            else:
                node.component = remote
        for src, rels in (d.get("routes") or {}).items():
            self.nodes[src].routes = {rel: [self.nodes[t] for t in targets] for rel, targets in rels.items()}
        first = d.get("first")
        self.first: WorkflowNode | None = self.nodes[first] if first else None

    def lca(self, node_id: str) -> str | None:
        if node_id not in self._lca:
            self._lca[node_id] = lca_of_node(self.parents, node_id)
        return self._lca[node_id]


class WorkflowEngine:
    """The engine as the workflow's traversal sees it (chainreact.chains.model.EngineLike)."""

    js_time_limit = 0.0
    js_memory_limit = 0

    def __init__(self, snap: JSON, wf: ChainWorkflow):
        self.properties: dict[str, Any] = dict(snap.get("properties") or {})
        self.on_end_with_failure = bool(snap.get("on_end_with_failure", True))
        self.functions: dict[str, Callable[..., Any]] = {}
        self.services: dict[str, Any] = {}
        self.aliases: dict[str, str] = dict(snap.get("aliases") or {})
        self._chains = {cid: WorkflowChain(self, c, wf) for cid, c in snap["chains"].items()}

    @property
    def chains(self) -> Mapping[str, WorkflowChain]:
        return self._chains

    def get(self, chain_id: str) -> WorkflowChain | None:
        return self._chains.get(self.aliases.get(chain_id, chain_id))

    async def run(self, chain_id: str, msg: RuleMsg, *, on_end: Callable[[End], Any] | None = None,
                  on_stream: StreamFn | None = None, on_debug: DebugFn | None = None,
                  timeout: float | None = None, debug: bool | None = None) -> list[End]:
        raise NotImplementedError("a durable chain run sends messages through its workflow only")


class RemoteNode:
    """A node whose OnMsg runs as an activity in a worker; what it told is replayed here, in order."""

    def __init__(self, wf: ChainWorkflow):
        self.wf = wf

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        node = ctx.node
        req: JSON = {"chain": node.chain.id, "node": node.id, "msg": msg.to_dict(), "err": ctx.err,
                     "from": ctx.from_id, "relation": ctx.in_relation,
                     "heartbeat": max(0.5, self.wf.opts.heartbeat_timeout / 4)}
        if ctx.run.outputs:
            req["outputs"] = {k: m.to_dict() for k, m in ctx.run.outputs.items()}
        if self.wf.log is not None and reaches_caller(ctx, self.wf.sink):
            req["log"] = self.wf.log  # its frames go to the caller as they come (chain_activities)
        self.wf.nodes_run += 1
        res = await self.wf.node_activity("chainreact.chain.node", req)
        await replay(ctx, res["calls"])

    def close(self) -> None:
        pass


def reaches_caller(ctx: NodeContext, sink: Any) -> bool:
    """Whether a Stream frame told at `ctx` goes to the run's stream callback `sink` (the caller), through
    the flow nodes of sub-chains, rather than to nodes connected on Stream (context.tell_stream's way)."""
    while not ctx.node.routes.get(STREAM):
        if ctx.run.on_stream is sink:
            return True
        if ctx.run.via is None:
            return False
        ctx = ctx.run.via
    return False


async def replay(ctx: NodeContext, calls: Sequence[JSON]) -> None:
    """Tell on the workflow's context what the node told in its activity (chain_activities)."""
    for c in calls:
        op = c["op"]
        if op == "stream" and c.get("logged"):
            continue  # the activity put it in the caller's log already (reaches_caller)
        m = RuleMsg.from_dict(c["msg"])
        if op == "next":
            ctx.tell_next(m, *c["relations"])
        elif op == "success":
            ctx.tell_success(m)
        elif op == "failure":
            ctx.tell_failure(m, c["err"])
        elif op == "next_or_else":
            ctx.tell_next_or_else(m, c["default"], *c["relations"])
        elif op == "end":
            ctx.do_on_end(m, c.get("err"), c["relation"], at_end_node=bool(c.get("at_end_node")))
        elif op == "stream":
            await ctx.tell_stream(m)
        else:
            raise ValueError(f"unknown node call {op!r} (a worker of another chainreact version?)")


class AgentChildNode:
    """`ai/agent` / `ai/llm` as a child agent workflow: the node's own step (chains ai_step) with this
    executor, a session's history loaded and saved by activities around the child run. Stream mode
    needs the node's in-worker stream: one node activity."""

    def __init__(self, wf: ChainWorkflow, model: str, remote: RemoteNode):
        self.wf = wf
        self.model = model
        self.remote = remote

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        if msg.metadata.get("stream") == "true":
            await self.remote.on_msg(ctx, msg)
            return
        await agent_node_step(ctx, msg, _ChildRun(self, ctx), stream=False)

    def close(self) -> None:
        pass


class _ChildRun:
    """ai_step.AgentNodeIO of one message: the session's history in the worker's session store (the
    chain.agent_input / agent_save activities), the run a child agent workflow."""

    def __init__(self, node: AgentChildNode, ctx: NodeContext):
        self.node = node
        self.where = {"chain": ctx.node.chain.id, "node": ctx.node.id}

    async def session_input(self, msg: RuleMsg, data: Any) -> tuple[Any, int]:
        got = await self.node.wf.node_activity("chainreact.chain.agent_input",
                                               {**self.where, "msg": msg.to_dict()})
        return got["input"], int(got["history"])

    async def run(self, ctx: NodeContext, msg: RuleMsg, model: str, extra: str, data: Any,
                  stream: bool) -> tuple[RunResult, str]:
        key = agent_key(ctx.node.chain.id, ctx.node.id, model, extra)
        try:
            result = await self.node.wf.child_agent(ctx.node.id, key, data, dict(msg.metadata))
        except ChildWorkflowError as e:
            if cancelled(e):
                raise asyncio.CancelledError() from None
            kind, why = failure(e)  # the agent's error, e.g. `ModelError: ...`
            text = why if not kind or why.startswith(f"{kind}:") else f"{kind}: {why}"
            raise AgentNodeFailed(text) from None
        return result_from_dict(result), model or self.node.model

    async def save_history(self, meta: dict[str, str], messages: list[Message], n_history: int) -> None:
        await self.node.wf.node_activity("chainreact.chain.agent_save", {
            **self.where, "meta": dict(meta), "messages": messages_to_list(messages), "history": n_history})


@workflow.defn(name=CHAIN_WORKFLOW)
class ChainWorkflow:
    def __init__(self) -> None:
        self.status = "starting"  # starting | running | done | failed | cancelled
        self.opts = DurableOptions()
        self.children = 0
        self.nodes_run = 0
        self.log: str | None = None  # the log of live Stream frames (a run started with `stream`)
        self.sink: Any = None  # the run's stream callback: frames for the caller
        self.trace: list[JSON] | None = None  # node events not logged yet (a run started with `trace`)
        self.traced = 0
        self.entered: dict[tuple[str, str], float] = {}  # (chain, node) -> workflow time of its last IN

    @workflow.run
    async def run(self, req: JSON) -> JSON:
        self.opts = DurableOptions.from_dict(req.get("options"))
        name = req["chain"]
        try:
            snap: JSON = await workflow.execute_activity(
                "chainreact.chain.plan", {"chain": name},
                **plain_activity_options(self.opts.plan_timeout, self.opts))
        except ActivityError as e:
            self.status = "failed"
            kind, why = failure(e)
            await self._publish(req, {"status": "failed", "error": why})
            raise ApplicationError(why, type=kind or "PlanError", non_retryable=True) from None
        engine = WorkflowEngine(snap, self)
        chain = engine.get(snap["chain"])
        assert chain is not None
        frames: list[RuleMsg] = []
        self.sink = frames.append  # kept: reaches_caller compares the callback by identity
        if req.get("stream"):
            self.log = frames_log(workflow.info().workflow_id)
            self.trace = [] if req.get("trace") else None
        timeout = req.get("timeout")
        self.status = "running"
        try:
            ends = await run_message(engine, chain, RuleMsg.from_dict(req["msg"]),
                                     max_nodes=int(snap.get("max_nodes") or 1000),
                                     timeout=float(timeout) if timeout is not None else snap.get("timeout"),
                                     on_stream=self.sink, on_debug=self._debug if self.trace is not None
                                     else None, debug_all=self.trace is not None)
        except asyncio.CancelledError:
            self.status = "cancelled"
            await self._publish(req, {"status": "cancelled"})
            raise
        self.status = "done"
        await self._publish(req, chain_outcome(ends))
        return {"chain": chain.id, "ends": [{**e.to_dict(), "nodeId": e.node_id} for e in ends],
                "streams": [f.to_dict() for f in frames], "version": snap.get("version")}

    async def _publish(self, req: JSON, end: JSON) -> None:
        """The run's end in the workers' store (chain_end.py): its frames log closed, and its record's end
        written when no server follows it any more (`record`: a run of the runs API)."""
        if not req.get("record") and not req.get("stream"):
            return
        try:
            await workflow.execute_activity(
                "chainreact.chain.publish",
                {"run_id": workflow.info().workflow_id, "end": end, "record": bool(req.get("record")),
                 "stream": bool(req.get("stream")), **self._traced()},
                **plain_activity_options(60.0, self.opts))
        except ActivityError as e:  # the store is down: the run's end stands in its workflow's result
            workflow.logger.warning("chain run: its end was not written to the store: %s", failure(e)[1])

    async def node_activity(self, name: str, req: JSON) -> Any:
        """A node's activity. A cancelled branch (message timeout, run cancelled) stops at once, as in
        process: the activity learns of it at its next heartbeat, the workflow does not wait for that."""
        options = {**tool_activity_options(None, self.opts),
                   "cancellation_type": workflow.ActivityCancellationType.TRY_CANCEL}
        try:
            return await workflow.execute_activity(name, {**req, **self._traced()}, **options)
        except ActivityError as e:
            if cancelled(e):
                raise asyncio.CancelledError() from None
            raise NodeActivityError(failure(e)[1]) from None  # the engine turns it into Failure

    def _debug(self, ev: DebugEvent) -> None:
        """A node's IN or OUT, kept for the timeline (chains/trace.py): logged by the next activity, not
        here (workflow code writes nothing). Times are the workflow's (deterministic): an OUT's duration
        is from its node's last IN, to the workflow task."""
        if ev.relation == STREAM or self.trace is None:
            return  # one per streamed token: the frames themselves are logged
        self.traced += 1
        now = workflow.now().timestamp()
        where = (ev.chain_id, ev.node_id)
        if ev.flow == "IN":
            self.entered[where] = now
        if self.traced <= MAX_NODE_EVENTS:
            d = {**node_event(ev), "ts": now}
            if ev.flow == "OUT":
                d["durationMs"] = round((now - self.entered.get(where, now)) * 1000, 3)
            self.trace.append(d)
        elif self.traced == MAX_NODE_EVENTS + 1:
            self.trace.append({"type": "node_events_cut", "after": MAX_NODE_EVENTS})

    def _traced(self) -> JSON:
        """What an activity logs of the timeline (a run started with `trace`): the node events so far, and
        where its agent node's events go (chain_activities)."""
        if self.trace is None:
            return {}
        out: JSON = {"trace": self.trace, "trace_log": self.log}
        self.trace = []
        return out

    async def child_agent(self, node_id: str, key: str, data: Any, metadata: JSON) -> JSON:
        """Run an agent node's agent as a child workflow (same task queue); its RunResult as a dict."""
        self.children += 1
        self.nodes_run += 1
        run_id = f"{workflow.info().workflow_id}.{node_id}.{self.children}"
        req = {"agent": key, "input": data, "stream": False, "metadata": metadata, "session_values": None,
               "options": self.opts.to_dict()}
        # TRY_CANCEL: a cancelled branch raises here at once; the child, asked to cancel (also when the
        # chain run ends first), ends as a cancelled agent run, its history repaired.
        out: JSON = await workflow.execute_child_workflow(
            AGENT_WORKFLOW, req, id=run_id,
            cancellation_type=workflow.ChildWorkflowCancellationType.TRY_CANCEL,
            parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL)
        result: JSON = out["result"]
        if result.get("stop_reason") == "cancelled":  # by someone else (ours raises above): the node fails
            raise AgentCancelledError(f"the agent run {run_id!r} was cancelled")
        return result

    @workflow.query(name="status")
    def query_status(self) -> JSON:
        return {"status": self.status, "nodes": self.nodes_run}
