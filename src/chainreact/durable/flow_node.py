"""An `aiagent` node inside a durable turn: the node's own steps (flows.node_steps.node_turn) with this
executor, which does each I/O as an activity and runs the node's agent in the workflow.

    start / resume   activity chainreact.flow.node.start: prompts, memory window and summary, long-term
                     recall, the agent's tool specs (node_steps.prepare in the worker); or the stored run
                     claimed, to go on with it
    run              chainreact's own ReactLoop here (as the agent workflow runs it): every model call and
                     every tool call an activity (workflow_io.ActivityIO); the tool budget's before_model
                     here, its count carried by each tool call
    suspend          activity chainreact.flow.node.suspend: the run that asks, saved in the store
    finish           activity chainreact.flow.node.finish: node_steps.remember in the worker (and a
                     resumed run marked done)

A worker lost in the middle of the node runs again only the call that was in flight: every completed
model call and tool call is in the history.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from temporalio import workflow

from ..agent.detection import DRAIN
from ..agent.interrupt import Checkpoint, Resume
from ..agent.loop import ReactLoop
from ..agent.middleware import MiddlewareChain
from ..agent.plan import Detection, Limits, RunPlan
from ..agent.result import RunResult
from ..flows.asking import Pending
from ..flows.driver import flow_event
from ..flows.events import FlowEvent
from ..flows.model import AIAgentNode
from ..flows.node_steps import NodeRun, NodeStart
from ..types import Message
from .codec import JSON, call_from_dict, messages_from_list, messages_to_list, output_from_dict
from .options import DurableOptions, plain_activity_options, tool_activity_options
from .workflow_io import LIVE, ActivityIO, RemoteTool


class NodeTool(RemoteTool):
    """A node tool as the loop sees it; the model sees `spec` (askUserForToolsInput checks arguments
    against a schema without `required`, but shows the model the whole one)."""

    def __init__(self, spec: JSON):
        super().__init__(spec)
        self._spec = spec.get("spec")

    def spec(self) -> dict[str, Any]:
        return dict(self._spec) if isinstance(self._spec, dict) else super().spec()


class Turn(Protocol):
    """What a node needs of its turn's workflow (flow_workflow.FlowTurnWorkflow)."""

    opts: DurableOptions

    def base(self, *last: JSON) -> JSON:
        """The fields every activity of the turn gets, with the events waiting to be published."""
        ...


