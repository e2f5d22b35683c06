"""The tool protocol: what the agent loop calls, and the `@tool` decorator for Python functions.

A tool has a name, a description, a JSON Schema for its arguments and an async `run(args, ctx)` that
returns text for the model (or a ToolOutput marking an error). Raising ToolError (or any exception)
also becomes an `Error: ...` result for the model; the loop never crashes on a tool.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..jsonutil import to_text
from ..types import Event, Message

if TYPE_CHECKING:
    from .signature import SignatureModel


@dataclass(slots=True)
class ToolOutput:
    content: str
    is_error: bool = False
    # Optional structured payload (e.g. MCP images); the model sees `content`.
    data: Any = None


@dataclass(slots=True)
class ToolContext:
    """What a tool may know about the call it serves."""

    call_id: str = ""
    run_id: str = ""
    agent: str = ""
    path: tuple[str, ...] = ()
    messages: list[Message] = field(default_factory=list)  # the caller's history up to this call
    emit: Callable[[Event], None] | None = None  # forward nested events into the caller's stream
    state: dict[str, Any] = field(default_factory=dict)  # per-run scratch space shared by tools
    step: int = 0  # the run's step (model call) that asked for this call

    @property
    def idempotency_key(self) -> str:
        """`run id/step/call id`: the same each time this one call runs (a durable run's activity retried on
        another worker: its run id is the workflow's), different for any other call. A tool with side
        effects that must not repeat passes it on (an `Idempotency-Key` header, a unique column)."""
        return f"{self.run_id}/{self.step}/{self.call_id}"


class Tool:
    """Base class for tools. Subclasses set name/description/parameters and implement `run`."""

    name: str = ""
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    timeout: float | None = None  # seconds; None = no limit beyond the tool's own

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Release resources (connections, subprocesses). Called when the owning agent closes."""

    def spec(self) -> dict[str, Any]:
        """The OpenAI `tools[]` entry for this tool."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class FunctionTool(Tool):
    """A Python function as a tool. Sync functions run in a worker thread; async ones are awaited.

    `thread=False` calls a sync function directly on the event loop instead: for quick, non-blocking
    functions (pure computation), it saves the hand-off to a worker thread and back (~180k CPU
    instructions per call, bench/agent_instr.py). A function that waits (I/O, sleep, locks) must keep the
    default: on the loop it would stall every other run of the process while it waits.

    One pydantic model, built from the signature, gives both the JSON Schema the model sees and the
    conversion of the model's arguments into the declared types (a `list[Item]` arrives as Items, a
    `date` as a date). Arguments that do not fit become an `Error: ...` result for the model.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: dict[str, Any] | None = None,
        timeout: float | None = None,
        thread: bool = True,
    ):
        from .signature import build_signature_model, parse_docstring  # pydantic, on first @tool only

        self.fn = fn
        self.name = name or fn.__name__
        doc = inspect.getdoc(fn) or ""
        summary, param_docs = parse_docstring(doc)
        self.description = description if description is not None else summary
        self._sig: SignatureModel = build_signature_model(fn, param_docs, self.name, ToolContext)
        self.parameters = parameters if parameters is not None else self._sig.schema()
        self.timeout = timeout
        self._is_async = inspect.iscoroutinefunction(fn)
        self.thread = thread

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        converted = self._sig.convert(args)
        if isinstance(converted, str):
            return ToolOutput(f"Error: invalid arguments for {self.name}: {converted}", True)
        pos, kwargs = converted
        if self._sig.ctx_param:
            kwargs[self._sig.ctx_param] = ctx
        if self._is_async:
            result = await self.fn(*pos, **kwargs)
        elif self.thread:
            result = await asyncio.to_thread(self.fn, *pos, **kwargs)
        else:
            result = self.fn(*pos, **kwargs)
        return result if isinstance(result, ToolOutput) else to_text(result)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    thread: bool = True,
) -> Any:
    """Turn a function into a tool: `@tool` or `@tool(name=..., description=...)`.

    The JSON Schema comes from the type hints; descriptions from the docstring's first paragraph and its
    `Args:` section. A parameter named `ctx` receives the ToolContext and is hidden from the model.
    A sync function runs in a worker thread; `thread=False` calls it on the event loop (only for quick
    functions that never wait: see FunctionTool).
    """

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, timeout=timeout, thread=thread)

    return wrap(fn) if fn is not None else wrap


ToolLike = Tool | Callable[..., Any] | Callable[..., Awaitable[Any]]


def as_tool(obj: ToolLike) -> Tool:
    if isinstance(obj, Tool):
        return obj
    if callable(obj):
        return FunctionTool(obj)
    raise TypeError(f"not a tool: {obj!r} (expected a Tool or a function)")


# --- schema from signature -------------------------------------------------------------------------


def schema_from_signature(fn: Callable[..., Any], docs: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON Schema `@tool` gives `fn`'s arguments (descriptions from `docs`, else the docstring)."""
    from .signature import build_signature_model, parse_docstring

    if docs is None:
        docs = parse_docstring(inspect.getdoc(fn) or "")[1]
    return build_signature_model(fn, docs, getattr(fn, "__name__", "tool"), ToolContext).schema()
