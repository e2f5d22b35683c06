"""Typed events: what a run reports while it happens.

Every event carries the run id, the agent's name, the step, a per-run sequence number and the path of
nested agents (outermost first). The model client creates resilience events (retry, failover, breaker)
without those fields; the agent stamps them when it forwards them. `to_dict()` is the stable JSON form
(`type` plus the event's fields) used by `--jsonl` and the SSE server.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from .messages import Message, ToolCall, Usage


@dataclass(slots=True, kw_only=True)
class Event:
    type: ClassVar[str] = "event"
    run_id: str = ""
    agent: str = ""
    step: int = 0
    seq: int = 0
    path: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        for f in fields(self):
            out[f.name] = _jsonable(getattr(self, f.name))
        return out


def _jsonable(v: Any) -> Any:
    if isinstance(v, Message | ToolCall):
        return v.to_openai()
    if isinstance(v, Usage):
        return v.to_dict()
    if isinstance(v, tuple | list):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, BaseException):
        return f"{type(v).__name__}: {v}"
    return v


@dataclass(slots=True, kw_only=True)
class RunStart(Event):
    type: ClassVar[str] = "run_start"
    input: Any = None


@dataclass(slots=True, kw_only=True)
class TextDelta(Event):
    type: ClassVar[str] = "text_delta"
    text: str


@dataclass(slots=True, kw_only=True)
class ReasoningDelta(Event):
    type: ClassVar[str] = "reasoning_delta"
    text: str


@dataclass(slots=True, kw_only=True)
class Preamble(Event):
    """Text released as an answer before tool calls arrived in the same message (see detection)."""

    type: ClassVar[str] = "preamble"
    text: str


@dataclass(slots=True, kw_only=True)
class ToolCallEvent(Event):
    type: ClassVar[str] = "tool_call"
    call: ToolCall


@dataclass(slots=True, kw_only=True)
class ToolResultEvent(Event):
    type: ClassVar[str] = "tool_result"
    call_id: str
    name: str
    content: str
    is_error: bool = False
    duration_ms: float = 0.0


@dataclass(slots=True, kw_only=True)
class ToolOutputDelta(Event):
    """A piece of a streaming tool's output, live while it runs (the whole output follows in tool_result)."""

    type: ClassVar[str] = "tool_output_delta"
    call_id: str
    name: str
    text: str


@dataclass(slots=True, kw_only=True)
class ModelCallEnd(Event):
    type: ClassVar[str] = "model_call_end"
    message: Message
    usage: Usage | None = None
    finish_reason: str | None = None
    endpoint: str | None = None


@dataclass(slots=True, kw_only=True)
class RetryEvent(Event):
    type: ClassVar[str] = "retry"
    endpoint: str
    attempt: int  # the attempt that failed, 1-based (the next one is attempt + 1)
    delay: float  # seconds before the next attempt
    error: str
    status: int | None = None
    error_type: str = ""  # the error's class, e.g. "ModelError", "MalformedResponseError"


@dataclass(slots=True, kw_only=True)
class FailoverEvent(Event):
    type: ClassVar[str] = "failover"
    from_endpoint: str
    to_endpoint: str
    error: str


@dataclass(slots=True, kw_only=True)
class BreakerEvent(Event):
    type: ClassVar[str] = "breaker"
    endpoint: str
    state: str  # closed | open | half_open
    previous: str
    cooldown: float


@dataclass(slots=True, kw_only=True)
class StepEnd(Event):
    type: ClassVar[str] = "step_end"


@dataclass(slots=True, kw_only=True)
class RunWarning(Event):
    """The run's answer is not a normal one: `code` says why ("max_steps": the run reached maxStep and
    its answer was asked for without tools, so the task may be unfinished). Comes just before `final`."""

    type: ClassVar[str] = "warning"
    code: str
    message: str


@dataclass(slots=True, kw_only=True)
class Final(Event):
    type: ClassVar[str] = "final"
    content: str
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = "stop"
    full_content: bool = True
    reasoning: str | None = None


@dataclass(slots=True, kw_only=True)
class ErrorEvent(Event):
    type: ClassVar[str] = "error"
    error: str
    error_type: str = ""


@dataclass(slots=True, kw_only=True)
class Cancelled(Event):
    type: ClassVar[str] = "cancelled"
    mode: str
    messages: list[Message] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class Interrupted(Event):
    """The run stopped because a tool asked for input or approval; resume it with the answers."""

    type: ClassVar[str] = "interrupted"
    # each: id, kind, question, tool, arguments, schema
    questions: list[dict[str, Any]] = field(default_factory=list)
    pending: list[ToolCall] = field(default_factory=list)


# Events the model client emits (the agent forwards them stamped with run fields).
ClientEvent = RetryEvent | FailoverEvent | BreakerEvent