class ActivityNodeIO(NodeRun):
    """flows.node_steps.NodeIO of a durable turn (module doc)."""

    def __init__(self, wf: Turn, node: AIAgentNode, env: dict[str, Any], agent_events: bool,
                 session_key: str):
        super().__init__(node, env, session_key=session_key, agent_events=agent_events)
        self.wf = wf
        self.agent = node.name
        self.plan: RunPlan | None = None
        self.loop: ReactLoop | None = None
        self.checkpoint: Checkpoint | None = None
        self.resume_from: Resume | None = None  # the claimed run the next run() goes on with
        self.claimed: tuple[str, int] | None = None  # its run id and the version saved by the claim
        self.done: JSON | None = None  # the resumed run, ended: marked done in the store (as in process)
        self.slotted: set[str] = set()  # the runs whose slot this turn recorded (flow_recording.py)

    def _req(self, **kw: Any) -> JSON:
        plain = {k: v for k, v in self.env.items() if not callable(v)}  # `now` is the workflow's clock
        beat = max(0.5, self.wf.opts.heartbeat_timeout / 4)
        return {**self.wf.base(), "node": self.node.name, "heartbeat": beat, "env": plain, **kw}

    async def _activity(self, name: str, req: JSON, options: dict[str, Any] | None = None) -> Any:
        options = options if options is not None else tool_activity_options(None, self.wf.opts)
        return await workflow.execute_activity(f"chainreact.flow.node.{name}", req, **options)

    async def start(self) -> NodeStart:
        start = await self._activity("start", self._req())
        self.plan = self._plan(start)
        return NodeStart(start["system"], start["user_text"], start["key"],
                         messages_from_list(start["history"]), list(start["memories"]))

    async def resume(self, pending: Pending) -> None:
        self.budget.used = pending.tools_used
        start = await self._activity("start", self._req(resume={"run_id": pending.run_id,
                                                                "answers": pending.answers}))
        r = start["resume"]
        done = {k: output_from_dict(v) for k, v in r["completed"].items()}
        self.resume_from = Resume(messages_from_list(r["messages"]), int(r["step"]),
                                  [call_from_dict(c) for c in r["pending"]], done, dict(r["answers"] or {}),
                                  pending.run_id)
        self.claimed = (pending.run_id, int(start["version"]))
        self.plan = self._plan(start)

    def _plan(self, start: JSON) -> RunPlan:
        self.agent = start["agent"]
        io = ActivityIO(model_activity="chainreact.flow.node.model",
                        tool_activity="chainreact.flow.node.tool", base=self._base, opts=self.wf.opts,
                        model_options=tool_activity_options(None, self.wf.opts),
                        model_fields=self._model_fields, tool_fields=self._tool_fields,
                        on_tool=self._counted)
        return RunPlan(
            agent=start["agent"], instruction=start["system"], model=io.model, call_tool=io.call_tool,
            tools=tuple(NodeTool(t) for t in start["tools"]),
            return_directly=frozenset(start.get("return_directly") or ()),
            middleware=MiddlewareChain([self.budget]),  # before_model: tools off once the budget is spent
            limits=Limits(**start["limits"]), detection=Detection(DRAIN),
            keep_think=bool(start.get("keep_think")), checkpoint=self._checkpoint)

    def _model_fields(self) -> JSON:
        """`slot`: the run's first model call in this turn, whose activity records the run's slot."""
        run_id = self.loop.run_id if self.loop is not None else ""
        first = run_id not in self.slotted
        self.slotted.add(run_id)
        return {"stream": self.agent_events, "slot": first}

    def _tool_fields(self) -> JSON:
        return {"tools_used": self.budget.used, "agent_events": self.agent_events}

    def _counted(self, res: JSON) -> None:
        self.budget.used = int(res.get("tools_used") or self.budget.used)  # the worker counted the call

    async def _checkpoint(self, cp: Checkpoint) -> None:
        self.checkpoint = cp

    def _base(self) -> JSON:
        loop = self.loop
        return self._req(run_id=loop.run_id if loop else "", agent=self.agent, step=loop.step if loop else 0,
                         path=list(loop.path) if loop else [self.agent])

    @property
    def result(self) -> RunResult | None:
        return self.loop.result if self.loop is not None else None

    async def run(self, messages: list[Message] | None) -> AsyncIterator[FlowEvent]:
        assert self.plan is not None
        resume, self.resume_from = self.resume_from, None
        run_id = resume.run_id if resume is not None and resume.run_id else \
            f"{self.node.name}-{workflow.uuid4().hex[:16]}"
        loop = self.loop = ReactLoop(self.plan, streaming=False, run_id=run_id)
        async for ev in loop.events(messages, resume):
            if self.agent_events and ev.type in LIVE:
                continue  # the model activity streamed it as it came
            fe = flow_event(ev, self.node.name, self.agent_events)
            if fe is not None:
                yield fe
        result = loop.result
        assert result is not None
        if resume is not None and result.stop_reason != "interrupted":
            self.done = {"run_id": run_id, "steps": result.steps, "agent": self.agent,
                         "messages": messages_to_list(result.messages), "session": self.session_key,
                         "version": self.claimed[1] if self.claimed else 0,
                         "extra": {"flowNode": self.node.name, "content": result.content,
                                   "stop_reason": result.stop_reason}}

    async def suspend(self, result: RunResult) -> str:
        from ..state.runs import snapshot_of

        cp = self.checkpoint
        assert cp is not None  # the loop checkpoints at the interrupt before it returns
        snap = snapshot_of(cp, session=self.session_key, extra={"flowNode": self.node.name})
        # The resumed run asks again: saved over its claim; a new run's first save expects none.
        version = self.claimed[1] if self.claimed is not None and self.claimed[0] == cp.run_id else 0
        await self._activity("suspend", self._req(snapshot=snap.to_dict(), version=version),
                             plain_activity_options(60.0, self.wf.opts))
        return cp.run_id

    async def finish(self, key: str, user_text: str, content: str, text: str | None,
                     memories: list[str]) -> list[str]:
        fin = await self._activity("finish", self._req(key=key, user_text=user_text, content=content,
                                                       text=text, memories=memories, done=self.done))
        return list(fin.get("written") or [])

    async def aclose(self) -> None:
        pass  # nothing held: the agent lives in the workers
