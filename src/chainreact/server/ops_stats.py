"""What the served agents do, reported to observers: runs, model calls and tool calls, with outcome and time.

The catalog gives every agent it builds one `ObserverMiddleware` bound to its `observers` list; the
metrics module (server/metrics.py) adds its observer to that list when the app is created. The list is
read at each call, so observers added after the agents were built still see every run. No observer: the
hooks cost one list check per call.

Outcomes: runs `ok | error | cancelled | interrupted | closed`; model calls `ok | error | cancelled`;
tool calls `ok | error` (the tool answered with an error result) `| exception | cancelled | interrupted`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

from ..agent.interrupt import ToolInterrupt
from ..agent.middleware import AgentContext, Middleware, ModelFn, RunState, ToolCallInfo, ToolFn
from ..tools.base import ToolOutput
from ..types import StreamItem

if TYPE_CHECKING:
    from ..agent.result import RunResult
    from ..llm.request import ModelRequest


class RunObserver(Protocol):
    def run_ended(self, agent: str, outcome: str, seconds: float) -> None: ...

    def model_call(self, model: str, outcome: str, seconds: float) -> None: ...

    def tool_call(self, tool: str, outcome: str, seconds: float) -> None: ...


# run id -> (agent name, start): one entry per run in flight, removed when it ends.
_Started = dict[str, tuple[str, float]]


def _cancelled(e: BaseException) -> bool:
    return isinstance(e, asyncio.CancelledError) or type(e).__name__ == "_RunCancelled"


class ObserverMiddleware(Middleware):
    durable = "worker"  # times runs in this process: not in durable workflow code (wrap hooks only)

    def __init__(self, observers: list[RunObserver], name: str = ""):
        self.observers: list[RunObserver] = observers
        self.name = name  # the id the agent is served under (else its own name)
        self._started: _Started = {}

    async def before_agent(self, ctx: AgentContext) -> None:
        if self.observers:
            self._started[ctx.run_id] = (self.name or ctx.agent, time.perf_counter())

    def _end(self, run_id: str, outcome: str) -> None:
        started = self._started.pop(run_id, None)
        if started is None:
            return
        seconds = time.perf_counter() - started[1]
        for o in self.observers:
            o.run_ended(started[0], outcome, seconds)

    async def after_agent(self, state: RunState, result: RunResult) -> None:
        self._end(state.run_id, "ok")

    async def on_agent_error(self, state: RunState | None, error: BaseException | None) -> None:
        # Without a state the run failed before it had one: only attributable when it is the only one.
        if state is not None:
            run_ids = [state.run_id]
        else:
            run_ids = list(self._started) if len(self._started) == 1 else []
        outcome = ("interrupted" if error is None else "closed" if isinstance(error, GeneratorExit)
                   else "cancelled" if _cancelled(error) else "error")
        for r in run_ids:
            self._end(r, outcome)

    def wrap_model(self, call: ModelFn) -> ModelFn:
        observers = self.observers

        async def observed(req: ModelRequest) -> AsyncIterator[StreamItem]:
            if not observers:
                async for item in call(req):
                    yield item
                return
            start, outcome = time.perf_counter(), "error"
            try:
                async for item in call(req):
                    yield item
                outcome = "ok"
            except GeneratorExit:
                outcome = "cancelled"
                raise
            except BaseException as e:
                outcome = "cancelled" if _cancelled(e) else "error"
                raise
            finally:
                seconds = time.perf_counter() - start
                for o in observers:
                    o.model_call(req.model, outcome, seconds)

        return observed

    def wrap_tool_call(self, call: ToolFn, info: ToolCallInfo) -> ToolFn:
        observers = self.observers
        if not observers:
            return call

        async def observed(args: dict[str, Any]) -> ToolOutput:
            start, outcome = time.perf_counter(), "exception"
            try:
                out = await call(args)
                outcome = "error" if out.is_error else "ok"
                return out
            except BaseException as e:
                outcome = ("interrupted" if isinstance(e, ToolInterrupt) else "cancelled" if _cancelled(e)
                           else "exception")
                raise
            finally:
                seconds = time.perf_counter() - start
                for o in observers:
                    o.tool_call(info.name, outcome, seconds)

        return observed
