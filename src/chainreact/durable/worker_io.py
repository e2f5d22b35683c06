"""The worker's side of an agent run's I/O, shared by every activity that runs one (an agent run's
`chainreact.agent.model` / `.tool`, a flow node's `chainreact.flow.node.model` / `.tool`) and by the chain
node activity: one model call, one tool call, the live events they write to the state store's log, the
heartbeats that keep them alive.

    log = Publisher(store, log_id)                   # batched appends (nothing without a store)
    out = await model_call(plan, req, log, ...)      # {"response", "events"}; errors as ApplicationError
    out = await tool_call(plan, tool, req, log, entry)   # a ToolOutput (a failure is a result)

`req` is what the workflow sent (workflow_io.ActivityIO): `run_id`, `agent`, `step`, `path`, `heartbeat`,
and the call's own fields. Live events are stamped with the run's ids (seq 0: the loop numbers only its
own events) and go through `entry`, which makes them what the log holds (an agent run's events as they
are; a flow turn's wrapped as its FlowEvents).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..agent.interrupt import ANSWER
from ..agent.plan import RunPlan
from ..errors import ModelError
from ..tools.base import Tool, ToolContext, ToolOutput
from ..types import Event, ModelResponse, ReasoningChunk, TextChunk
from .codec import JSON, call_from_dict, client_event_to_dict, messages_from_list, response_to_dict

if TYPE_CHECKING:
    from ..state.base import Store

T = TypeVar("T")

FLUSH_EVERY = 0.05  # seconds: live events are appended in small batches, not one write per token
STREAM_RESET = "stream_reset"  # a retried model attempt starts over: drop the step's streamed text so far


class Publisher:
    """Appends events to one log in the state store, batched (nothing without a store). Each event is a
    dict whose `key` field is its type (an agent event's "type", a flow event's "event")."""

    def __init__(self, store: Store | None, log_id: str, key: str = "type"):
        self.store = store
        self.run_id = log_id
        self.key = key
        self.pending: list[tuple[str, Any]] = []
        self._last = time.monotonic()

    def add(self, d: JSON) -> None:
        if self.store is not None:
            self.pending.append((str(d[self.key]), d))

    def add_as(self, type: str, data: Any) -> None:
        """An event whose data does not name its type (an `io` record)."""
        if self.store is not None:
            self.pending.append((type, data))

    async def maybe_flush(self) -> None:
        if self.pending and time.monotonic() - self._last >= FLUSH_EVERY:
            await self.flush()

    async def flush(self) -> None:
        self._last = time.monotonic()
        if self.pending and self.store is not None:
            batch, self.pending = self.pending, []
            await self.store.append_events(self.run_id, batch)


@contextlib.asynccontextmanager
async def heartbeating(every: float) -> AsyncIterator[None]:
    """Heartbeat while the activity runs: a dead worker is noticed, a cancel request is delivered."""

    async def beat() -> None:
        # Not at once: a heartbeat is a server write, and most calls end before the first one is due.
        while True:
            await asyncio.sleep(every)
            activity.heartbeat()

    task = asyncio.ensure_future(beat())
    try:
        yield
    finally:
        task.cancel()


async def tick_while(work: asyncio.Future[T], tick: Callable[[], Awaitable[None]], *,
                     every: float | None = FLUSH_EVERY, on_cancel: Callable[[], None] | None = None) -> T:
    """`work`'s result, with `tick()` every `every` seconds while it runs (`None`: only when it ends), so
    what it tells meanwhile is written as it comes. Cancelled: `work` is cancelled (then `on_cancel()`) and
    its own cleanup awaited before the cancel goes on."""
    try:
        while not work.done():
            await asyncio.wait((work,), timeout=every)
            await tick()
        return work.result()
    except asyncio.CancelledError:
        work.cancel()
        if on_cancel is not None:
            on_cancel()
        await asyncio.wait((work,))
        raise
    finally:
        if not work.done():
            work.cancel()


def stamp(d: JSON, req: JSON) -> JSON:
    """A live event with the ids of the run it belongs to."""
    agent = req.get("agent", "")
    return {**d, "run_id": req["run_id"], "agent": agent, "step": req.get("step", 0), "seq": 0,
            "path": list(req.get("path") or [agent])}


def _same(d: JSON) -> JSON:
    return d


async def model_call(plan: RunPlan, req: JSON, log: Publisher, *, stream: bool, live: bool,
                     retried_here: bool, entry: Callable[[JSON], JSON] = _same,
                     record: Callable[[ModelResponse], None] | None = None) -> JSON:
    """One model call through `plan.model`; with `live`, its text and reasoning deltas go to `log` as they
    come. `retried_here`: this activity's retry policy retries the call (an agent run: the worker turned
    the client's own retries off), so an attempt after the first starts with a `stream_reset` event, each
    delta says its attempt, and an error is retried when the client would retry it (with its Retry-After);
    otherwise (a flow node: its client retried already) an error fails the call for good. `record(response)`
    is called once the attempt has its response (a failed attempt records nothing), before the call's last
    events are written."""
    attempt = activity.info().attempt
    if live and retried_here and attempt > 1:
        # An earlier attempt may have streamed part of its text: readers drop it (docs/durable.md).
        log.add(entry(stamp({"type": STREAM_RESET, "attempt": attempt}, req)))
    side: list[Event] = []
    response: JSON | None = None
    got: Any = None
    delivered = 0
    async with heartbeating(float(req.get("heartbeat", 10.0))):
        await log.flush()
        try:
            items = plan.model(messages_from_list(req["messages"]), req.get("tools"), stream=stream,
                               on_event=side.append)
            async for item in items:
                if isinstance(item, TextChunk | ReasoningChunk):
                    delivered += 1
                    if live and item.text:
                        d: JSON = {"type": "text_delta" if isinstance(item, TextChunk) else "reasoning_delta",
                                   "text": item.text}
                        if retried_here:
                            d["attempt"] = attempt
                        log.add(entry(stamp(d, req)))
                        await log.maybe_flush()
                elif hasattr(item, "message"):
                    response = response_to_dict(item)  # type: ignore[arg-type]
                    got = item
        except ModelError as e:
            await log.flush()
            delay = timedelta(seconds=e.retry_after) if e.retry_after and retried_here else None
            # from None: the client's error chain can be long (and Temporal serialises all of it)
            raise ApplicationError(str(e), type=type(e).__name__,
                                   non_retryable=not (retried_here and _retryable(e, delivered)),
                                   next_retry_delay=delay) from None
        if record is not None and isinstance(got, ModelResponse):
            record(got)
        await log.flush()
    if response is None:
        raise ApplicationError("the model call ended without a response", type="ModelError",
                               non_retryable=not retried_here)
    return {"response": response, "events": [client_event_to_dict(e) for e in side]}


def _retryable(e: ModelError, delivered: int) -> bool:
    """The client refuses to retry a stream that failed after its first chunk (the caller saw part of the
    answer). A durable run may: the next attempt starts with a `stream_reset` event, so readers drop the
    partial text. Retried then when the underlying failure is retryable (a cut connection, a 5xx)."""
    if e.retryable:
        return True
    # The client's failure as it was, before the "stream failed after N items" wrapper (its cause, or its
    # context when a failover layer re-raised the wrapper from itself).
    inner = (e.__cause__, e.__context__)
    return bool(delivered) and any(isinstance(x, ModelError) and x is not e and x.retryable for x in inner)


async def tool_call(plan: RunPlan, tool: Tool, req: JSON, log: Publisher,
                    entry: Callable[[Event], JSON | None]) -> ToolOutput:
    """One tool call through `plan.call_tool` (wrap_tool_call, the tool's timeout, errors as results). What
    the tool tells meanwhile (live output, a nested agent's events) goes to `log` through `entry`, every
    FLUSH_EVERY seconds. The tool's context has the run's ids: the same on a retried attempt, so its
    `idempotency_key` is too."""
    call = call_from_dict(req["call"])
    told: list[Event] = []
    agent = req["agent"]
    ctx = ToolContext(call.id, req["run_id"], agent, tuple(req.get("path") or (agent,)),
                      messages_from_list(req.get("history") or []), told.append, step=int(req.get("step", 0)))
    if "answer" in req:
        ctx.state[ANSWER] = req["answer"]

    async def drain() -> None:
        for ev in told:
            d = entry(ev)
            if d is not None:
                log.add(d)
        told.clear()
        await log.flush()

    async with heartbeating(float(req.get("heartbeat", 10.0))):
        await log.flush()
        work = asyncio.ensure_future(plan.call_tool(call, tool, dict(req.get("args") or {}), ctx))
        return await tick_while(work, drain)


def unavailable(name: str) -> JSON:
    """A tool call's result when this worker has no such tool (the document changed under a run in
    flight, docs/durable.md "Versioning"): an error for the model."""
    return {"content": f"Error: tool {name!r} is not available on this worker", "is_error": True}


def tool_spec(t: Tool) -> JSON:
    """What the workflow's loop knows of a tool (workflow_io.RemoteTool)."""
    return {"name": t.name, "description": t.description, "parameters": t.parameters, "timeout": t.timeout,
            "history": bool(getattr(t, "full_history", False))}
