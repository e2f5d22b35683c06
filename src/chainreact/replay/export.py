"""`chainreact runs export`: a run kept in the state store, as a cassette (cassette.py).

A run's recording (agent/recording.py: its model requests and responses and its tool calls) is in its last
snapshot's `extra.io` (agent runs, the server's chain runs) or its `io` events (flow turns, eval cases,
durable agent runs and flow turns); its checkpoint (a durable run's record's `result`, or its final
event) holds the answer. Keys were redacted when the records were made; the export redacts once more what
the exporting process knows to be secret (the values of environment variables named like *KEY*, *TOKEN*,
*SECRET*, *PASSWORD*, and `redact=` values).
"""

from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING, Any

from ..agent.recording import IO_EVENT, redact
from ..state.errors import RunNotFoundError, StateError
from .cassette import FORMAT, build_agents

if TYPE_CHECKING:
    from ..state.base import Store

_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def env_secrets() -> list[str]:
    return [v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 8]


async def run_events(store: Store, run_id: str) -> list[Any]:
    out: list[Any] = []
    after = 0
    while True:
        batch = await store.events(run_id, after=after, limit=1000)
        if not batch:
            return out
        out += batch
        after = batch[-1].id


async def export_run(store: Store, run_id: str, *, turn: int | None = None,
                     redact_values: tuple[str, ...] = ()) -> dict[str, Any]:
    """The cassette of run `run_id` (an agent run, a chain run, or a flow session's turn: the last one, or
    `turn` counted from 1). RunNotFoundError for an unknown run; StateError for a run with no recording."""
    rec = await store.get_run(run_id)
    if rec is None:
        raise RunNotFoundError(f"no run {run_id!r} in the state store {store.url.masked}")
    events = await run_events(store, run_id)
    snap = rec.snapshot if isinstance(rec.snapshot, dict) else {}
    records = [r for r in (snap.get("extra") or {}).get("io") or [] if isinstance(r, dict)]
    records += [dict(e.data) for e in events if e.type == IO_EVENT and isinstance(e.data, dict)]
    kinds = {r.get("kind") for r in records}
    if "turn" in kinds:
        from .flows import flow_cassette

        cassette = flow_cassette(run_id, records, turn)
    elif "chain" in kinds:
        from .chains import chain_cassette

        cassette = chain_cassette(run_id, rec, records, events)
    elif "run" in kinds:
        cassette = _agent_cassette(run_id, rec, records, events)
    else:
        raise StateError(f"run {run_id!r} has no recording of its model calls in {store.url.masked}: "
                         "recorded are runs with a store (`chainreact run --state`), `chainreact eval "
                         "--state`, the server's runs and chats with a store, flow turns, and durable "
                         "agent runs and flow turns of workers with a store (`chainreact worker --state`)")
    cassette = {"chainreact_cassette": FORMAT, **cassette, "exported_at": time.time()}
    return dict(redact(cassette, [*env_secrets(), *redact_values]))


def _agent_cassette(run_id: str, rec: Any, records: list[dict[str, Any]],
                    events: list[Any]) -> dict[str, Any]:
    runs = [r for r in records if r.get("kind") == "run"]
    first = next((r for r in runs if r.get("input") is not None), runs[0])
    snap = rec.snapshot if isinstance(rec.snapshot, dict) else {}
    extra = snap.get("extra") or {}
    answer, stop, error = extra.get("content"), extra.get("stop_reason"), extra.get("error")
    ended = snap.get("result")
    if answer is None and isinstance(ended, dict):  # a durable run's record (durable/records.py): its end
        answer, stop = ended.get("content"), ended.get("stop_reason")
    if answer is None:  # a run of the server's that logged its events: the final one has the answer
        final = next((e.data for e in reversed(events) if e.type == "final" and isinstance(e.data, dict)),
                     None)
        if final is not None:
            answer, stop = final.get("content"), final.get("stop_reason")
    out: dict[str, Any] = {"kind": "agent", "run_id": run_id, "status": rec.status,
                           "document": first.get("document") or {}, "input": first.get("input"),
                           "answer": answer if rec.status == "done" else None, "stop_reason": stop,
                           "agents": build_agents(records, merge_top=True)}
    if rec.status == "failed" and error:
        out["error"] = error
    return out


__all__ = ["env_secrets", "export_run", "run_events"]
