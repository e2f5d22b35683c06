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
from collections.abc import Callable
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from ..agent.cancel import CancelMode, CancelState, escalate_after, repair_history
from ..agent.detection import DRAIN
from ..agent.inputs import build_messages
from ..agent.interrupt import Checkpoint, Resume
from ..agent.loop import ReactLoop
from ..agent.plan import Detection, Limits, RunPlan
from ..agent.result import RunResult
from ..types import Cancelled, Event, Message
from .codec import JSON, messages_from_list, question_to_dict, result_to_dict
from .failures import cause_text, reraise_cancel
from .hooks import HOOK_ACTIVITY, workflow_chain
from .hosts import loop_middleware
from .options import DurableOptions, model_activity_options, plain_activity_options
from .workflow_io import LIVE, ActivityIO, RemoteTool

WORKFLOW = "chainreact.agent"
TERMINAL = ("done", "failed", "cancelled")


def first_messages(snap: JSON) -> Callable[[str, Any], list[Message]]:
    """The run's first messages (the loop's gen_model_input) from the plan activity's snapshot: its
    conversation with the instruction in front by build_messages' own rule (unless the conversation has
    its own system message), with the instruction before_agent middleware left; a GenModelInput's
    messages as they are."""
    conversation = messages_from_list(snap["messages"])
    if snap.get("generated", snap.get("system") == "generated"):  # ("system": runs started before 0.x)
        return lambda _instruction, _data: list(conversation)
    return lambda instruction, _data: build_messages({"messages": conversation}, instruction, ())


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
            self._finished("failed")
            raise ApplicationError(f"agent {name!r}: {cause_text(e)}", type="PlanError",
                                   non_retryable=True) from None
        self.events = bool(snap.get("events"))
        self.status = "running"
        plan = self._plan(snap)
        resume: Resume | None = None  # the first messages come from the snapshot (first_messages)
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
        self._finished("cancelled" if result.stop_reason == "cancelled" else "done")
        await self._publish(self.status, out)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return {"result": out}

    def _finished(self, status: str) -> None:
        self.status = status
        self.cancel.finished.set()  # a cancel's escalation timer that fires later does nothing

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
                self.cancel.request(CancelMode.IMMEDIATE, self._stop)  # the workflow was cancelled
                await task
        except Exception as e:
            self._finished("failed")
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
        live = bool(self.req.get("stream"))
        io = ActivityIO(model_activity="chainreact.agent.model", tool_activity="chainreact.agent.tool",
                        base=self._base, opts=self.opts,
                        model_options=model_activity_options(snap["model"], self.opts),
                        model_fields={"stream": live, "live": live and self.events})
        return RunPlan(
            agent=snap["agent"],
            instruction=snap["instruction"],
            model=io.model,
            call_tool=io.call_tool,
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
            gen_model_input=first_messages(snap),
        )

    async def _hook_io(self, data: JSON) -> JSON:
        """A loop hook of middleware that runs in the worker (durable/hooks.py)."""
        req = {"agent": self.req["agent"], "run_id": self.run_id, **data}
        try:
            out: JSON = await workflow.execute_activity(
                HOOK_ACTIVITY, req, **plain_activity_options(self.opts.plan_timeout, self.opts))
        except ActivityError as e:
            reraise_cancel(e)
            raise RuntimeError(f"middleware {data['index']} {data['hook']}: {cause_text(e)}") from None
        return out

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

    # -- events -----------------------------------------------------------------------------------

    def _emit(self, ev: Event) -> None:
        if not self.events:
            return
        d = ev.to_dict()
        if self.req.get("stream") and d["type"] in LIVE:
            return  # the model activity already streamed this text as it arrived
        self.outbox.append(d)

    async def _publish(self, status: str, result: JSON | None) -> None:
        if not self.events:
            return
        req = {**self._base(), "status": status, "result": result}
        await workflow.execute_activity("chainreact.events.publish", req,
                                        **plain_activity_options(60.0, self.opts))

    # -- cancel, answers, status ------------------------------------------------------------------

    def _stop(self) -> None:
        """An immediate cancel: the loop's task is cancelled (the activity in flight with it)."""
        if self.loop_task is not None and not self.loop_task.done():
            self.loop_task.cancel()

    @workflow.signal(name="cancel")
    async def cancel_signal(self, req: JSON) -> None:
        """A cancel of any mode; a safe-point one with a timeout escalates to immediate after it (the
        agent's own escalation, on a durable timer)."""
        mode = CancelMode.parse(str(req.get("mode") or "immediate"))
        self.cancel.request(mode, self._stop)
        timeout = req.get("timeout")
        if timeout is not None and not mode & CancelMode.IMMEDIATE:
            await escalate_after(self.cancel, float(timeout), self._stop, workflow.sleep)

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
