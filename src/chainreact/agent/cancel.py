"""Cancelling a run: modes, safe points, escalation, and keeping the history valid.

Modes combine as flags (`CancelMode.AFTER_MODEL | CancelMode.AFTER_TOOLS`): the first safe point reached
wins. IMMEDIATE stops at once (the model stream or the tools in flight are cancelled). A timeout turns a
pending safe-point cancel into an immediate one ("escalated").

Whatever the mode, the run ends with a `cancelled` event carrying the messages so far, where every tool
call without a result gets a "cancelled" result, so `agent.run(previous.messages + [new input])` resumes.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable

from ..types import Message


class CancelMode(enum.Flag):
    IMMEDIATE = enum.auto()
    AFTER_MODEL = enum.auto()
    AFTER_TOOLS = enum.auto()

    @classmethod
    def parse(cls, mode: CancelMode | str) -> CancelMode:
        if isinstance(mode, CancelMode):
            return mode
        out = cls(0)
        for part in str(mode).replace("+", "|").split("|"):
            name = part.strip().upper()
            if name not in cls.__members__:
                raise ValueError(f"unknown cancel mode {part!r}; use immediate, after_model, after_tools")
            out |= cls[name]
        return out


CANCELLED_RESULT = "Cancelled: this tool call did not run to completion because the run was cancelled."


def repair_history(messages: list[Message]) -> list[Message]:
    """Give every tool call without a result a cancelled result, keeping the conversation valid."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    out: list[Message] = []
    pending: list[str] = []
    for m in messages:
        if m.role != "tool" and pending:
            out.extend(Message("tool", CANCELLED_RESULT, tool_call_id=cid) for cid in pending)
            pending = []
        out.append(m)
        if m.role == "assistant" and m.tool_calls:
            pending = [tc.id for tc in m.tool_calls if tc.id not in answered]
        elif m.role == "tool" and m.tool_call_id in pending:
            pending.remove(m.tool_call_id)
    out.extend(Message("tool", CANCELLED_RESULT, tool_call_id=cid) for cid in pending)
    return out


class CancelState:
    """Shared between a running loop and the handles that asked it to stop."""

    __slots__ = ("escalated", "finished", "mode", "outcome", "requested")

    def __init__(self) -> None:
        self.mode = CancelMode(0)
        self.requested = False
        self.escalated = False
        self.finished: asyncio.Event = asyncio.Event()
        self.outcome = ""  # cancelled | escalated | finished

    def at(self, point: CancelMode) -> bool:
        """True when the loop, at safe point `point`, must stop."""
        return self.requested and bool(self.mode & point)

    def request(self, mode: CancelMode, stop: Callable[[], None]) -> None:
        """Ask the loop to stop at the first safe point of `mode` (nothing once the run has finished); an
        immediate cancel also calls `stop()`, which cancels whatever drives the loop (a task, a workflow's
        loop task)."""
        if self.finished.is_set():
            return
        self.mode |= mode
        self.requested = True
        if mode & CancelMode.IMMEDIATE:
            stop()

    def escalate(self, stop: Callable[[], None]) -> None:
        """A safe-point cancel's timeout ran out: unless the run finished meanwhile, it stops now."""
        if not self.finished.is_set():
            self.escalated = True
            self.request(CancelMode.IMMEDIATE, stop)


async def escalate_after(state: CancelState, timeout: float, stop: Callable[[], None],
                         sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
    """The timer of a safe-point cancel: after `timeout` seconds, an immediate stop. In process `sleep` is
    asyncio's; a durable run passes its workflow's (a durable timer, the same on every replay)."""
    await sleep(timeout)
    state.escalate(stop)


class CancelHandle:
    """Returned by `AgentRun.cancel()`; `await handle.wait()` tells how the run ended."""

    def __init__(self, state: CancelState, stop: Callable[[], None], timeout: float | None):
        self._state = state
        self._timer: asyncio.Task[None] | None = None
        if timeout is not None and not state.finished.is_set():
            self._timer = asyncio.ensure_future(escalate_after(state, timeout, stop))

    async def wait(self) -> str:
        """'cancelled', 'escalated' (a timeout forced an immediate stop) or 'finished' (it ended anyway)."""
        await self._state.finished.wait()
        if self._timer is not None:
            self._timer.cancel()
        return self._state.outcome
