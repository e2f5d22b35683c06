"""AgentRun: one run driven in its own task (iterate it for events, cancel it, await its result), and the
background event loop behind the sync facades."""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from ..types import Cancelled, Event
from .cancel import CancelHandle, CancelMode, CancelState
from .interrupt import Resume
from .loop import ReactLoop
from .plan import RunPlan, planning_error
from .result import RunResult

T = TypeVar("T")


class AgentRun:
    """A run driven in its own task. Iterate it for events; `cancel()`; `await result()`.

    `make_plan` is awaited inside the task (resolving tools may connect MCP servers), so even a run that
    fails or is cancelled before its first step reports it as an event."""

    def __init__(self, name: str, make_plan: Callable[[], Awaitable[RunPlan]], data: Any, stream: bool,
                 resume: Resume | None = None):
        self._name = name
        self._resume = resume
        self._cancel = CancelState()
        self._loop: ReactLoop | None = None
        self._stream = stream
        self._run_id = (resume.run_id if resume is not None else None) or secrets.token_hex(8)
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._emit: Callable[[Event | None], None] = self._queue.put_nowait
        self._error: BaseException | None = None
        self._result: RunResult | None = None
        self._task = asyncio.ensure_future(self._drive(make_plan, data))

    async def _drive(self, make_plan: Callable[[], Awaitable[RunPlan]], data: Any) -> None:
        try:
            try:
                plan = await make_plan()
            except Exception as e:
                self._emit(planning_error(self._name, e, self._run_id))
                raise
            self._loop = ReactLoop(plan, streaming=self._stream, cancel=self._cancel, run_id=self._run_id)
            emit = self._emit
            async for ev in self._loop.events(data, self._resume):
                emit(ev)
        except asyncio.CancelledError:
            if not self._cancel.requested:
                raise
            # Cancelled before the loop could answer it itself (e.g. while the plan was being made).
            if self._loop is not None:
                self._emit(self._loop._cancelled())
            else:
                self._result = RunResult(content="", messages=[], stop_reason="cancelled",
                                         metadata={"run_id": self._run_id, "agent": self._name})
                self._emit(Cancelled(run_id=self._run_id, agent=self._name, seq=1,
                                     path=(self._name,), mode="immediate"))
        except Exception as e:
            self._error = e
        finally:
            if self._loop is not None and self._loop.result is not None:
                self._result = self._loop.result
            if self._result is not None and self._result.stop_reason == "cancelled":
                self._cancel.outcome = "escalated" if self._cancel.escalated else "cancelled"
            else:
                self._cancel.outcome = "finished"
            self._cancel.finished.set()
            self._emit(None)
            if self._emit != self._queue.put_nowait:
                self._queue.put_nowait(None)  # an iterator (after `forward`) ends rather than waits

    @property
    def run_id(self) -> str:
        return self._run_id

    def forward(self, fn: Callable[[Event | None], None]) -> None:
        """Hand every event to `fn` as the run produces it (in the run's task, in order; None after the
        last) instead of queueing it for iteration. For a consumer that only fans events out (the
        server's run registry) this saves a task switch per event. Call it before the run's task first
        runs, i.e. right after `Agent.start()`; iterating the run then yields no event. Errors
        surface from `result()`."""
        self._emit = fn

    async def __aiter__(self) -> AsyncIterator[Event]:
        while (ev := await self._queue.get()) is not None:
            yield ev
        if self._error is not None:
            raise self._error

    async def result(self) -> RunResult:
        try:
            await asyncio.shield(self._task)
        except asyncio.CancelledError:
            if not self._task.done():
                raise
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def cancel(self, mode: CancelMode | str = CancelMode.IMMEDIATE, *, timeout: float | None = None
               ) -> CancelHandle:
        """Ask the run to stop at the first safe point of `mode` (flags combine; see cancel.py)."""
        def stop() -> None:
            if not self._task.done():
                self._task.cancel()

        self._cancel.request(CancelMode.parse(mode), stop)
        return CancelHandle(self._cancel, stop, timeout)


_sync_loop: asyncio.AbstractEventLoop | None = None
_sync_lock = threading.Lock()


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on one background event loop per process (connection pools survive between calls)."""
    global _sync_loop
    with _sync_lock:
        if _sync_loop is None:
            _sync_loop = asyncio.new_event_loop()
            threading.Thread(target=_sync_loop.run_forever, name="chainreact-sync", daemon=True).start()
    return asyncio.run_coroutine_threadsafe(coro, _sync_loop).result()
