"""An agent as a tool of another agent.

The default input is `{"request": string}`; a custom JSON Schema can replace it (the arguments then reach
the inner agent as compact JSON). With `full_history`, the caller's conversation is passed along,
rewritten as context (the inner agent did not make those tool calls, so they become plain text rather
than tool messages it would have to answer). The result is the inner agent's final text.
With `emit_internal_events`, the inner run streams and its events appear live in the caller's stream,
each carrying its path (outer agent first).
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import orjson

from ..tools.base import Tool, ToolContext, ToolOutput
from ..types import Message
from .loop import ReactLoop
from .plan import RunPlan


class Plannable(Protocol):
    """What an agent-as-tool needs from the agent it wraps (the Agent implements it)."""

    name: str
    description: str

    async def plan(self) -> RunPlan: ...

    async def aclose(self) -> None: ...

DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"request": {"type": "string", "description": "What you want this agent to do."}},
    "required": ["request"],
}


def _tool_name(name: str) -> str:
    # OpenAI tool names: ^[a-zA-Z0-9_-]{1,64}$
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "agent"


def history_as_context(messages: list[Message]) -> str:
    """The caller's conversation as readable context lines (system prompt and pending call excluded)."""
    lines: list[str] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            lines.append(f"[tool result {m.tool_call_id}]: {m.text}")
            continue
        if m.text:
            lines.append(f"[{m.role}]: {m.text}")
        for tc in m.tool_calls or ():
            lines.append(f"[{m.role} called {tc.name}]: {tc.arguments}")
    return "\n".join(lines)


class AgentTool(Tool):
    def __init__(self, agent: Plannable, *, name: str | None = None, description: str | None = None,
                 input_schema: dict[str, Any] | None = None, full_history: bool = False,
                 emit_internal_events: bool = False, timeout: float | None = None):
        self.agent = agent
        self.name = _tool_name(name or agent.name)
        self.description = description or agent.description or f"Delegate a task to the {agent.name} agent."
        self.parameters = input_schema or DEFAULT_SCHEMA
        self.custom_input = input_schema is not None
        self.full_history = full_history
        self.emits_events = emit_internal_events
        self.timeout = timeout

    def _input(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        request = orjson.dumps(args).decode() if self.custom_input else str(args.get("request", ""))
        if not self.full_history:
            return request
        # The last assistant message holds this very call: leave it out of the context.
        history = ctx.messages[:-1] if ctx.messages and ctx.messages[-1].role == "assistant" else ctx.messages
        context = history_as_context(history)
        if not context:
            return request
        return {"messages": [
            {"role": "user", "content": f"Context from the conversation so far:\n{context}"},
            {"role": "user", "content": request},
        ]}

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        data = self._input(args, ctx)
        live = self.emits_events and ctx.emit is not None
        loop = ReactLoop(await self.agent.plan(), streaming=live, path=ctx.path)
        async for ev in loop.events(data):
            if live:
                ctx.emit(ev)  # type: ignore[misc]
        result = loop.result
        assert result is not None
        if result.interruption is not None:
            # The inner run stopped to ask something. Its progress cannot be resumed through this call
            # yet, so say so plainly instead of returning an empty answer as if it had finished.
            asks = "; ".join(q.question or q.kind for q in result.interruption.questions)
            return ToolOutput(f"Error: the {self.agent.name} agent stopped to ask: {asks}. It cannot ask "
                              "questions when used as a tool; give it what it needs in the request.", True)
        return result.content

    async def aclose(self) -> None:
        await self.agent.aclose()
