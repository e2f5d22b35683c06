"""The tool protocol: what the agent loop calls, and the `@tool` decorator for Python functions.

A tool has a name, a description, a JSON Schema for its arguments and an async `run(args, ctx)` that
returns text for the model (or a ToolOutput marking an error). Raising ToolError (or any exception)
also becomes an `Error: ...` result for the model; the loop never crashes on a tool.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from ..jsonutil import to_text
from ..types import Event, Message


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
    """A Python function as a tool. Sync functions run in a worker thread; async ones are awaited."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: dict[str, Any] | None = None,
        timeout: float | None = None,
    ):
        self.fn = fn
        self.name = name or fn.__name__
        doc = inspect.getdoc(fn) or ""
        summary, param_docs = _parse_docstring(doc)
        self.description = description if description is not None else summary
        self.parameters = parameters if parameters is not None else schema_from_signature(fn, param_docs)
        self.timeout = timeout
        self._is_async = inspect.iscoroutinefunction(fn)
        self._wants_ctx = "ctx" in inspect.signature(fn).parameters

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        kwargs = dict(args)
        if self._wants_ctx:
            kwargs["ctx"] = ctx
        if self._is_async:
            result = await self.fn(**kwargs)
        else:
            result = await asyncio.to_thread(self.fn, **kwargs)
        return result if isinstance(result, ToolOutput) else to_text(result)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Any:
    """Turn a function into a tool: `@tool` or `@tool(name=..., description=...)`.

    The JSON Schema comes from the type hints; descriptions from the docstring's first paragraph and its
    `Args:` section. A parameter named `ctx` receives the ToolContext and is hidden from the model.
    """

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, timeout=timeout)

    return wrap(fn) if fn is not None else wrap


ToolLike = Tool | Callable[..., Any] | Callable[..., Awaitable[Any]]


def as_tool(obj: ToolLike) -> Tool:
    if isinstance(obj, Tool):
        return obj
    if callable(obj):
        return FunctionTool(obj)
    raise TypeError(f"not a tool: {obj!r} (expected a Tool or a function)")


# --- schema from signature -------------------------------------------------------------------------

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary (text before the first section) and Google-style `Args:` descriptions."""
    lines = doc.splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    i = 0
    while i < len(lines) and not _ARGS_HEADER.match(lines[i]):
        if re.match(r"^\s*(Returns|Raises|Yields|Examples?)\s*:\s*$", lines[i]):
            break
        summary.append(lines[i])
        i += 1
    if i < len(lines) and _ARGS_HEADER.match(lines[i]):
        i += 1
        current = None
        while i < len(lines):
            line = lines[i]
            if line.strip() and not line.startswith((" ", "\t")):
                break
            m = _ARG_LINE.match(line)
            if m and (current is None or len(line) - len(line.lstrip()) <= 4):
                current = m.group(1).lstrip("*")
                params[current] = m.group(3).strip()
            elif current and line.strip():
                params[current] += " " + line.strip()
            i += 1
    return "\n".join(summary).strip(), params


def schema_from_signature(fn: Callable[..., Any], docs: dict[str, str] | None = None) -> dict[str, Any]:
    docs = docs or {}
    sig = inspect.signature(fn)
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception:
        hints = {}
    props: dict[str, Any] = {}
    required: list[str] = []
    for pname, p in sig.parameters.items():
        if pname in ("ctx", "self") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        ann = hints.get(pname, p.annotation)
        schema = type_schema(ann) if ann is not inspect.Parameter.empty else {}
        if docs.get(pname):
            schema = {**schema, "description": docs[pname]}
        if p.default is inspect.Parameter.empty:
            required.append(pname)
        elif p.default is not None:
            try:
                import orjson

                orjson.dumps(p.default)
                schema = {**schema, "default": p.default}
            except TypeError:
                pass
        props[pname] = schema
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object", list: "array"}


def type_schema(t: Any) -> dict[str, Any]:
    import types as _types
    import typing

    if t in _SIMPLE:
        return {"type": _SIMPLE[t]}
    if t is type(None):
        return {"type": "null"}
    if t is Any:
        return {}
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, _types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            return type_schema(non_none[0])
        return {"anyOf": [type_schema(a) for a in args]}
    if origin in (list, tuple, set, frozenset):
        return {"type": "array", "items": type_schema(args[0]) if args else {}}
    if origin is dict:
        return {"type": "object"}
    if origin is typing.Annotated:
        inner = type_schema(args[0])
        desc = next((a for a in args[1:] if isinstance(a, str)), None)
        return {**inner, "description": desc} if desc else inner
    import enum

    if isinstance(t, type) and issubclass(t, enum.Enum):
        return {"enum": [m.value for m in t]}
    # Dataclasses, TypedDicts, pydantic models: let pydantic describe them.
    from pydantic import TypeAdapter

    return TypeAdapter(t).json_schema()
