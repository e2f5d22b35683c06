"""An `aiagent` node inside a durable turn: the node's decisions in workflow code, each I/O an activity.

The same steps as flows.agent_node.run_agent_node, in process:

    answer to a pending question?  take it (asking.take_answer); ask the next one, or resume the stored run
    start activity       prompts, memory window and summary, long-term recall, the agent's tool specs
    ReactLoop            chainreact's own loop in the workflow (as the agent workflow runs it): every model
                         call and every tool call an activity; the tool budget's before_model here
    interrupted?         suspend activity (the run saved in the store), the question to the user
    output               parsed and validated here; asked again with the violations (a new loop run)
    finish activity      memory appended and long-term memories written

A worker lost in the middle of the node runs again only the call that was in flight: every completed
model call and tool call is in the history.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, Protocol

from temporalio import workflow
from temporalio.exceptions import ActivityError

from ..agent.detection import DRAIN
from ..agent.interrupt import ANSWER, Checkpoint, Resume
from ..agent.loop import ReactLoop
from ..agent.middleware import MiddlewareChain
from ..agent.plan import Detection, Limits, RunPlan
from ..agent.result import RunResult
from ..errors import ModelError
from ..flows.agent_node import RETRY_PROMPT, AgentOutcome, answer_text, parse_output
from ..flows.agent_node import _ask as ask_events
from ..flows.asking import Pending, prompts_for, take_answer
from ..flows.errors import FlowError, OutputValidationError
from ..flows.events import FlowEvent, from_agent_event
from ..flows.model import AIAgentNode
from ..flows.tooling import ToolBudget
from ..tools.base import Tool, ToolContext, ToolOutput
from ..types import Message, StreamItem, ToolCall
from .codec import (
    JSON,
    call_from_dict,
    call_to_dict,
    client_event_from_dict,
    messages_from_list,
    messages_to_list,
    output_from_dict,
    response_from_dict,
)
from .options import DurableOptions, plain_activity_options, tool_activity_options
from .workflow import RemoteTool, _cause, _reraise_cancel

_LIVE = ("text_delta", "reasoning_delta")  # streamed by the model activity itself


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


class NodeRunner:
    def __init__(self, wf: Turn, node: AIAgentNode, env: dict[str, Any], pending: Pending | None,
                 agent_events: bool, session_key: str):
        self.wf = wf
        self.node = node
        self.env = env
        self.pending = pending
        self.agent_events = agent_events
        self.session_key = session_key
        self.plain_env = {k: v for k, v in env.items() if not callable(v)}
        self.checkpoint: Checkpoint | None = None
        self.loop: ReactLoop | None = None
        self.budget = ToolBudget(node.maxToolExecutions)
        self.agent = node.name

    def _req(self, **kw: Any) -> JSON:
        beat = max(0.5, self.wf.opts.heartbeat_timeout / 4)
        return {**self.wf.base(), "node": self.node.name, "heartbeat": beat, **kw}

    async def _activity(self, name: str, req: JSON, options: dict[str, Any]) -> Any:
        return await workflow.execute_activity(f"chainreact.flow.node.{name}", req, **options)

    async def run(self) -> AsyncIterator[FlowEvent | AgentOutcome]:
        node, env = self.node, self.env
        schema = node.output.schema_
        long = tool_activity_options(None, self.wf.opts)
        resume: Resume | None = None
        version = 0
        resumed: str | None = None
        if self.pending is not None:
            pending = self.pending
            problems = take_answer(pending, str(env.get("userInput") or ""))
            if problems or not pending.complete:
                for ev in ask_events(node.name, pending, problems):
                    yield ev
                yield AgentOutcome(asked=pending)
                return
            env["userInput"] = self.plain_env["userInput"] = pending.user_input
            user_text, key, attempts = pending.user_text, pending.key, pending.attempts
            self.budget.used = pending.tools_used
            start = await self._activity("start", self._req(env=self.plain_env, resume={
                "run_id": pending.run_id, "answers": pending.answers}), long)
            r = start["resume"]
            done_calls = {k: ToolOutput(v["content"], bool(v["is_error"])) for k, v in r["completed"].items()}
            resume = Resume(messages_from_list(r["messages"]), int(r["step"]),
                            [call_from_dict(c) for c in r["pending"]], done_calls, dict(r["answers"] or {}),
                            pending.run_id)
            version, resumed = int(start["version"]), pending.run_id
            memories: list[str] = []
            data: Any = None
        else:
            start = await self._activity("start", self._req(env=self.plain_env), long)
            user_text, key, memories = start["user_text"], start["key"], list(start["memories"])
            data = [*messages_from_list(start["history"]), Message("user", user_text)]
            attempts = 1
        plan = self._plan(start)
        self.agent = plan.agent
        done: JSON | None = None  # the resumed run, ended: marked done in the store (as in process)
        while True:
            async for ev in self._drive(plan, data, resume):
                yield ev
            result = self.loop.result if self.loop is not None else None
            assert result is not None
            if result.stop_reason == "interrupted":
                if not node.askUserForToolsInput or result.interruption is None or self.checkpoint is None:
                    raise FlowError(f"node {node.name!r}: a tool stopped to ask the user, but "
                                    "askUserForToolsInput is off")
                asked = await self._suspend(result, env, user_text, key, attempts, version if resume else 0)
                for ev in ask_events(node.name, asked):
                    yield ev
                yield AgentOutcome(asked=asked)
                return
            if resume is not None and resumed is not None:
                done = {"run_id": resumed, "steps": result.steps, "agent": plan.agent,
                        "messages": messages_to_list(result.messages), "session": self.session_key,
                        "version": version, "extra": {"flowNode": node.name, "content": result.content,
                                                      "stop_reason": result.stop_reason}}
            output, errors = parse_output(result.content, schema)
            if not errors:
                break
            if attempts > node.output.maxRetries:
                raise OutputValidationError(node.name, errors, attempts)
            attempts += 1
            retry = Message("user", RETRY_PROMPT.format(errors="\n".join(f"- {e}" for e in errors)))
            data, resume = [*result.messages, retry], None
        text = answer_text(output, schema)
        fin = await self._activity("finish", self._req(
            env=self.plain_env, key=key, user_text=user_text, content=result.content, text=text,
            memories=memories, done=done), long)
        if fin.get("written"):
            lt = node.memory.longTermMemory if node.memory is not None else None
            kind = lt.memoryType if lt else ""
            yield FlowEvent("memory", node.name, {"type": kind, "written": fin["written"]})
        yield AgentOutcome(output, text, attempts)

    async def _suspend(self, result: RunResult, env: dict[str, Any], user_text: str, key: str, attempts: int,
                       version: int) -> Pending:
        from ..state.runs import snapshot_of

        cp = self.checkpoint
        assert cp is not None and result.interruption is not None
        snap = snapshot_of(cp, session=self.session_key, extra={"flowNode": self.node.name})
        await self._activity("suspend", self._req(snapshot=snap.to_dict(), version=version),
                             plain_activity_options(60.0, self.wf.opts))
        return Pending(self.node.name, cp.run_id, str(env.get("userInput") or ""), user_text, key, attempts,
                       self.budget.used, prompts_for(result.interruption.questions))

    # -- one run of the node's agent: the loop, here -----------------------------------------------

    def _plan(self, start: JSON) -> RunPlan:
        return RunPlan(
            agent=start["agent"], instruction=start["system"], model=self._model_io, call_tool=self._tool_io,
            tools=tuple(NodeTool(t) for t in start["tools"]),
            return_directly=frozenset(start.get("return_directly") or ()),
            middleware=MiddlewareChain([self.budget]),  # its before_model: tools off once the budget is spent
            limits=Limits(**start["limits"]), detection=Detection(DRAIN),
            keep_think=bool(start.get("keep_think")), checkpoint=self._checkpoint)

    async def _checkpoint(self, cp: Checkpoint) -> None:
        self.checkpoint = cp

    async def _drive(self, plan: RunPlan, data: Any, resume: Resume | None) -> AsyncIterator[FlowEvent]:
        run_id = resume.run_id if resume is not None and resume.run_id else \
            f"{self.node.name}-{workflow.uuid4().hex[:16]}"
        loop = self.loop = ReactLoop(plan, streaming=False, run_id=run_id)
        async for ev in loop.events(data, resume):
            if self.agent_events:
                if ev.type in _LIVE:
                    continue  # the model activity streamed it as it came
                yield FlowEvent("agent", self.node.name, {"agent_event": ev})
            else:
                fe = from_agent_event(ev, self.node.name)
                if fe is not None:
                    yield fe

    def _base(self) -> JSON:
        loop = self.loop
        return self._req(env=self.plain_env, run_id=loop.run_id if loop else "", agent=self.agent,
                         step=loop.step if loop else 0, path=list(loop.path) if loop else [self.agent])

    def _model_io(self, messages: list[Message], tools: list[JSON] | None, *, stream: bool,
                  on_event: Callable[[Any], None]) -> AsyncGenerator[StreamItem, None]:
        async def call() -> AsyncGenerator[StreamItem, None]:
            req = {**self._base(), "messages": messages_to_list(messages), "tools": tools,
                   "stream": self.agent_events}
            try:
                res = await self._activity("model", req, tool_activity_options(None, self.wf.opts))
            except ActivityError as e:  # the cause's message, without Temporal's wrapper chain
                _reraise_cancel(e)
                raise ModelError(_cause(e)) from None
            for d in res.get("events") or ():
                ev = client_event_from_dict(d)
                if ev is not None:
                    on_event(ev)
            yield response_from_dict(res["response"])

        return call()

    async def _tool_io(self, call: ToolCall, tool: Tool, args: dict[str, Any],
                       ctx: ToolContext) -> ToolOutput:
        req = {**self._base(), "call": call_to_dict(call), "args": args, "path": list(ctx.path),
               "tools_used": self.budget.used, "agent_events": self.agent_events}
        if ANSWER in ctx.state:
            req["answer"] = ctx.state[ANSWER]
        if getattr(tool, "full_history", False):
            req["history"] = messages_to_list(ctx.messages)
        try:
            res = await self._activity("tool", req, tool_activity_options(tool.timeout, self.wf.opts))
        except ActivityError as e:  # attempts exhausted (lost workers, timeouts): a result, as in process
            _reraise_cancel(e)
            return ToolOutput(f"Error: tool {call.name} failed: {_cause(e)}", True)
        self.budget.used = int(res.get("tools_used") or self.budget.used)
        return output_from_dict(res)
