"""RuleGo's debug data and run logs, from messages run through its execute and notify routes.

A message runs in debug mode when its request says so (`_debugMode=true`, or `debugMode=true` as RuleGo's
web UI sends it) or when its chain or a node of it has `debugMode`. Its debug events (each debug node's IN
and OUT; not the Stream frames) then go, as they happen, to the debug websockets open on its chain
(`DebugHub`) in RuleGo's form

    {"chainId", "flowType": "IN" | "OUT", "nodeId", "relationType", "err", "msg": RuleMsg, "ts": ms}

and, when the message has ended, into the state store as a run log: a run record
`rulego:run:<chainId>:<startTs>-<msgId>` (kind chain: the playground lists it with the chain's past runs)
whose events are `run_start`, one `node` event per debug event (chains/trace.py's form) and `final` or
`error`. RULEGO_RUN_LOGS of them are kept per chain (older ones are deleted). A message without debug
mode costs nothing here and leaves no log.

`GET /api/v1/logs/runs` answers them as RuleGo's RuleChainRunSnapshot (`snapshot`), `GET
/api/v1/logs/debug` a node's debug items from the chain's DEBUG_RUNS latest logs (server/rulego_logs.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..chains.trace import MAX_NODE_EVENTS, node_event

if TYPE_CHECKING:
    from ..chains import End, RuleMsg
    from ..chains.model import DebugEvent
    from ..state.base import Store

log = logging.getLogger("chainreact.server")

RUN_PREFIX = "rulego:run:"
RULEGO_RUN_LOGS = 100  # kept per chain
DEBUG_RUNS = 40  # run logs read for a node's debug items (RuleGo keeps 40 items per node)
HUB_QUEUE = 1000  # debug events a slow websocket may be behind before it misses some


def chain_prefix(chain_id: str) -> str:
    return RUN_PREFIX + quote(chain_id, safe="") + ":"


def ws_event(ev: DebugEvent) -> dict[str, Any]:
    """A chains DebugEvent as RuleGo's debug websocket sends it."""
    return {"chainId": ev.chain_id, "flowType": ev.flow, "nodeId": ev.node_id, "relationType": ev.relation,
            "err": ev.error or "", "msg": ev.msg.to_dict(), "ts": int(ev.ts * 1000)}


class DebugHub:
    """The debug websockets open per chain: each gets every debug event of its chain's messages."""

    def __init__(self) -> None:
        self.subscribers: dict[str, set[asyncio.Queue[dict[str, Any] | None]]] = {}

    def subscribe(self, chain_id: str) -> asyncio.Queue[dict[str, Any] | None]:
        q: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(HUB_QUEUE)
        self.subscribers.setdefault(chain_id, set()).add(q)
        return q

    def unsubscribe(self, chain_id: str, q: asyncio.Queue[dict[str, Any] | None]) -> None:
        subs = self.subscribers.get(chain_id)
        if subs is not None:
            subs.discard(q)
            if not subs:
                del self.subscribers[chain_id]

    def wanted(self, chain_id: str) -> bool:
        return chain_id in self.subscribers

    def publish(self, chain_id: str, event: dict[str, Any]) -> None:
        for q in self.subscribers.get(chain_id, ()):
            try:
                q.put_nowait(event)
            except asyncio.QueueFull:  # a socket that does not read: it misses events, the run goes on
                pass

    def close(self) -> None:
        """Ends every websocket (server shutdown)."""
        for subs in self.subscribers.values():
            for q in subs:
                while True:
                    try:
                        q.put_nowait(None)
                        break
                    except asyncio.QueueFull:
                        q.get_nowait()


class RunLog:
    """One message's debug events: to the hub as they come, kept for its run log."""

    def __init__(self, hub: DebugHub, chain_id: str, msg: RuleMsg):
        self.hub = hub
        self.chain_id = chain_id
        self.msg = msg.copy()
        self.start_ms = int(time.time() * 1000)
        self.events: list[dict[str, Any]] = []

    def on_debug(self, ev: DebugEvent) -> None:
        if ev.relation == "Stream":
            return  # one per streamed token: the node's Success OUT carries the whole answer
        if self.hub.wanted(ev.chain_id):
            self.hub.publish(ev.chain_id, ws_event(ev))
        if len(self.events) < MAX_NODE_EVENTS:
            self.events.append(node_event(ev))

    async def save(self, store: Store | None, ends: list[End] | None, error: str | None,
                   dsl: dict[str, Any]) -> None:
        """The run log (above), when the message had any debug event; then older logs past the limit go."""
        if not self.events or store is None:
            return
        from ..state.checkpoint import RunSnapshot, save_snapshot

        first = ends[0] if ends else None
        error = error or (first.error if first is not None else None)
        short_id = f"{self.start_ms:013d}-{self.msg.id}"
        run_id = chain_prefix(self.chain_id) + quote(short_id, safe="")
        info = {"id": short_id, "chainId": self.chain_id, "startTs": self.start_ms,
                "endTs": int(time.time() * 1000), "msg": self.msg.to_dict(),
                "ruleChain": dsl.get("ruleChain") or {}, "metadata": dsl.get("metadata") or {}}
        extra: dict[str, Any] = {"kind": "chain", "target": self.chain_id, "rulego": info}
        if error is None:
            extra.update(content=first.msg.data if first is not None else "", stop_reason="stop")
        else:
            extra["error"] = error
        events: list[tuple[str, Any]] = [("run_start", {"type": "run_start", "run_id": run_id,
                                                        "chain": self.chain_id, "input": self.msg.data})]
        events += [("node", {**ev, "run_id": run_id}) for ev in self.events]
        events.append(("error", {"type": "error", "run_id": run_id, "error": error}) if error is not None
                      else ("final", {"type": "final", "run_id": run_id, "content": extra["content"]}))
        try:
            await store.append_events(run_id, events)
            await save_snapshot(store, RunSnapshot(run_id, "failed" if error is not None else "done",
                                                   extra=extra))
            await prune(store, self.chain_id)
        except Exception:  # the message ran: a log that cannot be written is logged, never its failure
            log.exception("chain %r: the run log of message %s was not saved", self.chain_id, self.msg.id)


