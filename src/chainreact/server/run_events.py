"""A live run's events on their way out: to the in-process listeners (the chat routes) and, for a persisted
run, to the store's event log in batches (runs_registry.py drives both)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..types import Event

if TYPE_CHECKING:
    from ..state.base import Store

log = logging.getLogger("chainreact.server.runs")


class _Live(Protocol):
    """What the writer needs of a LiveRun: its id, the last event id written, and the wake-up of its
    followers."""

    run_id: str
    last_id: int

    def notify(self) -> None: ...


class EventWriter:
    """Appends a run's events to the store, batching whatever arrived while the previous write was in
    flight (a token stream becomes a few writes, not one per token)."""

    def __init__(self, store: Store, live: _Live):
        self.store, self.live = store, live
        self.pending: list[tuple[str, Any]] = []
        self.task: asyncio.Task[None] | None = None

    def add(self, ev: Event) -> None:
        self.pending.append((ev.type, ev.to_dict()))
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        while self.pending:
            batch, self.pending = self.pending, []
            try:
                ids = await self.store.append_events(self.live.run_id, batch)
            except Exception:  # the run goes on; its log has a hole the status still closes
                log.exception("run %s: could not append %d events", self.live.run_id, len(batch))
                continue
            self.live.last_id = ids[-1]
            self.live.notify()

    async def close(self) -> None:
        if self.task is not None:
            await self.task
        await self._flush()


def fan_out_event(listeners: list[asyncio.Queue[Event | None]], writer: EventWriter | None,
             keep: Callable[[Event], bool] | None, ev: Event | None) -> None:
    """One event of a run to its in-process listeners (those `keep` lets through) and, persisted runs,
    to the store's event log."""
    if ev is None:
        return  # the end: listeners get theirs once the run's end is saved (_drive)
    if keep is None or keep(ev):
        for q in listeners:
            q.put_nowait(ev)
    if writer is not None:
        writer.add(ev)
