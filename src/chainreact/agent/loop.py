"""The ReAct loop: one state machine for streaming and non-streaming runs.

A run is an async generator of events. Each step is one model call plus the tool calls it asked for:

    before_model -> model call (streamed or not; text routed by detection.py) -> after_model
    -> no tool calls?  final answer, done
    -> tool calls      checkpoint; run them (tool_exec.py), append results in call order, checkpoint,
                       next step (a tool that raises ToolInterrupt stops the run: interrupt.py)

The loop reads only its RunPlan (plan.py), made by the Agent: the rendered instruction, the tools, the
limits, the middleware, and the two I/O functions `plan.model` and `plan.call_tool`. Everything here is a
deterministic decision over the plan and the messages; every I/O goes through those two functions.
`Agent.run()` folds this generator; `Agent.stream()` yields it; `Agent.start()` drives it in a task so
it can be cancelled (cancel.py). Streaming and non-streaming differ only in how the model is asked
(`stream=True/False`); the router turns either into the same events. A resumed run starts with the
saved step's pending calls, then goes on the same way.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, MutableMapping
from typing import Any

from ..errors import MaxStepsError
from ..tools.base import ToolContext, ToolOutput
from ..types import (
    Cancelled,
    ErrorEvent,
    Event,
    Final,
    Interrupted,
    Message,
    ModelCallEnd,
    ModelResponse,
    Preamble,
    ReasoningChunk,
    ReasoningDelta,
    RunStart,
    RunWarning,
    StepEnd,
    TextChunk,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
    Usage,
)
from .cancel import CancelMode, CancelState, repair_history
from .detection import DRAIN, StreamRouter
from .gc_load import run_ended, run_started
from .inputs import build_messages, gen_messages, input_messages
from .interrupt import ANSWER, Checkpoint, Interruption, Question, Resume, ToolInterrupt
from .middleware import AgentContext, RunState
from .nudges import MAX_STEPS_PROMPT, NudgeFilter, max_steps_warning, settle_answer, was_nudged
from .plan import RunPlan
from .result import RunResult
from .special_tools import LoadTools, settle_tool_search
from .streaming import is_streaming
from .think import ThinkSplitter, split_think
from .tool_exec import CallOutcome, ToolRunner

log = logging.getLogger("chainreact.agent")



class _WakingList(list[Event]):
    """Side events that wake the loop while it waits for tools (nested agents' live events)."""

    def __init__(self, items: list[Event], wake: asyncio.Event):
        super().__init__(items)
        self.wake = wake

    def append(self, ev: Event) -> None:
        super().append(ev)
        self.wake.set()


class _RunCancelled(Exception):
    """Internal: a safe-point cancel was reached."""


class ReactLoop:
    """One run of a plan. Create, iterate `events()`, then read `result`."""

    def __init__(
        self,
        plan: RunPlan,
        *,
        streaming: bool,
        cancel: CancelState | None = None,
        path: tuple[str, ...] = (),
        run_id: str | None = None,
    ):
        self.plan = plan
        self.streaming = streaming
        self.cancel = cancel
        self.run_id = run_id or secrets.token_hex(8)
        self.path = (*path, plan.agent)
        self.detect_mode = plan.detection.mode  # may switch to drain mid-run (self-heal)
        self.step = 0
        self.result: RunResult | None = None
        self.state: RunState | None = None
        self._seq = 0
        self._usage = Usage()
        self._side: list[Event] = []  # events raised in callbacks (retries, nested agents), flushed in order
        self._warning: dict[str, str] | None = None  # the run's RunWarning, kept in its result's metadata
        self._answered_by: str | None = None  # the model the endpoint said answered (the result's metadata)

    def _ev(self, ev: Event) -> Event:
        self._seq += 1
        ev.run_id, ev.agent, ev.step, ev.seq = self.run_id, self.plan.agent, self.step, self._seq
        ev.path = self.path
        return ev

    def _on_client_event(self, ev: Event) -> None:
        self._side.append(ev)

    def _forward_nested(self, ev: Event) -> None:
        """Inner agents' events (agent-as-tool with emit_internal_events) keep their own stamps and path;
        a streaming tool's pieces (tool_output_delta) are stamped as this run's when flushed."""
        self._side.append(ev)

    def _flush(self) -> list[Event]:
        out = [e if e.run_id else self._ev(e) for e in self._side]
        self._side.clear()
        return out

    async def events(self, data: Any, resume: Resume | None = None) -> AsyncGenerator[Event, None]:
        """The run's events. With `resume`, the run goes on from saved messages and pending calls
        (interrupt.py) and `data` is not used."""
        plan = self.plan
        run_started()  # the collector's adjustment under many runs in flight (gc_load.py)
        try:
            yield self._ev(RunStart(input=data))
            ctx = AgentContext(instruction=plan.instruction, tools=list(plan.tools),
                               return_directly=set(plan.return_directly), input=data, agent=plan.agent,
                               run_id=self.run_id, deferred=list(plan.deferred_tools))
            for m in plan.middleware.before_agent:
                await m.before_agent(ctx)
            if resume is not None:
                messages = input_messages({"messages": resume.messages}) or []
                self.step = resume.step
            elif plan.gen_model_input is None:
                messages = build_messages(data, ctx.instruction, plan.preset, plan.system_hook)
            else:
                messages = await gen_messages(plan.gen_model_input, ctx.instruction, data)
            tools = settle_tool_search(ctx.tools, ctx.deferred, plan.deferred_tools)
            state = self.state = RunState(
                messages=messages,
                tool_specs=[t.spec() for t in tools],
                tools={t.name: t for t in tools},
                return_directly=ctx.return_directly,
                run_id=self.run_id,
                deferred={t.name: t for t in ctx.deferred},
            )
            async for ev in self._steps(state, resume):
                yield ev
        except _RunCancelled as e:
            await self._failed(e)
            yield self._cancelled()
        except asyncio.CancelledError as e:
            if self.cancel is None or not self.cancel.requested:
                await self._failed(e)
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            await self._failed(e)
            yield self._cancelled()
        except GeneratorExit as e:  # the caller stopped reading (broke out of agent.stream())
            await self._failed(e)
            raise
        except Exception as e:
            await self._failed(e)
            for ev in self._flush():
                yield ev
            yield self._ev(ErrorEvent(error=str(e), error_type=type(e).__name__))
            raise
        finally:
            run_ended()

    async def _failed(self, error: BaseException | None) -> None:
        for m in self.plan.middleware.on_agent_error:
            await m.on_agent_error(self.state, error)

    def _cancelled(self) -> Event:
        messages = repair_history(self.state.messages) if self.state else []
        mode = self.cancel.mode if self.cancel else CancelMode.IMMEDIATE
        self.result = RunResult(
            content="", messages=messages, usage=self._usage, steps=self.step, stop_reason="cancelled",
            metadata={"run_id": self.run_id, "agent": self.plan.agent},
        )
        return self._ev(Cancelled(mode=str(mode.name or mode).lower(), messages=messages))

    async def _steps(self, state: RunState, resume: Resume | None) -> AsyncIterator[Event]:
        plan, limits = self.plan, self.plan.limits
        mw = plan.middleware
        runner = ToolRunner(plan.call_tool, limits.max_tool_output, limits.parallel_tool_calls)
        usage = self._usage = Usage()
        cancel = self.cancel
        if resume is not None and resume.pending:  # finish the saved step first (nothing runs twice)
            async for ev in self._tool_step(state, runner, resume.pending, resume.completed, resume.answers):
                yield ev
            if self.result is not None:
                return
        while True:
            final_call = self.step >= limits.max_steps
            if final_call and limits.max_step_policy == "error":
                raise MaxStepsError(
                    f"agent {plan.agent!r} reached maxStep={limits.max_steps} without a final answer; "
                    "raise maxStep or set maxStepPolicy to 'answer'"
                )
            self.step += 1
            state.step = self.step
            for m in mw.before_model:
                await m.before_model(state)
            messages, specs = state.messages, state.tool_specs or None
            if final_call:
                messages, specs = [*messages, Message("user", MAX_STEPS_PROMPT)], None
            # A call that saw one of the loop's own nudges: an echo of it is never the answer (nudges.py).
            nudged = was_nudged(state.messages, final_call)
            guard = NudgeFilter() if nudged else None

            # -- the model call: route items into events ---------------------------------------
            router = StreamRouter(self.detect_mode, specs is not None, plan.detection.window)
            # keepThink false: <think> blocks in the text go out as reasoning, even split across chunks.
            think = None if plan.keep_think else ThinkSplitter()
            stream = plan.model(messages, specs, stream=self.streaming, on_event=self._on_client_event)
            response: ModelResponse | None = None
            first_text = True
            try:
                async for item in router.route(stream):
                    if self._side:
                        for ev in self._flush():
                            yield ev
                    if isinstance(item, TextChunk):
                        text = item.text if guard is None else guard.feed(item.text)
                        if not text:
                            continue
                        if think is None:
                            yield self._ev(TextDelta(text=text))
                        else:
                            for ev in self._text_events(think.feed(text)):
                                yield ev
                    elif isinstance(item, ReasoningChunk):
                        yield self._ev(ReasoningDelta(text=item.text))
                    else:  # the response, or Reported (the client's event went out just above)
                        if isinstance(item, ModelResponse):
                            response = item
                        continue
                    if first_text:
                        # A consumer in another task (AgentRun's, a server's) gets the answer's first text
                        # now: the deltas parsed from one read of the stream would all be produced, and
                        # the call ended, before it had a turn (time to first token).
                        first_text = False
                        await asyncio.sleep(0)
            finally:
                await stream.aclose()
            if rest := (guard.flush() if guard is not None else ""):
                pieces = [(False, rest)] if think is None else think.feed(rest)
                for ev in self._text_events(pieces):
                    yield ev
            if think is not None:
                for ev in self._text_events(think.flush()):
                    yield ev
            for ev in self._flush():
                yield ev
            assert response is not None, "model client ended a call without a response"
            usage.add(response.usage)
            self._answered_by = response.model or self._answered_by
            msg = response.message
            state.messages.append(msg)
            yield self._ev(ModelCallEnd(message=msg, usage=response.usage,
                                        finish_reason=response.finish_reason, endpoint=response.endpoint))
            for m in mw.after_model:
                await m.after_model(state)
            if state.messages and state.messages[-1].role == "assistant":
                msg = state.messages[-1]  # after_model may have rewritten the response

            if msg.tool_calls and router.released and not final_call:
                # Self-heal: text went out as an answer, then tool calls came. The message is complete,
                # so run its tool calls now (nothing re-run, nothing duplicated) and drain from now on.
                log.warning("agent %s: text routed as plain text before tool calls; executing the late "
                            "tool calls and switching streamToolCallCheck to drain", plan.agent)
                self.detect_mode = DRAIN
                if plan.on_self_heal is not None:
                    plan.on_self_heal()
                yield self._ev(Preamble(text="".join(router.released)))
            if not msg.tool_calls or final_call:  # a completed answer is kept, even if cancel came
                stop = "max_steps" if final_call else _stop_reason(response.finish_reason)
                if final_call:  # a caller tells this answer from a normal one (decision 7, spec-conformance)
                    warning = RunWarning(code="max_steps", message=max_steps_warning(limits.max_steps))
                    self._warning = {"code": warning.code, "message": warning.message}
                    yield self._ev(warning)
                content = settle_answer(msg.text, state.messages, plan.agent) if nudged else msg.text
                if content != msg.text and state.messages and state.messages[-1] is msg:
                    # The history keeps the answer, not the echo.
                    state.messages[-1] = Message("assistant", content, reasoning=msg.reasoning)
                async for ev in self._finish(state, msg, content, stop, usage):
                    yield ev
                return
            if cancel is not None and cancel.at(CancelMode.AFTER_MODEL):
                raise _RunCancelled

            await self._checkpoint("after_model", state, pending=msg.tool_calls)
            if cancel is not None and cancel.at(CancelMode.AFTER_MODEL):
                raise _RunCancelled
            async for ev in self._tool_step(state, runner, msg.tool_calls):
                yield ev
            if self.result is not None:  # ReturnDirectly or an interrupt ended the run
                return
            if cancel is not None and cancel.at(CancelMode.AFTER_TOOLS):
                raise _RunCancelled

    async def _tool_step(self, state: RunState, runner: ToolRunner, calls: list[ToolCall],
                         completed: dict[str, ToolOutput] | None = None,
                         answers: dict[str, Any] | None = None) -> AsyncIterator[Event]:
        """Run one step's tool calls (those without a `completed` result), append the results in call
        order, then checkpoint; ends the run on ReturnDirectly or when a tool asks for input."""
        plan = self.plan
        completed = dict(completed or {})
        todo = [c for c in calls if c.id not in completed]
        for call in todo:
            yield self._ev(ToolCallEvent(call=call))
        history = state.messages

        def make_ctx(call: ToolCall, history: list[Message] = history) -> ToolContext:
            ctx = ToolContext(call.id, self.run_id, plan.agent, self.path, history, self._forward_nested,
                              step=self.step)
            if answers and call.id in answers:
                ctx.state[ANSWER] = answers[call.id]  # a resumed call: the answer it waited for
            return ctx

        on_done = None
        if plan.checkpoint is not None and len(todo) > 1:
            # Several calls: checkpoint as each one finishes, so a crash mid-step loses none of them.
            lock = asyncio.Lock()

            async def on_done(o: CallOutcome) -> None:
                if not isinstance(o.output.data, ToolInterrupt):
                    async with lock:
                        completed[o.call.id] = o.output
                        await self._checkpoint("tool_result", state, calls, completed)

        work = runner.run(todo, state.tools, make_ctx, on_done)
        if any(_live(state.tools.get(c.name)) for c in todo):
            outcomes = None
            async for item in self._run_with_forwarding(work):
                if isinstance(item, Event):
                    yield item
                else:
                    outcomes = item
            assert outcomes is not None
        else:
            outcomes = await work
        waiting = [o for o in outcomes if isinstance(o.output.data, ToolInterrupt)]
        done = [o for o in outcomes if o not in waiting]
        completed.update((o.call.id, o.output) for o in done)
        answered = {m.tool_call_id for m in state.messages if m.role == "tool"}
        for call in calls:  # in call order; a waiting call gets its result on resume
            out = completed.get(call.id)
            if out is None or call.id in answered:
                continue
            state.messages.append(Message("tool", out.content, tool_call_id=call.id))
            if isinstance(out.data, LoadTools):  # tool_search found deferred tools: load them
                state.load_tools(out.data.names)
        for o in done:
            yield self._ev(ToolResultEvent(call_id=o.call.id, name=o.call.name, content=o.output.content,
                                           is_error=o.output.is_error, duration_ms=o.duration_ms))
        yield self._ev(StepEnd())
        if waiting:
            async for ev in self._interrupt(state, [o.call for o in waiting], completed,
                                            [o.output.data for o in waiting]):
                yield ev
            return
        await self._checkpoint("after_tools", state, completed=completed)
        # ReturnDirectly: the first listed tool in call order that ran without error ends the run.
        direct = next((o for o in outcomes if o.call.name in state.return_directly and o.executed
                       and not o.output.is_error), None)
        if direct is not None:
            async for ev in self._finish(state, None, direct.output.content, "return_directly", self._usage):
                yield ev

    async def _interrupt(self, state: RunState, pending: list[ToolCall], completed: dict[str, ToolOutput],
                         asks: list[ToolInterrupt]) -> AsyncIterator[Event]:
        questions = [Question(c.id, a.kind, a.question, c.name, c.arguments, a.schema, a.data)
                     for c, a in zip(pending, asks, strict=True)]
        await self._checkpoint("interrupted", state, pending, completed, questions)
        interruption = Interruption(questions, pending)
        self.result = RunResult(content="", messages=state.messages, usage=self._usage, steps=self.step,
                                stop_reason="interrupted", interruption=interruption,
                                metadata={"run_id": self.run_id, "agent": self.plan.agent})
        await self._failed(None)  # ends without an answer: tracing closes the run's span
        yield self._ev(Interrupted(questions=[_question_dict(q) for q in questions], pending=pending))

    async def _checkpoint(self, point: str, state: RunState, pending: list[ToolCall] | None = None,
                          completed: dict[str, ToolOutput] | None = None,
                          questions: list[Question] | None = None) -> None:
        if self.plan.checkpoint is not None:
            await self.plan.checkpoint(Checkpoint(self.run_id, self.plan.agent, self.step, point,
                                                  state.messages, list(pending or ()), dict(completed or {}),
                                                  list(questions or ())))

    def _text_events(self, pieces: list[tuple[bool, str]]) -> list[Event]:
        return [self._ev(ReasoningDelta(text=t) if is_think else TextDelta(text=t)) for is_think, t in pieces]

    async def _run_with_forwarding(self, work: Any) -> AsyncIterator[Any]:
        """Await `work` while yielding events that nested agents forward in the meantime."""
        task = asyncio.ensure_future(work)
        wake = asyncio.Event()
        self._side = _WakingList(self._side, wake)
        try:
            while not task.done():
                waiter = asyncio.ensure_future(wake.wait())
                await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                wake.clear()
                for ev in self._flush():
                    yield ev
        finally:
            self._side = list(self._side)
            if not task.done():
                task.cancel()
        for ev in self._flush():
            yield ev
        yield task.result()

    async def _finish(self, state: RunState, msg: Message | None, content: str, stop: str,
                      usage: Usage) -> AsyncIterator[Event]:
        keep_think = self.plan.keep_think
        reasoning = msg.reasoning if msg is not None else None
        if not keep_think and "<think>" in content:
            content, thoughts = split_think(content)
            reasoning = (reasoning or "") + thoughts
        result = self.result = RunResult(
            content=content,
            messages=state.messages,
            usage=usage,
            steps=self.step,
            stop_reason=stop,
            reasoning=reasoning if keep_think else None,
            metadata={"run_id": self.run_id, "agent": self.plan.agent},
        )
        if self._warning is not None:
            result.metadata["warning"] = self._warning
        if self._answered_by:  # e.g. the embedded model's name, for a document that names no model
            result.metadata["model"] = self._answered_by
        if self.plan.output_key:  # OutputKey: the answer goes into the run's session values
            values = self.plan.session_values
            if not isinstance(values, MutableMapping):
                values = dict(values or {})
            values[self.plan.output_key] = content
            result.session_values = values
        for m in self.plan.middleware.after_agent:
            await m.after_agent(state, result)
        yield self._ev(Final(content=content, usage=usage, stop_reason=stop, reasoning=result.reasoning))


def _question_dict(q: Question) -> dict[str, Any]:
    return {"id": q.id, "kind": q.kind, "question": q.question, "tool": q.tool, "arguments": q.arguments,
            "schema": q.schema}


def _live(tool: Any) -> bool:
    """Tools whose events must reach the stream while they run: nested agents, streaming tools."""
    return bool(getattr(tool, "emits_events", False)) or is_streaming(tool)


def _stop_reason(finish_reason: str | None) -> str:
    return finish_reason if finish_reason in ("length", "content_filter") else "stop"
