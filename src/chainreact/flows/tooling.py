"""An `aiagent` node's tools at run time: the `maxToolExecutions` budget and `askUserForToolsInput`.

Both are agent middleware (chainreact.agent.Middleware), so the agent loop knows nothing about flows:

- `ToolBudget` counts tool *executions* in one node run (a call refused before it runs, for bad
  arguments or the doom-loop guard, does not count; a call that stops to ask the user counts once,
  when it runs with the answer). When the budget is spent, every later model call of the run is made
  without tools and with a note asking for the answer, and a call the model makes anyway is refused
  with an error result instead of running.
- `AskForTools` (with `askUserForToolsInput: true`) gives the model the `ask_user` tool and wraps the
  node's tools so that a call missing a required argument stops the run with a question for the user
  (kind `ask_user`, data `{"tool", "missing", "fields"}`) instead of an error result; on resume the
  answer fills the missing arguments and the tool runs.
"""

from __future__ import annotations

from typing import Any

from ..agent.interrupt import ANSWER, ToolInterrupt
from ..agent.middleware import AgentContext, Middleware, RunState, ToolCallInfo, ToolFn
from ..tools.base import Tool, ToolContext, ToolOutput
from ..types import Message

BUDGET_PROMPT = ("The tool budget of this task is spent: do not call tools any more. Answer now with what "
                 "the tool results above tell you.")


class ToolBudget(Middleware):
    """At most `limit` tool executions in one node run; `used` starts above 0 for a resumed run. With
    `per_run`, the count starts again with each run of the agent (a collaborator runs once per task)."""

    def __init__(self, limit: int, used: int = 0, *, per_run: bool = False):
        self.limit = limit
        self.used = used
        self.per_run = per_run

    async def before_agent(self, ctx: AgentContext) -> None:
        if self.per_run:
            self.used = 0

    @property
    def spent(self) -> bool:
        return self.used >= self.limit

    async def before_model(self, state: RunState) -> None:
        if self.spent and state.tool_specs:
            state.tool_specs = []  # the model call goes out without tools
            state.messages.append(Message("user", BUDGET_PROMPT))

    def wrap_tool_call(self, call: ToolFn, info: ToolCallInfo) -> ToolFn:
        async def counted(args: dict[str, Any]) -> ToolOutput:
            if self.spent:
                return ToolOutput(f"Error: {info.name} was not run: the tool budget of this task "
                                  f"(maxToolExecutions={self.limit}) is spent. Answer without tools.", True)
            self.used += 1  # reserved before the await: calls run one at a time, but never over-spend
            try:
                return await call(args)
            except ToolInterrupt:
                self.used -= 1  # it asks first; the execution that counts is the one with the answer
                raise

        return counted


def missing_fields(args: dict[str, Any], required: list[str]) -> list[str]:
    return [r for r in required if args.get(r) is None]


class AskForMissing(Tool):
    """`inner` whose required arguments, when the model leaves them out, are asked of the user.

    The loop checks arguments against `parameters` before a call runs, and a call missing a required
    one would never reach the tool; so `parameters` here is the schema without its top-level
    `required`, while the model still sees the full schema (`spec()`), and the full schema is checked
    once the answers are in."""

    def __init__(self, inner: Tool):
        self.inner = inner
        self.name = inner.name
        self.description = inner.description
        self.timeout = inner.timeout
        self.emits_events = bool(getattr(inner, "emits_events", False))
        self.full = dict(inner.parameters or {})
        self.required = [r for r in self.full.get("required") or [] if isinstance(r, str)]
        self.parameters = {k: v for k, v in self.full.items() if k != "required"}

    def spec(self) -> dict[str, Any]:
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.full}}

    def _question(self, missing: list[str]) -> ToolInterrupt:
        props = self.full.get("properties") or {}
        fields = {m: dict(props.get(m) or {}) for m in missing}
        names = ", ".join(missing)
        question = f"To use {self.name} I need: {names}."
        schema = {"type": "object", "properties": fields, "required": missing}
        return ToolInterrupt(question, kind="ask_user", schema=schema,
                             data={"tool": self.name, "missing": missing, "fields": fields})

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        from ..tools.jsonschema_lite import validate

        missing = missing_fields(args, self.required)
        if not missing:
            return await self.inner.run(args, ctx)
        if ANSWER not in ctx.state:
            raise self._question(missing)
        answer = ctx.state[ANSWER]
        given = answer if isinstance(answer, dict) else {missing[0]: answer} if len(missing) == 1 else {}
        args = {**args, **{k: given[k] for k in missing if k in given}}
        problems = validate(args, self.full)
        if problems:
            return ToolOutput(f"Error: invalid arguments for {self.name} after asking the user: "
                              f"{'; '.join(problems[:3])}", True)
        out = await self.inner.run(args, ctx)
        # The model's call lacked these: say which values actually ran.
        note = "[the user gave " + ", ".join(f"{k}={args[k]!r}" for k in missing) + "]\n"
        if isinstance(out, ToolOutput):
            return ToolOutput(note + str(out.content), out.is_error, out.data)
        return note + str(out)

    async def aclose(self) -> None:
        await self.inner.aclose()


class AskForTools(Middleware):
    """`askUserForToolsInput`: `ask_user` added, the node's tools wrapped in AskForMissing."""

    async def before_agent(self, ctx: AgentContext) -> None:
        from ..agent.interrupts import AskUserTool
        from ..agent.streaming import is_streaming

        tools: list[Tool] = []
        for t in ctx.tools:
            wrap = not isinstance(t, AskForMissing) and not is_streaming(t) and \
                any(isinstance(r, str) for r in (t.parameters or {}).get("required") or [])
            tools.append(AskForMissing(t) if wrap else t)
        if not any(t.name == "ask_user" for t in tools):
            tools.append(AskUserTool())
        ctx.tools = tools


__all__ = ["BUDGET_PROMPT", "AskForMissing", "AskForTools", "ToolBudget", "missing_fields"]
