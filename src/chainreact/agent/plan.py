"""The run plan: everything one run needs, fixed before it starts, and the I/O boundary of the run.

The Agent makes a plan (`await agent.plan(metadata=..., session_values=...)`): the instruction rendered
for this run, the resolved tools, the limits, the middleware, the detection mode and two functions through
which every I/O of the run goes:

    plan.model(messages, tool_specs, stream=..., on_event=...)  -> stream items, the last a ModelResponse
    plan.call_tool(call, tool, args, ctx)                       -> ToolOutput

The loop (loop.py) reads only the plan; it never sees the Agent. Everything else the loop does (step
limits, detection, the doom-loop guard, ReturnDirectly, cancel safe points, middleware hooks) is a
deterministic decision over the plan and the messages, so a durable layer can replay it and swap the two
functions for activities: `plan.replace(model=..., call_tool=...)`. In process, `model` is the model
client's `call` with the middleware's `wrap_model` bound (a `functools.partial`, no extra frame of ours)
and `call_tool` runs the tool with `wrap_tool_call`, its timeout, and errors turned into results.

The plan is immutable (a frozen dataclass with tuples); `session_values` is the caller's mapping, shared
on purpose (OutputKey writes the answer into it). `on_self_heal` tells the owner that detection had to
switch to `drain` (the Agent keeps draining for later runs).

Plan hooks: a caller may change every plan made in its context (`with plan_hook(fn): ...`, a context
variable, so concurrent runs each see their own and nothing is paid without one). Recording a run's I/O
(agent/recording.py) and replaying it from a cassette (chainreact.replay) wrap or swap the two I/O
functions this way, also for agents deep inside a rule chain or a flow turn.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..tools.base import Tool, ToolContext, ToolOutput
from ..types import Event, Message, StreamItem, ToolCall
from .detection import AUTO
from .middleware import MiddlewareChain


class ModelIO(Protocol):
    """One model call (failover and retries inside), as the loop makes it."""

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]] | None, *, stream: bool,
                 on_event: Callable[[Any], None]) -> AsyncGenerator[StreamItem, None]: ...


class ToolIO(Protocol):
    """One tool execution with already validated arguments. Never raises for a tool failure: an error
    becomes a `ToolOutput(is_error=True)` (cancellation still propagates)."""

    def __call__(self, call: ToolCall, tool: Tool, args: dict[str, Any],
                 ctx: ToolContext) -> Awaitable[ToolOutput]: ...


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of a run (see docs/agent.md, "The loop")."""

    max_steps: int = 50
    max_step_policy: str = "answer"  # answer | error
    max_tool_output: int = 50_000
    parallel_tool_calls: bool = True


@dataclass(frozen=True, slots=True)
class Detection:
    """`streamToolCallCheck` (detection.py): the mode and the observation window in seconds."""

    mode: str = AUTO
    window: float = 0.5


@dataclass(frozen=True, slots=True, kw_only=True)
class RunPlan:
    agent: str  # the agent's name (events, paths)
    instruction: str  # the system prompt, rendered for this run (skill catalog included)
    model: ModelIO
    call_tool: ToolIO
    preset: tuple[Any, ...] = ()  # preset messages, rendered; used when the input brings none
    tools: tuple[Tool, ...] = ()
    return_directly: frozenset[str] = frozenset()
    middleware: MiddlewareChain = field(default_factory=lambda: MiddlewareChain(()))
    limits: Limits = field(default_factory=Limits)
    detection: Detection = field(default_factory=Detection)
    keep_think: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)
    session_values: MutableMapping[str, Any] | Mapping[str, Any] | None = None
    # Instruction + input -> the model messages, instead of the input contract (inputs.py); sync or async.
    gen_model_input: Callable[[str, Any], Any] | None = None
    deferred_tools: tuple[Tool, ...] = ()  # found and loaded through the tool_search tool (special_tools.py)
    output_key: str | None = None  # the final answer is stored under this key in the session values
    # Awaited at every safe point with a Checkpoint (interrupt.py); None: no checkpoints.
    checkpoint: Callable[[Any], Awaitable[None]] | None = None
    # Applied to a system message the input brings (the instruction is not used then): the skill catalog.
    system_hook: Callable[[str], str] | None = None
    client: Any = None  # the ModelClient behind the default `model` (its config, for a durable layer)
    on_self_heal: Callable[[], None] | None = None

    def replace(self, **changes: Any) -> RunPlan:
        """A copy with some fields changed (e.g. the I/O functions of a durable layer)."""
        return dataclasses.replace(self, **changes)


PlanHook = Callable[[RunPlan], RunPlan]

# The hooks every plan made in this context goes through, the first installed first (innermost).
plan_hooks: ContextVar[tuple[PlanHook, ...]] = ContextVar("chainreact_plan_hooks", default=())


@contextlib.contextmanager
def plan_hook(hook: PlanHook) -> Iterator[None]:
    """Every plan made inside the block (in this task and the tasks it starts) goes through `hook`."""
    token = plan_hooks.set((*plan_hooks.get(), hook))
    try:
        yield
    finally:
        plan_hooks.reset(token)


def apply_plan_hooks(plan: RunPlan) -> RunPlan:
    for hook in plan_hooks.get():
        plan = hook(plan)
    return plan


def planning_error(agent: str, error: Exception, run_id: str = "", path: tuple[str, ...] = ()) -> Event:
    """The `error` event of a run that failed before its plan was made (bad tool config, MCP down...)."""
    from ..types import ErrorEvent

    return ErrorEvent(run_id=run_id, agent=agent, seq=1, path=(*path, agent), error=str(error),
                      error_type=type(error).__name__)
