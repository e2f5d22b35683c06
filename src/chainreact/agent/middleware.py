"""Middleware: the hook points of a run, and the one place their order is defined.

Hook points (from the ChatModelAgent design):

    before_agent    once per run, before anything else; may change instruction, tools, return_directly
                    and the deferred tools (the loop then adds, rebuilds or drops `tool_search`)
    before_model    before every model call; may rewrite state.messages / state.tool_specs (persisted)
    wrap_model      wraps ONE attempt against ONE endpoint (inside failover and retry)
    after_model     after every model call; may rewrite state.messages (the response is already appended)
    wrap_tool_call  wraps one tool execution
    wrap_stream_tool_call  wraps the piece stream of one streaming tool execution (inside wrap_tool_call)
    after_agent     once, after a successful run (reads the final state and result)
    on_agent_error  once, when a run ends without an answer: raised, cancelled, closed, interrupted (None)

Order of a model call, outer to inner:
    before_model -> failover -> retry -> event emission -> wrap_model[0] -> ... -> wrap_model[n-1]
    -> model -> after_model
Order of a tool call, outer to inner:
    event emission (tool_call event) -> wrap_tool_call[0] -> ... -> wrap_tool_call[n-1] -> tool
For both wrap hooks the first registered middleware is the outermost.

Hooks mutate the state they are given (it IS the run state, so changes persist into later steps).
Global middleware (`GLOBAL_MIDDLEWARE`) runs first in every Agent: chainreact.observability.enable() puts
its tracer there (CHAINREACT_OTEL=1 is read above this layer, by chainreact/__init__, which calls it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..tools.base import Tool, ToolContext, ToolOutput
from ..types import Message, StreamItem

if TYPE_CHECKING:
    from ..llm.request import ModelRequest
    from .result import RunResult

# One model attempt: request -> stream items (the last one a ModelResponse), as chainreact.llm defines it.
ModelFn = Callable[["ModelRequest"], AsyncIterator[StreamItem]]
# One tool execution: parsed arguments -> output.
ToolFn = Callable[[dict[str, Any]], Awaitable[ToolOutput]]
# One streaming tool execution: parsed arguments -> text pieces (a ToolOutput piece is the final output).
StreamToolFn = Callable[[dict[str, Any]], AsyncIterator[str | ToolOutput]]


@dataclass
class AgentContext:
    """What before_agent may change for this run (the agent's configuration is not touched: the next run
    starts from it again)."""

    instruction: str
    tools: list[Tool]
    return_directly: set[str]
    input: Any = None
    agent: str = ""  # the agent's name (read-only: tracing names its span after it)
    run_id: str = ""
    # The tools found through `tool_search` instead of being listed up front. When the hooks leave a
    # different list than the agent's, the loop gives the run a `tool_search` over exactly this list, or
    # none when it is empty (special_tools.settle_tool_search).
    deferred: list[Tool] = field(default_factory=list)

    def undefer(self, names: Iterable[str] | None = None) -> None:
        """List deferred tools up front (all of them by default): they move from `deferred` to `tools`."""
        wanted = None if names is None else set(names)
        moving = [t for t in self.deferred if wanted is None or t.name in wanted]
        self.deferred = [t for t in self.deferred if wanted is not None and t.name not in wanted]
        have = {t.name for t in self.tools}
        self.tools = [*self.tools, *(t for t in moving if t.name not in have)]


@dataclass
class RunState:
    """The state of one run. Middleware edits persist: the loop reads them back on every step."""

    messages: list[Message]
    tool_specs: list[dict[str, Any]]
    tools: dict[str, Tool]
    return_directly: set[str]
    run_id: str = ""
    step: int = 0
    values: dict[str, Any] = field(default_factory=dict)  # free space for middleware
    deferred: dict[str, Tool] = field(default_factory=dict)  # deferred tools not loaded yet (tool_search)

    def load_tools(self, names: Sequence[str]) -> list[str]:
        """Make deferred tools callable from the next model call; returns the names actually loaded."""
        loaded = []
        for name in names:
            t = self.deferred.pop(name, None)
            if t is not None and name not in self.tools:
                self.tools[name] = t
                self.tool_specs.append(t.spec())
                loaded.append(name)
        return loaded


@dataclass
class ToolCallInfo:
    """What wrap_tool_call knows about the call it wraps."""

    name: str
    call_id: str
    arguments: dict[str, Any]
    tool: Tool
    ctx: ToolContext


class Middleware:
    """Base class with no-op hooks: override only what you need.

    `durable` says where the loop hooks (before_agent, before_model, after_model, after_agent,
    on_agent_error) run in a durable run (chainreact.durable, docs/durable.md): "workflow" (the default)
    runs them in the workflow code, in the loop's order, so they must be deterministic and do no I/O (a
    replay runs them again); "activity" runs each in an activity in the worker (for hooks that do I/O;
    they see the run state as data); "worker" leaves them out of durable runs (hooks that measure or
    trace one process). The wrap hooks always run in the worker, around the model or tool call."""

    durable: ClassVar[str] = "workflow"

    async def before_agent(self, ctx: AgentContext) -> None:
        return None

    async def after_agent(self, state: RunState, result: RunResult) -> None:
        return None

    async def on_agent_error(self, state: RunState | None, error: BaseException | None) -> None:
        return None

    async def before_model(self, state: RunState) -> None:
        return None

    async def after_model(self, state: RunState) -> None:
        return None

    def wrap_model(self, call: ModelFn) -> ModelFn:
        return call

    def wrap_tool_call(self, call: ToolFn, info: ToolCallInfo) -> ToolFn:
        return call

    def wrap_stream_tool_call(self, call: StreamToolFn, info: ToolCallInfo) -> StreamToolFn:
        return call


def _overrides(mw: Middleware, name: str) -> bool:
    return getattr(type(mw), name) is not getattr(Middleware, name)


class MiddlewareChain:
    """Pre-sorted hook lists, so a run pays only for the hooks that are actually overridden."""

    __slots__ = ("after_agent", "after_model", "all", "before_agent", "before_model", "on_agent_error",
                 "wrap_model", "wrap_stream_tool", "wrap_tool")

    def __init__(self, middleware: Sequence[Middleware]):
        self.all = tuple(middleware)
        self.before_agent = [m for m in middleware if _overrides(m, "before_agent")]
        self.after_agent = [m for m in middleware if _overrides(m, "after_agent")]
        self.on_agent_error = [m for m in middleware if _overrides(m, "on_agent_error")]
        self.before_model = [m for m in middleware if _overrides(m, "before_model")]
        self.after_model = [m for m in middleware if _overrides(m, "after_model")]
        self.wrap_model = [m for m in middleware if _overrides(m, "wrap_model")]
        self.wrap_tool = [m for m in middleware if _overrides(m, "wrap_tool_call")]
        self.wrap_stream_tool = [m for m in middleware if _overrides(m, "wrap_stream_tool_call")]

    def model_wrapper(self) -> Callable[[ModelFn], ModelFn] | None:
        if not self.wrap_model:
            return None
        wrappers = self.wrap_model

        def wrap(call: ModelFn) -> ModelFn:
            # Apply innermost first so that wrappers[0] ends up outermost.
            for m in reversed(wrappers):
                call = m.wrap_model(call)
            return call

        return wrap

    def wrap_tool_fn(self, call: ToolFn, info: ToolCallInfo) -> ToolFn:
        for m in reversed(self.wrap_tool):
            call = m.wrap_tool_call(call, info)
        return call

    def wrap_stream_tool_fn(self, call: StreamToolFn, info: ToolCallInfo) -> StreamToolFn:
        for m in reversed(self.wrap_stream_tool):
            call = m.wrap_stream_tool_call(call, info)
        return call


GLOBAL_MIDDLEWARE: list[Middleware] = []


def with_global(middleware: Sequence[Middleware]) -> list[Middleware]:
    """`middleware` with the global middleware first (a type the agent already has is not added twice)."""
    if not GLOBAL_MIDDLEWARE:
        return list(middleware)
    own = {type(m) for m in middleware}
    return [*(g for g in GLOBAL_MIDDLEWARE if type(g) not in own), *middleware]
