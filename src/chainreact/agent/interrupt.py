"""Checkpoints, interrupts and resuming: the loop's side of runs that stop and go on later.

The agent knows no store. It offers three things, and a state layer (chainreact.state) or a durable
layer builds on them:

- **Safe points.** With `plan.checkpoint` set, the loop awaits `checkpoint(Checkpoint)` after every
  model call that asked for tools (`after_model`: the calls pending, none completed), as each call of a
  step with several calls finishes (`tool_result`: its result in `completed`, the step's calls still
  `pending`; the tool messages are appended at the step's end), after every tool step (`after_tools`),
  and when it stops for an interrupt (`interrupted`). The Checkpoint holds the
  messages so far, the pending calls and the completed results: everything needed to go on. The loop
  continues only after the hook returned, so a saved checkpoint is never behind the events.
- **Interrupts.** A tool (or a `wrap_tool_call` middleware, e.g. an approval check) raises
  `ToolInterrupt(question, ...)`. The other calls of the step still run; the run then stops with
  `stop_reason = "interrupted"`, an `interrupted` event and `RunResult.interruption` (the questions and
  the calls that wait).
- **Resume.** `agent.run(resume=Resume(...))` starts from saved messages and pending calls instead of
  the input: completed results are reused (never run twice), the other pending calls run first, each with
  its answer (if any) in `ctx.state["answer"]`, then the loop goes on as usual. The answer's meaning is
  the tool's: `ask_user` returns it, an approval wrapper approves, rejects or edits with it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..tools.base import ToolOutput
from ..tools.interrupt import ANSWER as ANSWER  # raised by tools (tools/interrupt.py); re-exported here
from ..tools.interrupt import ToolInterrupt as ToolInterrupt
from ..types import Message, ToolCall


@dataclass(slots=True)
class Question:
    """One thing an interrupted run waits for; answered by `id` (the tool call's id)."""

    id: str
    kind: str
    question: str
    tool: str
    arguments: str
    schema: dict[str, Any] | None = None
    data: Any = None


@dataclass(slots=True)
class Interruption:
    questions: list[Question]
    pending: list[ToolCall]  # the calls still to run on resume (the waiting ones)


@dataclass(slots=True)
class Checkpoint:
    """A safe point of a run. `messages` is the run's live list: copy or serialise it before returning."""

    run_id: str
    agent: str
    step: int
    point: str  # after_model | tool_result (one of several calls finished) | after_tools | interrupted
    messages: list[Message]
    pending: list[ToolCall] = field(default_factory=list)  # calls of the current step without a result
    completed: dict[str, ToolOutput] = field(default_factory=dict)  # results of the current step, by call id
    questions: list[Question] = field(default_factory=list)


CheckpointFn = Callable[[Checkpoint], Awaitable[None]]


@dataclass(slots=True)
class Resume:
    """Where a run starts again: its messages, its step, the current step's calls and what is known."""

    messages: list[Any]  # Message objects or OpenAI-shaped dicts; the last assistant message holds `pending`
    step: int = 0
    pending: list[ToolCall] = field(default_factory=list)
    completed: dict[str, ToolOutput] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)  # by call id
    run_id: str | None = None  # keep the run's id (the checkpoints' key)
