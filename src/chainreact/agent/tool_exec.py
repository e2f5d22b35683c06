"""Executing the tool calls of one assistant message.

Everything that can go wrong with a tool call becomes an `Error: ...` result for the model, never a crash:
an unknown tool, arguments that are not JSON or fail the tool's schema, a repeated identical call (the
doom-loop guard), a timeout, an exception. Results are cut to `max_output` characters with a marker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ..tools.base import Tool, ToolContext, ToolOutput
from ..types import ToolCall, ToolOutputDelta
from .interrupt import ToolInterrupt
from .middleware import MiddlewareChain, StreamToolFn, ToolCallInfo, ToolFn
from .nudges import repeat_refusal
from .streaming import collect, is_streaming

if TYPE_CHECKING:
    from .plan import ToolIO

log = logging.getLogger("chainreact.agent")

DOOM_WINDOW = 20  # look back this many calls
DOOM_LIMIT = 3  # the 3rd identical call within the window is refused


@dataclass(slots=True)
class CallOutcome:
    call: ToolCall
    output: ToolOutput
    duration_ms: float
    executed: bool


def truncate(text: str, limit: int) -> str:
    """Cut at `limit` characters (code points, so never inside a multi-byte character) with a marker."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[output truncated: {len(text)} characters in total, first {limit} shown]"


def parse_arguments(raw: str | None) -> dict[str, Any] | str:
    """The call's arguments as a dict, or an error message. Empty or null arguments mean {}."""
    if raw is None or not raw.strip() or raw.strip() == "null":
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        return f"arguments are not valid JSON ({e}); send a JSON object matching the tool's parameters"
    if value is None:
        return {}
    if not isinstance(value, dict):
        return f"arguments must be a JSON object, got {type(value).__name__}"
    return value


def validate_arguments(schema: dict[str, Any], args: dict[str, Any]) -> str | None:
    from ..tools.jsonschema_lite import SchemaError, validate

    try:
        errors = validate(args, schema)
    except SchemaError as e:  # a schema no document load checked (an MCP server's): the call cannot go on
        return f"the tool's own parameter schema cannot check them: {e}"
    return "; ".join(errors) if errors else None


class LocalToolIO:
    """The in-process tool boundary (plan.ToolIO): middleware `wrap_tool_call`, the tool's timeout, and any
    exception turned into an `Error:` result for the model."""

    __slots__ = ("middleware",)

    def __init__(self, middleware: MiddlewareChain):
        self.middleware = middleware

    async def __call__(self, call: ToolCall, tool: Tool, args: dict[str, Any],
                       ctx: ToolContext) -> ToolOutput:
        info = ToolCallInfo(call.name, call.id, args, tool, ctx)

        async def invoke(a: dict[str, Any]) -> ToolOutput:
            result = await tool.run(a, ctx)
            return result if isinstance(result, ToolOutput) else ToolOutput(str(result))

        fn: ToolFn = self._streamed(call, tool, ctx, info) if is_streaming(tool) else invoke
        if self.middleware.wrap_tool:
            fn = self.middleware.wrap_tool_fn(fn, info)
        try:
            if tool.timeout:
                return await asyncio.wait_for(fn(args), tool.timeout)
            return await fn(args)
        except TimeoutError:
            return ToolOutput(f"Error: tool {call.name} timed out after {tool.timeout:g} s", True)
        except ToolInterrupt as ask:  # the call waits for an answer: the loop stops the run (interrupt.py)
            return ToolOutput("", data=ask)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a tool failure is information for the model, not a crash
            log.info("tool %s raised %s: %s", call.name, type(e).__name__, e)
            return ToolOutput(f"Error: {type(e).__name__}: {e}", True)


    def _streamed(self, call: ToolCall, tool: Tool, ctx: ToolContext, info: ToolCallInfo) -> ToolFn:
        """A streaming tool as one call: pieces go out live as tool_output_delta events, then joined."""

        def stream(a: dict[str, Any]) -> AsyncIterator[str | ToolOutput]:
            return tool.stream(a, ctx)  # type: ignore[attr-defined]

        fn: StreamToolFn = stream
        if self.middleware.wrap_stream_tool:
            fn = self.middleware.wrap_stream_tool_fn(stream, info)

        def emit(text: str) -> None:
            if ctx.emit is not None:
                ctx.emit(ToolOutputDelta(call_id=call.id, name=call.name, text=text))

        async def invoke(a: dict[str, Any]) -> ToolOutput:
            return await collect(fn(a), emit)

        return invoke


