"""Recording a durable flow turn for `chainreact runs export` (flows/recording.py's records).

In process, a turn writes its records to the session's log (`flow:<flow id>:<session>`) in one write at
its end. A durable turn's workflow writes nothing: its activities append the records to the turn's own log
(its events' log, whose readers skip `io` events: durable.client.tail_log) as they are made, and the save
activity, once the session is saved, copies them to the session's log followed by the `turn` record: one
write per turn there, as in process, and a turn that fails leaves nothing there (nor a session record,
which a first append would make). A flow whose `record` is off records nothing.

    chainreact.flow.load        {"kind": "reads", ...}   the session read (get_run)
    chainreact.flow.node.start  {"kind": "reads", ...}   the memory window, its summary's model call, the
                                and a summarizer's slot   long-term recall, an answered question's run
    chainreact.flow.node.model  {"kind": "slot"} (the run's first model call of the turn), {"kind": "model"}
                                with the attempt that got its response
    chainreact.flow.node.tool   {"kind": "tool"}, a collaborator's records with it; once the call is done
    chainreact.flow.chain       a rule chain's agent nodes
    chainreact.flow.node.finish {"kind": "reads"} and the memory extractor's records
    chainreact.flow.save        the records copied, then {"kind": "turn", ...}: the turn's input,
                                                          messages, output, next node and end

Every record carries the turn's id (`turn_id`, its log's id): replay/flows.py's flow_cassette skips what a
save run again copied again, and takes the turn's reads from the `reads` parts (one per activity; a
retried activity's later part). A node run's slot id is derived from its run id (durable/recording.py), so
every worker and attempt names it alike.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

from temporalio import activity

from ..agent.plan import plan_hook
from ..agent.recording import IO_EVENT, IORecorder, Record, redact
from ..state.reads import ReadRecorder
from .codec import JSON

if TYPE_CHECKING:
    from ..flows.engine import Flow
    from ..state.base import Store


class TurnTape:
    """The records one activity of a durable turn adds to the turn's log, tagged with the turn's id."""

    def __init__(self, flow: Flow, store: Store, req: JSON):
        self.on = bool(flow.record)
        self.store = store
        self.key = self.turn_id = req["log"]
        self.records: list[Record] = []

    def add(self, *records: Record) -> None:
        if self.on:
            # Key-shaped strings redacted, as IORecorder.emit does in process (the agents' keys were).
            self.records += [{**redact(r), "turn_id": self.turn_id} for r in records]

    async def write(self) -> None:
        if self.records:
            batch, self.records = self.records, []
            await self.store.append_events(self.key, [(IO_EVENT, r) for r in batch])


@contextlib.asynccontextmanager
async def recording_reads(flow: Flow, store: Store, req: JSON) -> AsyncIterator[Store]:
    """Around an activity's work: the store to read through (its reads recorded) with every agent planned
    meanwhile recorded (a memory summary's model call, a rule chain's agent nodes). Written to the turn's
    log once the work is done; a failed attempt writes nothing."""
    if not flow.record:
        yield store
        return
    reads = ReadRecorder(store)
    rec = IORecorder()
    try:
        with plan_hook(rec):
            yield cast("Store", reads)  # a ReadRecorder proxies the store
    finally:
        rec.close()
    tape = TurnTape(flow, store, req)
    tape.add(*rec.take())
    if reads.reads:
        tape.add({"kind": "reads", "activity": activity.info().activity_id, "reads": reads.reads})
    await tape.write()


def turn_fields(req: JSON, messages: list[JSON], output: Any, end: JSON) -> JSON:
    """What the save activity records of the turn (the workflow's request, its messages and output, the
    `turn_end` event)."""
    return {"text": req["text"], "user": req.get("user"), "group": req.get("group"), "output": output,
            "messages": [{"node": m.get("node"), "content": m.get("content")} for m in messages],
            "end": {"current": end.get("current"), "ended": end.get("ended")}}


async def record_turn(flow: Flow, store: Store, req: JSON) -> None:
    """Once the session is saved: the turn's records from its log, then its `turn` record
    (flows/recording.py's), into the session's log in one write."""
    from ..flows.recording import turn_input, turn_record

    t = req.get("recording")
    if not flow.record or not isinstance(t, dict):  # (no `recording`: a turn started by an older workflow)
        return
    records: list[Any] = []
    after = 0
    while batch := await store.events(req["log"], after=after, limit=1000):
        records += [e.data for e in batch if e.type == IO_EVENT and isinstance(e.data, dict)]
        after = batch[-1].id
    turn = turn_record(flow, turn_input(req["session"], t["text"], t.get("user"), t.get("group")), [],
                       list(t.get("messages") or []), t.get("output"), dict(t.get("end") or {}))
    tape = TurnTape(flow, store, req)
    tape.add(turn)
    records += tape.records
    await store.append_events(flow.session_key(req["session"]), [(IO_EVENT, r) for r in records])


__all__ = ["TurnTape", "record_turn", "recording_reads", "turn_fields"]
