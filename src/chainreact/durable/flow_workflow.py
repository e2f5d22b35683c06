"""A chat flow's turn as a Temporal workflow: the flow's own routing, the nodes' I/O as activities.

    load activity (the document, the session and its version)
      -> flows.routing.route (the same code as Flow.stream): node by node, in workflow code
           aiagent node -> flows.node_steps.node_turn, the node's own steps, with flow_node.ActivityNodeIO:
                           the agent's ReactLoop here, its I/O as chainreact.flow.node.* activities
           rulechain node -> activity chainreact.flow.chain
           message / end nodes, outcomes, transitions, groups, login -> decided here, no I/O
      -> save activity (expecting the version read at the start), then the last events: turn_end
      -> the turn's result (the TurnResult's fields)

One workflow per turn, its id the session key (`flow:<flow id>:<session>`): Temporal runs at most one
workflow per id at a time, so the turns of one session are serialized, and between turns nothing runs (the
session is in the state store; an idle session costs no worker, no history). See docs/durable.md, "Chat
flows", for the choice and its limits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from ..flows.asking import Pending
from ..flows.model import AIAgentNode, FlowDef, RuleChainNode
from ..flows.node_steps import node_turn
from ..flows.routing import Session, route, turn_env
from .codec import JSON
from .failures import root
from .flow_recording import turn_fields
from .options import DurableOptions, plain_activity_options, tool_activity_options

WORKFLOW = "chainreact.flow.turn"


def _now(fmt: Any = None) -> Any:
    """`now()` in the turn's templates and conditions: the workflow's clock, the same on every replay."""
    t = workflow.now()
    return t if fmt is None else t.strftime(str(fmt))


def _plain(env: dict[str, Any]) -> JSON:
    return {k: v for k, v in env.items() if not callable(v)}


def _failure(e: BaseException) -> tuple[str, str]:
    """The message and error type of a failed activity (the node's own error), or of a routing error."""
    r = root(e)
    if isinstance(r, ApplicationError):
        return str(r.message), r.type or "ApplicationError"
    return f"{type(r).__name__}: {r}", type(r).__name__


class _ActivityIO:
    """The turn's node I/O as activities (flows.routing.TurnIO)."""

    def __init__(self, wf: FlowTurnWorkflow):
        self.wf = wf

    async def agent(self, node: AIAgentNode, env: dict[str, Any], pending: Pending | None,
                    agent_events: bool) -> AsyncIterator[Any]:
        from .flow_node import ActivityNodeIO

        req = self.wf.req
        io = ActivityNodeIO(self.wf, node, env, agent_events, f"flow:{req['flow']}:{req['session']}")
        async for item in node_turn(node, env, io, pending):  # the node's steps, as in process
            yield item

    async def chain(self, node: RuleChainNode, env: dict[str, Any]) -> Any:
        wf = self.wf
        req = {**wf.base(), "node": node.name, "env": _plain(env),
               "heartbeat": max(0.5, wf.opts.heartbeat_timeout / 4)}
        res = await workflow.execute_activity("chainreact.flow.chain", req,
                                              **tool_activity_options(None, wf.opts))
        return res.get("output")


@workflow.defn(name=WORKFLOW)
class FlowTurnWorkflow:
    def __init__(self) -> None:
        self.req: JSON = {}
        self.log = ""
        self.opts = DurableOptions()
        self.status = "starting"  # starting | running | done | failed
        self.node: str | None = None
        self.outbox: list[JSON] = []
        self.messages: list[JSON] = []
        self.output: Any = None
        self.warnings: list[str] = []

    @workflow.run
    async def run(self, req: JSON) -> JSON:
        self.req = req
        info = workflow.info()
        self.log = turn_log_id(info.workflow_id, info.run_id)
        self.opts = DurableOptions.from_dict(req.get("options"))
        flow_id, session = req["flow"], req["session"]
        try:
            loaded = await workflow.execute_activity(
                "chainreact.flow.load", {"flow": flow_id, "session": session, "log": self.log},
                **plain_activity_options(self.opts.plan_timeout, self.opts))
        except ActivityError as e:
            self.status = "failed"
            message, kind = _failure(e)
            raise ApplicationError(f"flow {flow_id!r}: {message}", type=kind, non_retryable=True) from None
        definition = FlowDef.model_validate(loaded["document"])
        state = Session.from_snapshot(loaded["snapshot"], definition.start_node.name)
        env = turn_env(req["text"], req.get("user"), req.get("group"), session, state)
        env["now"] = _now
        self.status = "running"
        try:
            async for ev in route(definition, flow_id, session, state, env, _ActivityIO(self),
                                  bool(req.get("stream"))):
                d = ev.to_dict()
                self.record(d)
                self.outbox.append(d)
                self.node = ev.node
            end = state.end_event().to_dict()
            await workflow.execute_activity(
                "chainreact.flow.save",
                {**self.base(end), "snapshot": state.to_snapshot(), "version": loaded["version"],
                 "status": "done" if state.ended else "interrupted",
                 "recording": turn_fields(req, self.messages, self.output, end)},
                **plain_activity_options(60.0, self.opts))
        except Exception as e:  # a node's error (ActivityError) or the routing's (FlowError, an expression)
            message, kind = _failure(e)
            await self._fail(message, kind)
            raise ApplicationError(message, type=kind, non_retryable=True) from None
        self.status = "done"
        return {"node": state.node, "ended": state.ended, "messages": self.messages, "output": self.output,
                "warnings": self.warnings, "turn": self.log}

    def base(self, *last: JSON) -> JSON:
        """What every activity of the turn gets: the flow, the session, the log and the events to publish
        first (the workflow never writes; the next activity appends them, so the log stays in order)."""
        out: JSON = {"flow": self.req["flow"], "session": self.req["session"], "log": self.log,
                     "publish": [*self.outbox, *last]}
        self.outbox = []
        return out

    def record(self, d: JSON) -> None:
        """The turn's result, as Flow.send gathers it from the events."""
        kind = d.get("event")
        if kind == "message":
            self.messages.append({"node": d.get("node") or "", "role": d.get("role", "assistant"),
                                  "content": d.get("content", "")})
        elif kind == "output":
            self.output = d.get("output")
        elif kind == "warning":
            self.warnings.append(str(d.get("message", "")))

    async def _fail(self, message: str, kind: str) -> None:
        self.status = "failed"
        err = {"event": "error", "node": self.node, "message": message, "error_type": kind}
        try:
            await workflow.execute_activity("chainreact.flow.publish", self.base(err),
                                            **plain_activity_options(60.0, self.opts))
        except ActivityError:
            pass  # the turn fails either way; a reader also learns it from Temporal

    @workflow.query(name="status")
    def query_status(self) -> JSON:
        return {"status": self.status, "node": self.node, "turn": self.log}


def turn_log_id(workflow_id: str, run_id: str) -> str:
    """The id of a turn's event log in the state store: one per workflow run (a session's turns share the
    workflow id)."""
    return f"{workflow_id}/{run_id}"
