"""A durable agent run as the server's run registry drives it (`serve --temporal`, durable_dispatch.py):
its events read from the state store's event log, where the workers write them, its cancel sent to its
workflow; and the filter that keeps a retried model call's text from being shown twice in a chat stream."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from ..agent.recording import IO_EVENT
from ..types import Cancelled, Event, Final, Interrupted

if TYPE_CHECKING:
    from ..agent.result import RunResult
    from ..durable import DurableAgent
    from ..durable.client import DurableRun
    from ..state.base import Store

log = logging.getLogger("chainreact.server.durable")

STOP_EVENTS = ("final", "error", "cancelled", "interrupted")
FORMAT = "temporal"  # the `format` of the run records of durable runs (the workers write the same)
POLL_MIN, POLL_MAX = 0.02, 0.2  # seconds between reads of the event log: fast while events come
SETTLE = 10.0  # seconds to wait for an interrupt's events, which the workers write just after it


class LeftRunning(Exception):
    """The server stopped following a durable run (shutting down); the run goes on in the workers."""

class AgentDispatcher(Protocol):
    """What a durable agent run needs of the server's dispatcher (durable_dispatch.TemporalDispatcher)."""

    @property
    def store(self) -> Store: ...

    @property
    def closing(self) -> bool: ...

    def agent(self, name: str) -> DurableAgent: ...

    def spawn(self, coro: Coroutine[Any, Any, None], /) -> object: ...


class DurableAgentRun:
    """A durable run in the shape the registry drives (chainreact.agent.AgentRun's): iterate for its events,
    `result()`, `cancel(mode, timeout=)`. The events come from the state store's log, where the workers
    write them; `new` starts the workflow (after saving the run's record), else an existing run is followed
    from event id `after`."""

    def __init__(self, dispatcher: AgentDispatcher, name: str, run_id: str, *,
                 new: dict[str, Any] | None = None, after: int = 0):
        self.d = dispatcher
        self.name = name
        self.run_id = run_id
        self.new = new
        self.after = after
        self.stop: str | None = None  # the stop event's type, once seen
        self.on_events: Callable[[int], None] | None = None  # new events are in the log, up to this id
        self._run: DurableRun | None = None
        self._ready = asyncio.Event()
        self._leave = asyncio.Event()
        self._outcome: asyncio.Task[RunResult] | None = None

    async def _begin(self) -> DurableRun:
        try:
            if self.new is not None:
                n = self.new
                extra = {"target": n["target"], "kind": "agent"}
                await self.d.store.save_run(self.run_id, {"format": FORMAT, "workflow_id": self.run_id,
                                                          "extra": extra},
                                            status="running", agent=self.name, session=n["session"])
                self._run = await self.d.agent(self.name).start(n["input"], stream=n["stream"],
                                                                run_id=self.run_id)
            else:
                self._run = await self.d.agent(self.name).get(self.run_id)
        finally:
            self._ready.set()
        return self._run

    async def __aiter__(self) -> AsyncIterator[Event]:
        from ..durable.codec import event_from_dict

        run = await self._begin()
        outcome = self._outcome = asyncio.ensure_future(run.result())
        leave = asyncio.ensure_future(self._leave.wait())
        store, after, poll, settled, waited = self.d.store, self.after, POLL_MIN, False, 0.0
        replay = RetriedStream()
        try:
            while not self._leave.is_set():
                batch = await store.events(self.run_id, after=after, limit=500)
                for rec in batch:
                    after = rec.id
                    if rec.type == IO_EVENT:  # the run's recording (`runs export`), not an event of it
                        continue
                    data = replay.filter(rec.type, rec.data) if isinstance(rec.data, dict) else None
                    ev = event_from_dict(data) if data is not None else None  # typed, for chat
                    if ev is not None:
                        yield ev
                    if rec.type in STOP_EVENTS:
                        self.stop = rec.type
                if batch:
                    if self.on_events is not None:
                        self.on_events(after)
                    if self.stop is not None:
                        return
                    poll = POLL_MIN
                    continue
                if outcome.done():
                    # The workflow's outcome is known. The workers wrote its last events before a run's
                    # end, but an interrupt's just after it: wait for those when the workers log at all.
                    if not settled and _interrupted(outcome) and after > self.after and waited < SETTLE:
                        await asyncio.sleep(POLL_MIN)
                        waited += POLL_MIN
                        continue
                    if settled:
                        break
                    settled = True  # one more read, then the events are complete
                    continue
                await asyncio.wait((outcome, leave), timeout=poll)
                poll = min(poll * 2, POLL_MAX)
        finally:
            leave.cancel()
        if self._leave.is_set():
            outcome.cancel()
            return
        # No stop event in the log (workers without the store, or a failure before the loop started): the
        # end comes from the workflow's result; it goes to the log too, for the runs API's followers.
        if outcome.exception() is None:
            last = closing_event(outcome.result(), self.run_id, self.name)
            self.stop = last.type
            ids = await store.append_events(self.run_id, [(last.type, last.to_dict())])
            if self.on_events is not None:
                self.on_events(ids[-1])
            yield last

    async def result(self) -> RunResult:
        if self._leave.is_set():
            raise LeftRunning(f"run {self.run_id}: left to the workers (the server is shutting down)")
        assert self._outcome is not None, "iterate the run first"
        return await self._outcome

    def cancel(self, mode: str = "immediate", *, timeout: float | None = None) -> None:
        from ..agent.cancel import CancelMode

        m = CancelMode.parse(mode)  # unknown modes: ValueError, before anything is sent
        if self.d.closing and m & CancelMode.IMMEDIATE:
            self._leave.set()  # shutdown: the workers finish the run, this server stops following it
            return
        self.d.spawn(self._cancel(str(mode), timeout))

    async def send_cancel(self, mode: str, timeout: float | None) -> None:
        """The cancel, sent to the workflow (once it has started; nothing when it could not start)."""
        await self._ready.wait()
        if self._run is not None:
            await self._run.cancel(mode, timeout=timeout)

    async def _cancel(self, mode: str, timeout: float | None) -> None:
        try:
            await self.send_cancel(mode, timeout)
        except Exception:
            log.exception("run %s: cancel (%s) failed", self.run_id, mode)


