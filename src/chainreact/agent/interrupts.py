"""Tools that stop a run to ask: the builtin `ask_user` (tools/builtin/ask_user.py, re-exported here) and
`requireApproval` around any tool.

Both are plain tools over the loop's interrupt protocol (interrupt.py): on first call they raise
`ToolInterrupt`, the run stops `interrupted` with the question, and on resume the same call runs again
with its answer in `ctx.state["answer"]`. The loop knows nothing about either.

- `ask_user(question, schema?)`: the answer is the tool's result (a string as is, anything else as JSON).
  `schema` (from the model's call, else the descriptor's `config.schema`) is the JSON Schema the answer
  must match; a store checks it before a resume (state/checkpoint.py `check_answers`).
- `require_approval(tool)` (a descriptor's `"requireApproval": true`): the call waits for a decision:
  approve (`true`, `"approve"`, `{"approve": true}`), reject with a reason (`false`, `"reject"`,
  `{"approve": false, "reason": "..."}`: the model gets an error result naming the reason), or edit the
  arguments (`{"arguments": {...}}`: checked against the tool's schema, then run with them).
"""

from __future__ import annotations

from typing import Any

import orjson

from ..errors import ChainreactError
from ..tools.base import Tool, ToolContext, ToolOutput
from ..tools.builtin.ask_user import ASK_USER_PARAMETERS, AskUserTool
from ..tools.builtin.ask_user import create as create_ask_user
from .interrupt import ANSWER, ToolInterrupt


class AnswerError(ChainreactError):
    """An answer that does not fit the question it answers (nothing was run)."""


def _schema_problems(value: Any, schema: Any) -> list[str]:
    from ..tools.jsonschema_lite import validate

    return list(validate(value, schema))


def approval_decision(answer: Any, where: str = "approval") -> dict[str, Any]:
    """An approval answer normalised to `{"approve": bool, "reason": str | None, "arguments": dict | None}`
    (the same shapes chainreact.state's check_answers accepts), or AnswerError naming what is wrong."""
    if answer is True or answer == "approve":
        return {"approve": True, "reason": None, "arguments": None}
    if answer is False or answer == "reject":
        return {"approve": False, "reason": None, "arguments": None}
    shape = ('expected true/false, "approve"/"reject", {"approve": true}, {"approve": false, "reason": '
             '"..."} or {"arguments": {...}}')
    if not isinstance(answer, dict) or not answer or not set(answer) <= {"approve", "reason", "arguments"}:
        raise AnswerError(f"{where}: {shape}, got {answer!r}")
    args = answer.get("arguments")
    approve = answer.get("approve", args is not None)
    reason = answer.get("reason")
    if (not isinstance(approve, bool) or (reason is not None and not isinstance(reason, str))
            or (args is not None and (not isinstance(args, dict) or approve is False))):
        raise AnswerError(f"{where}: {shape}, got {answer!r}")
    return {"approve": approve, "reason": reason, "arguments": args}


def check_edited_arguments(tool: Tool, arguments: dict[str, Any], where: str) -> None:
    """Edited arguments must match the tool's parameter schema (AnswerError naming the problems)."""
    params = tool.parameters
    if params and (params.get("properties") or params.get("required")):
        problems = _schema_problems(arguments, params)
        if problems:
            raise AnswerError(f"{where}: the edited arguments do not match {tool.name}'s parameters: "
                              f"{'; '.join(problems[:3])}")


class ApprovalTool(Tool):
    """`inner` behind a human decision: each call stops the run until it is approved, rejected or edited."""

    def __init__(self, inner: Tool):
        self.inner = inner
        self.name = inner.name
        self.description = inner.description
        self.parameters = inner.parameters
        self.timeout = inner.timeout
        self.emits_events = bool(getattr(inner, "emits_events", False))

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        if ANSWER not in ctx.state:
            shown = orjson.dumps(args).decode()
            raise ToolInterrupt(f"Allow {self.name} with {shown}?", kind="approval",
                                data={"tool": self.name, "arguments": args})
        try:
            decision = approval_decision(ctx.state[ANSWER], f"approval of {self.name}")
            if decision["arguments"] is not None:
                check_edited_arguments(self.inner, decision["arguments"], f"approval of {self.name}")
        except AnswerError as e:
            return ToolOutput(f"Error: {e}", True)  # checked before a store resumes; here for a hand Resume
        if not decision["approve"]:
            reason = f": {decision['reason']}" if decision["reason"] else ""
            return ToolOutput(f"Error: the user rejected this call to {self.name}{reason}. Do not retry it "
                              "unchanged.", True)
        if decision["arguments"] is None:
            return await self.inner.run(args, ctx)
        out = await self.inner.run(decision["arguments"], ctx)
        # The model asked for other arguments: say what actually ran.
        note = f"[the user edited the arguments to {orjson.dumps(decision['arguments']).decode()}]\n"
        if isinstance(out, ToolOutput):
            return ToolOutput(note + str(out.content), out.is_error, out.data)
        return note + str(out)

    async def aclose(self) -> None:
        await self.inner.aclose()


def require_approval(tool: Any) -> Tool:
    """`tool` (a Tool or a function) wrapped so each call waits for approval (see the module doc)."""
    from ..tools.base import as_tool

    t = as_tool(tool)
    return t if isinstance(t, ApprovalTool) else ApprovalTool(t)


__all__ = ["ASK_USER_PARAMETERS", "AnswerError", "ApprovalTool", "AskUserTool", "approval_decision",
           "check_edited_arguments", "create_ask_user", "require_approval"]