async def run_logs(store: Store, chain_id: str | None, limit: int = 100_000) -> list[str]:
    """The run ids of a chain's run logs (every chain's without `chain_id`), newest first."""
    prefix = chain_prefix(chain_id) if chain_id else RUN_PREFIX
    recs = await store.runs(prefix=prefix, limit=limit if chain_id else 100_000)
    ids = [r.run_id for r in recs]
    ids.sort(key=lambda rid: rid.rsplit(":", 1)[-1], reverse=True)  # <startTs>-<msgId>: time order
    return ids[:limit]


async def prune(store: Store, chain_id: str) -> None:
    for run_id in (await run_logs(store, chain_id, RULEGO_RUN_LOGS + 100))[RULEGO_RUN_LOGS:]:
        await store.delete_run(run_id)


def _empty_msg() -> dict[str, Any]:
    return {"id": "", "ts": 0, "type": "", "dataType": "", "data": "", "metadata": {}}


def node_logs(events: list[Any]) -> list[dict[str, Any]]:
    """RuleGo's RuleNodeRunLog list from a run log's node events: one per node visit, in order."""
    logs: list[dict[str, Any]] = []
    open_: dict[str, dict[str, Any]] = {}
    for ev in events:
        if ev.get("type") != "node":
            continue
        nid, ts = ev.get("nodeId", ""), int(float(ev.get("ts") or 0) * 1000)
        if ev.get("flow") == "IN" or nid not in open_:
            entry = {"nodeId": nid, "inMsg": _empty_msg(), "outMsg": _empty_msg(), "relationType": "",
                     "err": "", "logItems": [], "startTs": ts, "endTs": 0}
            logs.append(entry)
            open_[nid] = entry
        entry = open_[nid]
        if ev.get("flow") == "IN":
            entry["inMsg"] = ev.get("msg") or _empty_msg()
        else:
            entry.update(outMsg=ev.get("msg") or _empty_msg(), relationType=ev.get("relation") or "",
                         err=ev.get("error") or "", endTs=ts)
    return logs


async def snapshot(store: Store, run_id: str) -> dict[str, Any] | None:
    """A run log as RuleGo's RuleChainRunSnapshot: the chain (ruleChain, metadata) as it was, id, startTs,
    endTs, logs, additionalInfo (chainreact's: the message, its status, error or answer)."""
    rec = await store.get_run(run_id)
    extra = (rec.snapshot or {}).get("extra") if rec is not None and isinstance(rec.snapshot, dict) else None
    info = extra.get("rulego") if isinstance(extra, dict) else None
    if not isinstance(info, dict):
        return None
    events = [e.data for e in await store.events(run_id) if isinstance(e.data, dict)]
    return {"ruleChain": info.get("ruleChain") or {}, "metadata": info.get("metadata") or {},
            "id": info.get("id"), "startTs": info.get("startTs"), "endTs": info.get("endTs"),
            "logs": node_logs(events),
            "additionalInfo": {"chainId": info.get("chainId"), "msg": info.get("msg"),
                               "status": rec.status if rec is not None else None,
                               "error": extra.get("error") if isinstance(extra, dict) else None,
                               "runId": run_id}}


async def debug_items(store: Store, chain_id: str, node_id: str) -> list[dict[str, Any]]:
    """A node's debug items (RuleGo's DebugData plus chainId) from the chain's latest run logs, newest
    first."""
    items: list[dict[str, Any]] = []
    for run_id in await run_logs(store, chain_id, DEBUG_RUNS):  # newest run first
        for e in reversed(await store.events(run_id)):  # and its events newest first (ts ties: log order)
            ev = e.data
            if isinstance(ev, dict) and ev.get("type") == "node" and ev.get("nodeId") == node_id:
                items.append({"ts": int(float(ev.get("ts") or 0) * 1000), "nodeId": node_id,
                              "flowType": ev.get("flow"), "msg": ev.get("msg"),
                              "relationType": ev.get("relation") or "", "err": ev.get("error") or "",
                              "chainId": chain_id})
    return items


__all__ = ["DEBUG_RUNS", "RULEGO_RUN_LOGS", "RUN_PREFIX", "DebugHub", "RunLog", "chain_prefix",
           "debug_items", "node_logs", "run_logs", "snapshot", "ws_event"]
