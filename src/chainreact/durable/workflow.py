"""The agent run as a Temporal workflow: the same ReactLoop, its two I/O functions swapped for activities.

    plan activity (snapshot) -> ReactLoop(plan with model=activity, call_tool=activity, drain detection)
      -> interrupted?  wait for the `answer` update (no worker busy, for days if need be), resume the loop
      -> final / cancelled / error: publish the last events, return the RunResult (JSON)

Everything the loop decides (step limits, the doom-loop guard, argument validation, ReturnDirectly,
cancel safe points, interrupts) is deterministic over the snapshot and the activity results, which the
history records, so a replay on another worker takes the same decisions and runs no I/O twice.

Cancel: a Temporal workflow cancellation is the `immediate` mode (the activity in flight is cancelled);
the `cancel` signal carries any mode (`after_model`, `after_tools`, combined with `|`) and an optional
timeout after which it escalates to immediate (a durable timer). Either way the run ends like an
in-process one: `stop_reason == "cancelled"`, a `cancelled` event, the messages repaired.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import CancelledError as TemporalCancelledError

from ..agent.cancel import CancelMode, CancelState, repair_history
from ..agent.detection import DRAIN
from ..agent.interrupt import ANSWER, Checkpoint, Resume
from ..agent.loop import ReactLoop
from ..agent.plan import Detection, Limits, RunPlan
from ..agent.result import RunResult
from ..agent.special_tools import ToolSearchTool
from ..errors import ModelError
from ..tools.base import Tool, ToolContext, ToolOutput
from ..types import Cancelled, Event, Message, StreamItem, ToolCall
from .activities import loop_middleware
from .codec import (
    JSON,
    call_to_dict,
    client_event_from_dict,
    messages_from_list,
    messages_to_list,
    output_from_dict,
    question_to_dict,
    response_from_dict,
    result_to_dict,
)
from .hooks import HOOK_ACTIVITY, workflow_chain
from .options import DurableOptions, model_activity_options, plain_activity_options, tool_activity_options

WORKFLOW = "chainreact.agent"
TERMINAL = ("done", "failed", "cancelled")
_LIVE = ("text_delta", "reasoning_delta")  # streamed by the model activity itself


class RemoteTool(Tool):
    """A tool as the workflow's loop sees it: name, description, schema. It runs in an activity."""

    def __init__(self, spec: JSON):
        self.name = spec["name"]
        self.description = spec.get("description", "")
        self.parameters = spec.get("parameters") or {"type": "object", "properties": {}}
        self.timeout = spec.get("timeout")
        self.full_history = bool(spec.get("history"))

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        raise RuntimeError(f"tool {self.name} runs in an activity, not in the workflow")


def _reraise_cancel(e: ActivityError) -> None:
    """An activity cancelled because the run was: the loop must see a cancellation, not a failure."""
    if isinstance(e.cause, TemporalCancelledError):
        raise asyncio.CancelledError()


def _cause(e: BaseException) -> str:
    while isinstance(e, ActivityError) and e.cause is not None:
        e = e.cause
    return str(e.message if isinstance(e, ApplicationError) else e)


