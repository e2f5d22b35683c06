"""Streaming tools: a tool that yields partial output while it runs.

    @streaming_tool
    async def build(target: str):
        \"\"\"Build a target.\"\"\"
        for step in ("configure", "compile", "link"):
            yield f"{step}... "
        yield "done"

A streaming tool has `stream(args, ctx)`, an async iterator of text pieces (a `ToolOutput` piece is the
final output instead of the joined text). Each piece goes out live as a `tool_output_delta` event; the
model gets the whole output as usual. Middleware sees the stream through `wrap_stream_tool_call` and the
whole call through `wrap_tool_call` (outermost). `run()` still works alone: it joins the pieces.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from ..tools.base import FunctionTool, Tool, ToolContext, ToolOutput


def is_streaming(tool: Tool | None) -> bool:
    return callable(getattr(tool, "stream", None))


class StreamingFunctionTool(FunctionTool):
    """An async generator function as a streaming tool (schema and argument conversion as for @tool)."""

    async def stream(self, args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[str | ToolOutput]:
        converted = self._sig.convert(args)
        if isinstance(converted, str):
            yield ToolOutput(f"Error: invalid arguments for {self.name}: {converted}", True)
            return
        pos, kwargs = converted
        if self._sig.ctx_param:
            kwargs[self._sig.ctx_param] = ctx
        async for piece in self.fn(*pos, **kwargs):
            yield piece if isinstance(piece, ToolOutput) else str(piece)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        return await collect(self.stream(args, ctx))


async def collect(pieces: AsyncIterator[str | ToolOutput],
                  on_piece: Callable[[str], None] | None = None) -> ToolOutput:
    """Join a stream's text pieces (a ToolOutput piece is the final output)."""
    parts: list[str] = []
    final: ToolOutput | None = None
    async for piece in pieces:
        if isinstance(piece, ToolOutput):
            final = piece
            continue
        parts.append(piece)
        if on_piece is not None:
            on_piece(piece)
    return final if final is not None else ToolOutput("".join(parts))


def streaming_tool(fn: Callable[..., Any] | None = None, *, name: str | None = None,
                   description: str | None = None, timeout: float | None = None) -> Any:
    """`@streaming_tool` on an async generator function (like `@tool`)."""

    def wrap(f: Callable[..., Any]) -> StreamingFunctionTool:
        return StreamingFunctionTool(f, name=name, description=description, timeout=timeout)

    return wrap(fn) if fn is not None else wrap