OnDone = Callable[[CallOutcome], Awaitable[None]]


class ToolRunner:
    """Runs tool calls for one run; holds the doom-loop memory of that run. The deterministic checks
    happen here; the execution itself goes through `execute` (the plan's tool boundary)."""

    __slots__ = ("_recent", "execute", "max_output", "parallel")

    def __init__(self, execute: ToolIO, max_output: int, parallel: bool):
        self.execute = execute
        self.max_output = max_output
        self.parallel = parallel
        self._recent: deque[str] = deque(maxlen=DOOM_WINDOW)

    def _prepare(self, call: ToolCall, tools: dict[str, Tool]) -> dict[str, Any] | ToolOutput:
        tool = tools.get(call.name)
        if tool is None:
            names = ", ".join(sorted(tools)) or "(none)"
            return ToolOutput(f"Error: unknown tool {call.name!r}. Available tools: {names}", True)
        args = parse_arguments(call.arguments)
        if isinstance(args, str):
            return ToolOutput(f"Error: tool {call.name!r}: {args}", True)
        key = call.name + "\x00" + orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()
        repeats = self._recent.count(key)
        self._recent.append(key)
        if repeats >= DOOM_LIMIT - 1:
            log.warning("doom-loop guard: refused repeated call %s %s", call.name, call.arguments)
            return ToolOutput(repeat_refusal(call.name, repeats), True)
        params = tool.parameters
        if params and (params.get("properties") or params.get("required")):
            problem = validate_arguments(params, args)
            if problem:
                return ToolOutput(f"Error: invalid arguments for {call.name}: {problem}", True)
        return args

    async def _one(self, call: ToolCall, prepared: dict[str, Any] | ToolOutput, tools: dict[str, Tool],
                   ctx: ToolContext, on_done: OnDone | None = None) -> CallOutcome:
        if isinstance(prepared, ToolOutput):
            return CallOutcome(call, prepared, 0.0, False)
        outcome = await self._execute_one(call, prepared, tools, ctx)
        if on_done is not None:
            await on_done(outcome)
        return outcome

    async def _execute_one(self, call: ToolCall, prepared: dict[str, Any], tools: dict[str, Tool],
                           ctx: ToolContext) -> CallOutcome:
        t0 = time.perf_counter()
        out = await self.execute(call, tools[call.name], prepared, ctx)
        if not isinstance(out.content, str):
            out = ToolOutput(str(out.content), out.is_error, out.data)
        if len(out.content) > self.max_output:
            out = ToolOutput(truncate(out.content, self.max_output), out.is_error, out.data)
        return CallOutcome(call, out, (time.perf_counter() - t0) * 1000, True)

    async def run(self, calls: list[ToolCall], tools: dict[str, Tool],
                  make_ctx: Any, on_done: OnDone | None = None) -> list[CallOutcome]:
        """Run the calls (concurrently unless `parallel` is off); outcomes come back in call order.
        `on_done` is awaited as each executed call finishes (the loop checkpoints there)."""
        prepared = [self._prepare(c, tools) for c in calls]
        if len(calls) == 1 or not self.parallel:
            return [await self._one(c, p, tools, make_ctx(c), on_done)
                    for c, p in zip(calls, prepared, strict=True)]
        return list(await asyncio.gather(
            *(self._one(c, p, tools, make_ctx(c), on_done) for c, p in zip(calls, prepared, strict=True))
        ))