@workflow.defn(name=WORKFLOW)
class AgentWorkflow:
    def __init__(self) -> None:
        self.cancel = CancelState()
        self.status = "starting"  # starting | running | interrupted | done | failed | cancelled
        self.questions: list[JSON] = []
        self.answers: dict[str, Any] | None = None
        self.outbox: list[JSON] = []
        self.checkpoint: Checkpoint | None = None
        self.loop: ReactLoop | None = None
        self.loop_task: asyncio.Task[None] | None = None
        self.stopped: JSON | None = None  # what the `wait` update returns (at an interrupt, at the end)
        self.req: JSON = {}
        self.run_id = ""
        self.events = False
        self.opts = DurableOptions()

    # -- the run --------------------------------------------------------------------------------

    @workflow.run
    async def run(self, req: JSON) -> JSON:
        self.req = req
        self.run_id = workflow.info().workflow_id
        self.opts = DurableOptions.from_dict(req.get("options"))
        name = req["agent"]
        try:
            # A local activity: it runs in this worker within the workflow task (no task queue round
            # trip, no extra workflow task); it has no side effect, so running it again is harmless.
            snap: JSON = await workflow.execute_local_activity(
                "chainreact.agent.plan", {"agent": name, "input": req.get("input"),
                                          "metadata": req.get("metadata"),
                                          "session_values": req.get("session_values")},
                **plain_activity_options(self.opts.plan_timeout, self.opts))
        except asyncio.CancelledError:
            return await self._end(self._cancelled_result(name, []))
        except ActivityError as e:
            self.status = "failed"
            raise ApplicationError(f"agent {name!r}: {_cause(e)}", type="PlanError",
                                   non_retryable=True) from None
        self.events = bool(snap.get("events"))
        self.status = "running"
        plan = self._plan(snap)
        resume: Resume | None = None  # the first messages come from the snapshot (self._messages)
        while True:
            result = await self._drive(plan, req.get("input"), resume)
            if result.stop_reason != "interrupted":
                break
            cp = self.checkpoint
            assert cp is not None
            self.questions = [question_to_dict(q) for q in cp.questions]
            self.stopped = result_to_dict(result)
            self.status = "interrupted"
            # A cancel may come while the status is being written (callers see "interrupted" at once): the
            # write lands first, then the cancel ends the run, so the store's last word is "cancelled".
            publishing = asyncio.ensure_future(self._publish("interrupted", self.stopped))
            try:
                await asyncio.shield(publishing)
                await workflow.wait_condition(lambda: self.answers is not None or self.cancel.requested)
            except asyncio.CancelledError:
                await publishing
                self.answers = None
            if self.answers is None:  # cancelled while waiting: the run ends here, history repaired
                result = self._cancelled_result(plan.agent, cp.messages, cp.step)
                break
            resume = Resume(messages=list(cp.messages), step=cp.step, pending=list(cp.pending),
                            completed=dict(cp.completed), answers=self.answers, run_id=self.run_id)
            self.answers, self.questions, self.stopped = None, [], None
            self.status = "running"
        return await self._end(result)

    async def _end(self, result: RunResult) -> JSON:
        out = self.stopped = result_to_dict(result)
        self.status = "cancelled" if result.stop_reason == "cancelled" else "done"
        await self._publish(self.status, out)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return {"result": out}

    async def _drive(self, plan: RunPlan, data: Any, resume: Resume | None) -> RunResult:
        loop = self.loop = ReactLoop(plan, streaming=False, cancel=self.cancel, run_id=self.run_id)

        async def consume() -> None:
            async for ev in loop.events(data, resume):
                self._emit(ev)

        task = self.loop_task = asyncio.ensure_future(consume())
        try:
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                if task.done() and not task.cancelled():
                    raise
                self._request(CancelMode.IMMEDIATE)  # the workflow was cancelled: stop the loop now
                await task
        except Exception as e:
            self.status = "failed"
            await self._publish("failed", None)
            raise ApplicationError(f"{type(e).__name__}: {e}", type=type(e).__name__,
                                   non_retryable=True) from None
        assert loop.result is not None
        return loop.result

    def _cancelled_result(self, agent: str, messages: list[Message], step: int = 0) -> RunResult:
        mode = self.cancel.mode if self.cancel.mode else CancelMode.IMMEDIATE
        repaired = repair_history(messages)
        self._emit(Cancelled(run_id=self.run_id, agent=agent, step=step, path=(agent,),
                             mode=str(mode.name or mode).lower(), messages=repaired))
        return RunResult(content="", messages=repaired, steps=step, stop_reason="cancelled",
                         metadata={"run_id": self.run_id, "agent": agent})

    # -- the plan with activity-backed I/O --------------------------------------------------------

    def _plan(self, snap: JSON) -> RunPlan:
        sv = self.req.get("session_values")
        tools = tuple(RemoteTool(t) for t in snap["tools"])
        deferred = tuple(RemoteTool(t) for t in snap.get("deferred") or ())
        return RunPlan(
            agent=snap["agent"],
            instruction=snap["instruction"],
            model=self._model_io(snap["model"]),
            call_tool=self._tool_io,
            tools=tools,
            deferred_tools=deferred,
            return_directly=frozenset(snap.get("return_directly") or ()),
            limits=Limits(**snap["limits"]),
            # The activity returns the whole response: decide on it whole (no timing in the workflow).
            detection=Detection(DRAIN),
            keep_think=bool(snap.get("keep_think")),
            metadata=dict(self.req.get("metadata") or {}),
            session_values=dict(sv) if sv is not None else None,
            output_key=snap.get("output_key"),
            checkpoint=self._checkpoint,
            middleware=workflow_chain(loop_middleware(workflow.info().task_queue, snap["agent"]),
                                      self._hook_io, {t.name: t for t in (*tools, *deferred)}),
            gen_model_input=self._messages(snap),
        )

    async def _hook_io(self, data: JSON) -> JSON:
        """A loop hook of middleware that runs in the worker (durable/hooks.py)."""
        req = {"agent": self.req["agent"], "run_id": self.run_id, **data}
        try:
            out: JSON = await workflow.execute_activity(
                HOOK_ACTIVITY, req, **plain_activity_options(self.opts.plan_timeout, self.opts))
        except ActivityError as e:
            _reraise_cancel(e)
            raise RuntimeError(f"middleware {data['index']} {data['hook']}: {_cause(e)}") from None
        return out

    @staticmethod
    def _messages(snap: JSON) -> Callable[[str, Any], list[Message]]:
        """The run's first messages: the plan activity's, with the instruction that before_agent
        middleware left (build_messages' rule: it leads unless the input brought a system message)."""
        planned = snap["instruction"]

        def first(instruction: str, data: Any) -> list[Message]:
            messages = messages_from_list(snap["messages"])
            if snap.get("system") == "instruction" and instruction != planned:
                if planned:
                    messages = messages[1:]
                if instruction:
                    messages.insert(0, Message("system", instruction))
            return messages

        return first

    async def _checkpoint(self, cp: Checkpoint) -> None:
        self.checkpoint = cp  # the history is the durable checkpoint; this is where a resume starts

    def _base(self) -> JSON:
        loop = self.loop
        out: JSON = {"agent": self.req["agent"], "run_id": self.run_id, "step": loop.step if loop else 0,
                     "path": list(loop.path) if loop else [self.req["agent"]],
                     "heartbeat": max(0.5, self.opts.heartbeat_timeout / 4), "events": self.events}
        if self.outbox:
            out["publish"], self.outbox = self.outbox, []
        return out

    def _model_io(self, model: JSON) -> Callable[..., AsyncGenerator[StreamItem, None]]:
        options = model_activity_options(model, self.opts)
        live = bool(self.req.get("stream"))

        async def call(messages: list[Message], tools: list[JSON] | None, *, stream: bool,
                       on_event: Callable[[Any], None]) -> AsyncGenerator[StreamItem, None]:
            req = {**self._base(), "messages": messages_to_list(messages), "tools": tools, "stream": live,
                   "live": live and self.events}
            try:
                res = await workflow.execute_activity("chainreact.agent.model", req, **options)
            except ActivityError as e:  # the cause's message, without Temporal's wrapper chain
                _reraise_cancel(e)
                raise ModelError(_cause(e)) from None
            for d in res.get("events") or ():
                ev = client_event_from_dict(d)
                if ev is not None:
                    on_event(ev)
            yield response_from_dict(res["response"])

        return call

    async def _tool_io(self, call: ToolCall, tool: Tool, args: dict[str, Any],
                       ctx: ToolContext) -> ToolOutput:
        req = {**self._base(), "call": call_to_dict(call), "args": args, "path": list(ctx.path)}
        if ANSWER in ctx.state:
            req["answer"] = ctx.state[ANSWER]
        if getattr(tool, "full_history", False):
            req["history"] = messages_to_list(ctx.messages)
        if isinstance(tool, ToolSearchTool):  # the run's own (before_agent changed the deferred tools)
            req["search"] = {"tools": [t.name for t in tool.deferred], "limit": tool.limit}
        try:
            res = await workflow.execute_activity("chainreact.agent.tool", req,
                                                  **tool_activity_options(tool.timeout, self.opts))
        except ActivityError as e:  # attempts exhausted (lost workers, timeouts): a result, as in process
            _reraise_cancel(e)
            return ToolOutput(f"Error: tool {call.name} failed: {_cause(e)}", True)
        return output_from_dict(res)

    # -- events -----------------------------------------------------------------------------------

    def _emit(self, ev: Event) -> None:
        if not self.events:
            return
        d = ev.to_dict()
        if self.req.get("stream") and d["type"] in _LIVE:
            return  # the model activity already streamed this text as it arrived
        self.outbox.append(d)

    async def _publish(self, status: str, result: JSON | None) -> None:
        if not self.events:
            return
        req = {**self._base(), "status": status, "result": result}
        await workflow.execute_activity("chainreact.events.publish", req,
                                        **plain_activity_options(60.0, self.opts))

    # -- cancel, answers, status ------------------------------------------------------------------

    def _request(self, mode: CancelMode) -> None:
        self.cancel.mode |= mode
        self.cancel.requested = True
        if mode & CancelMode.IMMEDIATE and self.loop_task is not None and not self.loop_task.done():
            self.loop_task.cancel()

    @workflow.signal(name="cancel")
    async def cancel_signal(self, req: JSON) -> None:
        mode = CancelMode.parse(str(req.get("mode") or "immediate"))
        self._request(mode)
        timeout = req.get("timeout")
        if timeout is not None and not mode & CancelMode.IMMEDIATE:
            await workflow.sleep(timedelta(seconds=float(timeout)))
            if self.status in ("running", "starting"):
                self.cancel.escalated = True
                self._request(CancelMode.IMMEDIATE)

    @workflow.update(name="answer")
    async def answer(self, answers: JSON) -> JSON:
        self.answers = self._check(answers)
        return {"accepted": sorted(self.answers)}

    @answer.validator
    def _validate_answer(self, answers: JSON) -> None:
        if self.status != "interrupted" or self.answers is not None:
            raise ValueError(f"run {self.run_id!r} is {self.status}, not waiting for answers")
        self._check(answers)

    def _check(self, answers: JSON) -> dict[str, Any]:
        from ..state.checkpoint import Question, RunSnapshot, check_answers

        snap = RunSnapshot(self.run_id, questions=[
            Question(q["id"], q["kind"], q.get("question", ""), q.get("schema"), q.get("tool"),
                     q.get("arguments")) for q in self.questions])
        return check_answers(snap, dict(answers or {}))

    @workflow.update(name="wait")
    async def wait(self) -> JSON:
        """Returns when the run stops: at an interrupt (with the interrupted result) or at its end (with
        the result: the caller needs no second request; none when the run failed)."""
        await workflow.wait_condition(lambda: self.status in ("interrupted", *TERMINAL))
        return {"status": self.status, "result": self.stopped if self.status != "failed" else None}

    @workflow.query(name="status")
    def query_status(self) -> JSON:
        return {"status": self.status, "questions": self.questions,
                "step": self.loop.step if self.loop else 0}