class RetriedStream:
    """The live deltas of a durable run for a reader that cannot take text back (a chat stream): a model
    call retried after it streamed part of its text starts over with a `stream_reset` event. Deltas of
    superseded attempts are dropped (durable.client.StreamAttempts, as `DurableRun.events()`), and the new
    attempt's text is given only past what the reader has already seen of the step: a retry that streams
    the same text again (the usual case: same request) adds nothing twice. A retry whose text differs goes
    on from where it departs from the shown text (what was shown cannot be taken back; the run's final
    message, and the runs API's event log with its `stream_reset`, have the whole retried answer)."""

    DELTAS = ("text_delta", "reasoning_delta")

    def __init__(self) -> None:
        from ..durable.client import StreamAttempts

        self.attempts = StreamAttempts()
        self.shown: dict[tuple[Any, ...], str] = {}  # (path, step, delta type) -> text given so far
        self.skip: dict[tuple[Any, ...], str] = {}  # ... -> shown text the retried attempt has yet to pass

    def filter(self, type: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """`data` to give on (possibly with a shorter `text`), or None to drop it."""
        if not self.attempts.keep(type, data):
            return None
        if type == "stream_reset":
            step = self.attempts.key(data)
            for kind in self.DELTAS:
                if self.shown.get((*step, kind)):
                    self.skip[(*step, kind)] = self.shown[(*step, kind)]
            return None  # no chat frame: the runs API reads the log itself, where the reset stays
        if type not in self.DELTAS:
            return data
        key = (*self.attempts.key(data), type)
        text = str(data.get("text") or "")
        pending = self.skip.get(key)
        if pending:
            n = 0
            while n < len(text) and n < len(pending) and text[n] == pending[n]:
                n += 1
            if n == len(text) and n < len(pending):
                self.skip[key] = pending[n:]
                return None  # still replaying what the reader has
            del self.skip[key]
            text = text[n:]
            if not text:
                return None
            data = {**data, "text": text}
        self.shown[key] = self.shown.get(key, "") + text
        return data


def _interrupted(outcome: asyncio.Task[Any]) -> bool:
    return outcome.exception() is None and getattr(outcome.result(), "stop_reason", "") == "interrupted"


def closing_event(result: RunResult, run_id: str, agent: str) -> Event:
    """The last event of a run, from its RunResult (when the workers logged none)."""
    from ..durable.codec import question_to_dict

    common: dict[str, Any] = {"run_id": run_id, "agent": agent, "step": result.steps, "path": (agent,)}
    if result.stop_reason == "cancelled":
        return Cancelled(**common, mode="immediate", messages=list(result.messages))
    if result.stop_reason == "interrupted" and result.interruption is not None:
        return Interrupted(**common, questions=[question_to_dict(q) for q in result.interruption.questions],
                           pending=list(result.interruption.pending))
    return Final(**common, content=result.content, usage=result.usage, stop_reason=result.stop_reason,
                 reasoning=result.reasoning)
