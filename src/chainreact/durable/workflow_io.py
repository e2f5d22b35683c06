"""The workflow's side of an agent run's I/O: the RunPlan's two I/O functions as activities.

    io = ActivityIO(model_activity=..., tool_activity=..., base=..., ...)
    plan = RunPlan(..., model=io.model, call_tool=io.call_tool, tools=tuple(RemoteTool(s) for s in specs))

An agent workflow's run and a flow node's run in a turn workflow both make their loop's plan so: the loop
(chainreact's own ReactLoop) decides in workflow code, and each model call and each tool call is one
activity (worker_io runs it in the worker). What differs between the two is named here: the activities,
the request fields each adds, the model call's options.

- A model activity that failed (its attempts spent, or an error it does not retry) is the loop's
  ModelError with the activity's own message.
- A tool activity that failed (attempts spent on lost workers or timeouts) is an error result for the
  model, `Error: tool X failed: ...`, as any tool error in process; the loop goes on.
- An activity cancelled because the run was is a cancellation of the loop.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from ..agent.interrupt import ANSWER
from ..agent.special_tools import ToolSearchTool
from ..errors import ModelError
from ..tools.base import Tool, ToolContext, ToolOutput
from ..types import Message, StreamItem, ToolCall
from .codec import (
    JSON,
    call_to_dict,
    client_event_from_dict,
    messages_to_list,
    output_from_dict,
    response_from_dict,
)
from .failures import cause_text, reraise_cancel
from .options import DurableOptions, tool_activity_options

LIVE = ("text_delta", "reasoning_delta")  # the model activity streams these itself, as they arrive


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


def failed_tool(name: str, e: ActivityError) -> ToolOutput:
    """A tool activity that failed for good (its attempts spent): an error result, as in process."""
    return ToolOutput(f"Error: tool {name} failed: {cause_text(e)}", True)


class ActivityIO:
    """A run's model and tool calls as activities (module doc).

    `base()` gives the fields every activity of the run gets (ids, step, path, heartbeat, events waiting
    to be published); `model_fields` (a dict, or a function giving one) are added to each model call's
    request, `tool_fields()` to each tool call's; `on_tool` sees each tool activity's result (a flow node's
    tool budget comes back in it)."""

    def __init__(self, *, model_activity: str, tool_activity: str, base: Callable[[], JSON],
                 opts: DurableOptions, model_options: dict[str, Any],
                 model_fields: JSON | Callable[[], JSON] | None = None,
                 tool_fields: Callable[[], JSON] | None = None,
                 on_tool: Callable[[JSON], None] | None = None):
        self.model_activity = model_activity
        self.tool_activity = tool_activity
        self.base = base
        self.opts = opts
        self.model_options = model_options
        self.model_fields = model_fields if callable(model_fields) else dict(model_fields or {})
        self.tool_fields = tool_fields
        self.on_tool = on_tool

    async def model(self, messages: list[Message], tools: list[JSON] | None, *, stream: bool,
                    on_event: Callable[[Any], None]) -> AsyncGenerator[StreamItem, None]:
        """RunPlan.model: the whole response in one item (the loop decides on it whole: `drain` detection;
        the activity streamed the deltas to the log)."""
        fields = self.model_fields() if callable(self.model_fields) else self.model_fields
        req = {**self.base(), "messages": messages_to_list(messages), "tools": tools, **fields}
        try:
            res = await workflow.execute_activity(self.model_activity, req, **self.model_options)
        except ActivityError as e:  # the cause's message, without Temporal's wrapper chain
            reraise_cancel(e)
            raise ModelError(cause_text(e)) from None
        for d in res.get("events") or ():
            ev = client_event_from_dict(d)
            if ev is not None:
                on_event(ev)
        yield response_from_dict(res["response"])

    async def call_tool(self, call: ToolCall, tool: Tool, args: dict[str, Any],
                        ctx: ToolContext) -> ToolOutput:
        """RunPlan.call_tool: the tool runs in a worker (worker_io.tool_call)."""
        req = {**self.base(), "call": call_to_dict(call), "args": args, "path": list(ctx.path),
               **(self.tool_fields() if self.tool_fields is not None else {})}
        if ANSWER in ctx.state:
            req["answer"] = ctx.state[ANSWER]
        if getattr(tool, "full_history", False):
            req["history"] = messages_to_list(ctx.messages)
        if isinstance(tool, ToolSearchTool):  # the run's own (before_agent changed the deferred tools)
            req["search"] = {"tools": [t.name for t in tool.deferred], "limit": tool.limit}
        try:
            res = await workflow.execute_activity(self.tool_activity, req,
                                                  **tool_activity_options(tool.timeout, self.opts))
        except ActivityError as e:  # attempts exhausted (lost workers, timeouts): a result, as in process
            reraise_cancel(e)
            return failed_tool(call.name, e)
        if self.on_tool is not None:
            self.on_tool(res)
        return output_from_dict(res)
