"""A rule chain run shaped like an AgentRun, so the run registry drives both the same way.

The chain gets what the chat routes give it: an OpenAI chat request as message type `chat.completions`
with metadata `stream=true` (server/frames.py `chain_frames`), and with a session its metadata
(server/sessions.py `chain_session`). Its frames become events of the run's log:

    run_start {input}      text_delta {text}     reasoning_delta {text}
    tool {event}           the agent node's TOOL_CALL_START / TOOL_CALL_RESULT object
    final {content, usage} error {error}         cancelled {mode: "immediate"}
    warning {code, message}  an agent node's run reached maxStep (before final)
    node {chainId, nodeId, flow, relation, error, durationMs, ts, msg}     every node's IN and OUT
    model_call_end, retry, failover, breaker, tool_result {chain, node, ...}   its agent nodes' events

(the last two kinds: chain_trace.py; a durable run's come from its workflow and node activities, through
the store, chains/trace.py).

A chain has no safe points: it is cancelled at once (every branch), whatever mode is asked, and it
never stops to ask; it has no checkpoints, so it cannot be resumed. A durable one (`serve --temporal`) is
not cancelled at shutdown: the server stops following it (LeftRunning), the workers record its end.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..types import Usage
from .frames import RUN_CANCELLED, Done, Failed, Reasoning, Text, Tool, Trace, Warn, chain_frames

if TYPE_CHECKING:
    from ..chains import RuleEngine
    from .frames import ChainDispatcher


@dataclass(slots=True)
class ChainEvent:
    type: str
    run_id: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "run_id": self.run_id, **self.data}


@dataclass(slots=True)
class ChainResult:
    content: str
    stop_reason: str  # stop | cancelled
    usage: Usage = field(default_factory=Usage)
    messages: list[Any] = field(default_factory=list)  # a chain's agent nodes keep their own (sessions)


class ChainRunError(Exception):
    pass


class QueuedRun:
    """A run in its own task (`_task`) whose events come through `_queue` (None: the end) and whose end is
    `_result` or `_error`: iterate for events, `cancel()` (at once), await `result()`. ChainRun here, and
    runs_flows.FlowRun."""

    run_id: str
    _queue: asyncio.Queue[ChainEvent | None]
    _task: asyncio.Future[None]
    _result: ChainResult | None
    _error: ChainRunError | None

    async def __aiter__(self) -> Any:
        while (ev := await self._queue.get()) is not None:
            yield ev

    async def result(self) -> ChainResult:
        await asyncio.shield(self._task)
        if self._result is not None:
            return self._result
        assert self._error is not None
        raise self._error

    def cancel(self, mode: str = "immediate", *, timeout: float | None = None) -> None:
        if not self._task.done():
            self._task.cancel()


class ChainRun(QueuedRun):
    """`engine.run(chain_id, ...)` in its own task: iterate for events, `cancel()`, await `result()`."""

    def __init__(self, engine: RuleEngine, chain_id: str, body: dict[str, Any],
                 metadata: dict[str, str] | None = None, *, durable: ChainDispatcher | None = None):
        self.run_id = secrets.token_hex(8)
        self._queue: asyncio.Queue[ChainEvent | None] = asyncio.Queue()
        self._result: ChainResult | None = None
        self._error: ChainRunError | None = None
        self._cancelled = False
        self._durable = durable
        self._left = False  # a durable run the server stopped following at shutdown (still running)
        self.io: list[dict[str, Any]] = []  # its agent nodes' model and tool calls (replay/chains.py)
        self._frames = chain_frames(engine, chain_id, body, stream=True, metadata=metadata, durable=durable,
                                    run_id=self.run_id if durable is not None else None, trace=True)
        self._queue.put_nowait(ChainEvent("run_start", self.run_id, {"chain": chain_id, "input": body}))
        self._task = asyncio.ensure_future(self._drive())

    async def _drive(self) -> None:
        rid = self.run_id
        try:
            async for f in self._frames:
                if isinstance(f, Text):
                    self._queue.put_nowait(ChainEvent("text_delta", rid, {"text": f.text}))
                elif isinstance(f, Reasoning):
                    self._queue.put_nowait(ChainEvent("reasoning_delta", rid, {"text": f.text}))
                elif isinstance(f, Tool):
                    self._queue.put_nowait(ChainEvent("tool", rid, {"event": f.event}))
                elif isinstance(f, Trace):
                    data = dict(f.event)
                    kind = data.pop("type")
                    if kind == "io":  # the recording of its agent nodes (`runs export`): saved at its end
                        self.io.append(data)
                    else:
                        self._queue.put_nowait(ChainEvent(kind, rid, data))
                elif isinstance(f, Warn):  # as an agent run's `warning` event
                    self._queue.put_nowait(ChainEvent("warning", rid, f.to_dict()))
                elif isinstance(f, Done):
                    self._result = ChainResult(f.content, "stop", f.usage)
                    self._queue.put_nowait(ChainEvent("final", rid, {"content": f.content,
                                                                     "usage": f.usage.to_dict()}))
                elif isinstance(f, Failed) and f.code == RUN_CANCELLED:  # a durable run, from elsewhere
                    self._result = ChainResult("", "cancelled")
                    self._queue.put_nowait(ChainEvent("cancelled", rid, {"mode": "immediate"}))
                elif isinstance(f, Failed):
                    self._error = ChainRunError(f.message)
                    self._queue.put_nowait(ChainEvent("error", rid, {"error": f.message}))
        except asyncio.CancelledError:
            await self._frames.aclose()  # type: ignore[attr-defined]  # cancels every branch
            if self._durable is not None and self._durable.closing:
                self._left = True  # its workflow goes on: the workers record its end (chain_end.py)
            else:
                self._result = ChainResult("", "cancelled")
                self._queue.put_nowait(ChainEvent("cancelled", rid, {"mode": "immediate"}))
        finally:
            if self._result is None and self._error is None and not self._left:
                self._error = ChainRunError("the chain ended without an answer")
            self._queue.put_nowait(None)

    async def result(self) -> ChainResult:
        await asyncio.shield(self._task)
        if self._left:
            from .durable_runs import LeftRunning

            raise LeftRunning(f"chain run {self.run_id}: left to the workers (the server is shutting down)")
        return await super().result()
