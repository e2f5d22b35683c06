"""The end of a durable chain run of the runs API in the state store, whoever is there to see it.

A chain run started through the runs API of `serve --temporal` has a run record in the store, saved by the
server before the workflow starts. The server that follows the run logs its events and saves its end
(server/runs_chains.py, as for an in-process chain run). A server that shuts down stops following the run
instead of cancelling it (the run is the workers'); then the workflow's last activity
(`chainreact.chain.publish`, as an agent run's `chainreact.events.publish`) writes the end: the closing
event in the run's log (final, error or cancelled) and the final record. Which of the two writes it is
settled in the run record, through the store's compare-and-set (`expect_version`), so exactly one does:

    the workflow's end (`finish`)   record unmarked: marks it "ended" (the end, for the following server)
                                    record marked "left": writes the end
    the server leaving (`leave`)    record unmarked: marks it "left"
                                    record marked "ended": writes the end (the one marked)

The following server's own end overwrites an "ended" mark. The frames log of a streamed run
(chain_plan.frames_log) is closed by the workflow's end too (its reader closes it as well when it
reads it to the end).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .chain_plan import JSON, frames_log
from .records import durable_record

if TYPE_CHECKING:
    from ..state.base import RunRecord, Store

log = logging.getLogger("chainreact.durable")

LEFT, ENDED = "left", "ended"  # the marks of a record (module doc)
TRIES = 5  # compare-and-set rounds before giving up (each lost round means the other side wrote)


async def finish(store: Store, run_id: str, end: JSON, *, record: bool, streamed: bool) -> None:
    """The workflow's side: `end` ({"status", "content", "usage"} or {"status", "error"}) reached the
    store; `record`: the run has a record of the runs API; `streamed`: its frames log may exist."""
    if streamed:
        await close_frames_log(store, run_id, end["status"])
    if not record:
        return
    for _ in range(TRIES):
        rec = await store.get_run(run_id)
        if rec is None or rec.status != "running" or not isinstance(rec.snapshot, dict):
            return  # ended already (the following server), or no record of ours
        snap = rec.snapshot
        if snap.get(LEFT):
            await _write_end(store, run_id, snap, end)
            return
        if await _mark(store, rec, {**snap, ENDED: end}):
            return
    log.warning("chain run %s: its end was not recorded (the record kept changing)", run_id)


async def leave(store: Store, run_id: str) -> None:
    """The leaving server's side: nobody here follows run `run_id` any more."""
    for _ in range(TRIES):
        rec = await store.get_run(run_id)
        if rec is None or rec.status != "running" or not isinstance(rec.snapshot, dict):
            return
        snap = rec.snapshot
        if snap.get(ENDED):
            await _write_end(store, run_id, snap, snap[ENDED])
            return
        if await _mark(store, rec, {**snap, LEFT: True}):
            return
    log.warning("chain run %s: could not mark it left to the workers", run_id)


async def close_frames_log(store: Store, run_id: str, status: str) -> None:
    """Mark a streamed run's frames log stopped (when it exists: appending made it a record)."""
    log_id = frames_log(run_id)
    rec = await store.get_run(log_id)
    if rec is not None and rec.status == "running":
        await store.save_run(log_id, {"frames_of": run_id}, status=status)


async def _mark(store: Store, rec: RunRecord, snap: JSON) -> bool:
    from ..state import RunConflictError

    try:
        await store.save_run(rec.run_id, snap, status="running", agent=rec.agent, session=rec.session,
                             expect_version=rec.version)
    except RunConflictError:
        return False  # the other side wrote meanwhile: look again
    return True


async def _write_end(store: Store, run_id: str, snap: JSON, end: JSON) -> None:
    """The closing event, then the final record (a follower that sees the status has every event)."""
    status = end["status"]
    extra = {k: v for k, v in (snap.get("extra") or {}).items() if k not in ("content", "error")}
    if status == "done":
        event: JSON = {"type": "final", "run_id": run_id, "content": end.get("content") or "",
                       "usage": end.get("usage") or {}}
        extra.update(content=end.get("content") or "", stop_reason="stop")
    elif status == "cancelled":
        event = {"type": "cancelled", "run_id": run_id, "mode": "immediate"}
        extra.update(content="", stop_reason="cancelled")
    else:
        event = {"type": "error", "run_id": run_id, "error": end.get("error") or "the chain failed"}
        extra["error"] = event["error"]
    await store.append_events(run_id, [(event["type"], event)])
    await store.save_run(run_id, durable_record(snap.get("workflow_id") or run_id, extra=extra),
                         status=status)
