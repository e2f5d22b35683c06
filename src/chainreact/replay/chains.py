"""Rule chains: a chain run's node I/O and its agent nodes' model calls, recorded, exported and replayed.

Recorded (`record_chain`; the server's runs API and `chainreact eval --chain --state` use it): a `chain`
record with the message that entered the chain and the chain's document, the agent nodes' slots (they are
agents planned inside the run: agent/recording.py), and every node's IN/OUT as the run's `node` events
(chains/trace.py's form, the playground's timeline reads the same).

Replayed: the chain runs again from the recorded message with its agent nodes answered from the cassette
(the other nodes run as they are: filters, transforms, scripts); every node's OUT (relation, data, error)
is compared with the recorded one, node by node in the order each node told them, and so are the ends.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agent.plan import plan_hook
from ..agent.recording import IORecorder
from ..chains.msg import STREAM
from ..chains.trace import MAX_NODE_EVENTS, node_event
from .cassette import CassetteError, build_agents
from .diff import Diff, show
from .player import Replayer
from .run import ReplayResult, document_changed

if TYPE_CHECKING:
    from ..chains.engine import RuleEngine
    from ..chains.model import DebugEvent
    from ..chains.msg import RuleMsg

Emit = Callable[[dict[str, Any]], None]


def chain_identity(engine: RuleEngine, chain_id: str) -> dict[str, Any]:
    chain = engine.get(chain_id)
    source = getattr(chain, "source", None)
    digest = None
    if isinstance(source, str) and Path(source).is_file():
        digest = "sha256:" + hashlib.sha256(Path(source).read_bytes()).hexdigest()
        source = str(Path(source).resolve())
    return {"id": chain_id, "name": getattr(chain, "name", None), "source": source, "hash": digest}


def chain_record(engine: RuleEngine, chain_id: str, msg: RuleMsg) -> dict[str, Any]:
    d = msg.to_dict()
    return {"kind": "chain", "chain": chain_id, "document": chain_identity(engine, chain_id),
            "msg": {k: d[k] for k in ("type", "dataType", "data", "metadata")}}


async def record_chain(engine: RuleEngine, chain_id: str, msg: RuleMsg, emit: Emit, *,
                       secrets: Sequence[str] = (), **run_kwargs: Any) -> list[Any]:
    """`engine.run(chain_id, msg)` recorded: io records as `{"type": "io", ...}` and every node's IN/OUT as
    `{"type": "node", ...}` (a Stream OUT, one per streamed token, left out) go to `emit` in order; `on_debug`
    still gets every debug event. Returns the ends."""
    recorder = IORecorder(lambda r: emit({"type": "io", **r}), secrets=secrets)
    recorder.emit(chain_record(engine, chain_id, msg))
    own = run_kwargs.pop("on_debug", None)
    seen = 0

    def on_debug(ev: DebugEvent) -> None:
        nonlocal seen
        if own is not None:
            own(ev)
        if ev.relation == STREAM:
            return
        seen += 1
        if seen <= MAX_NODE_EVENTS:
            emit(node_event(ev))
        elif seen == MAX_NODE_EVENTS + 1:  # a looping chain must not fill the store
            emit({"type": "node_events_cut", "after": MAX_NODE_EVENTS})

    try:
        with plan_hook(recorder):
            return list(await engine.run(chain_id, msg, on_debug=on_debug, debug=True, **run_kwargs))
    finally:
        recorder.close()


def chain_cassette(run_id: str, rec: Any, records: list[dict[str, Any]], events: list[Any]) -> dict[str, Any]:
    head = next(r for r in records if r.get("kind") == "chain")
    nodes = [_node(e.data) for e in events if e.type == "node" and isinstance(e.data, dict)
             and e.data.get("flow") == "OUT"]
    snap = rec.snapshot if isinstance(rec.snapshot, dict) else {}
    extra = snap.get("extra") or {}
    return {"kind": "chain", "run_id": run_id, "status": rec.status, "document": head.get("document") or {},
            "chain": head.get("chain"), "input": head.get("msg"), "answer": extra.get("content"),
            "ends": extra.get("ends"), "nodes": nodes,
            "agents": build_agents([r for r in records if r.get("kind") != "chain"], merge_top=False)}


def _node(d: dict[str, Any]) -> dict[str, Any]:
    msg = d.get("msg") or {}
    out = {"chain": d.get("chainId"), "node": d.get("nodeId"), "relation": d.get("relation"),
           "error": d.get("error"), "data": msg.get("data")}
    if "dataCut" in msg:
        out["dataCut"] = msg["dataCut"]
    return out


def _engine(target: Any, cassette: dict[str, Any], load: Sequence[str],
            globals: Mapping[str, Any] | None) -> tuple[Any, bool]:
    from ..chains import RuleEngine

    if target is not None and not isinstance(target, str | Path):
        return target, False
    engine = RuleEngine(properties=dict(globals or {}))
    for path in load:
        engine.load_path(path)
    source = target or (cassette.get("document") or {}).get("source")
    chain_id = cassette.get("chain")
    if engine.get(str(chain_id)) is None:
        if not source or not Path(str(source)).is_file():
            raise CassetteError(f"replay: give the chain file of {chain_id!r} (--doc CHAIN, or --load): the "
                                f"recorded one {source!r} is not there")
        engine.load(str(source), chain_id=str(chain_id))
    return engine, True


async def replay_chain(cassette: dict[str, Any], target: Any = None, *, load: Sequence[str] = (),
                       globals: Mapping[str, Any] | None = None, live_tools: bool = False,
                       ignore: tuple[str, ...] = ()) -> ReplayResult:
    """Run the recorded message through the chain again, agent nodes answered from the cassette; compare
    every node's output and the ends with the recording."""
    from ..chains import RuleMsg

    engine, own = _engine(target, cassette, load, globals)
    replayer = Replayer(cassette, live_tools=live_tools, ignore=ignore)
    got: list[dict[str, Any]] = []
    msg = RuleMsg.from_dict(cassette.get("input") or {})
    answer: str | None = None
    try:
        with plan_hook(replayer):
            ends = await engine.run(str(cassette.get("chain")), msg, debug=True,
                                    on_debug=lambda ev: got.append(_node(node_event(ev)))
                                    if ev.flow == "OUT" and ev.relation != STREAM else None)
        answer = ends[-1].msg.data if ends else None
        diffs = replayer.finish()
        diffs += compare_nodes(cassette.get("nodes") or [], got)
        recorded_ends = cassette.get("ends")
        if recorded_ends is not None:
            now = [{"relation": e.relation, "error": e.error, "data": e.msg.data} for e in ends]
            if now != recorded_ends:
                diffs.append(Diff("answer", "the chain's ends", expected=recorded_ends, got=now))
        changed = document_changed(cassette, chain_identity(engine, str(cassette.get("chain"))))
    finally:
        if own:
            engine.close()
    steps = sum(t.made for t in replayer.tapes)
    return ReplayResult(not diffs, answer, steps, diffs, "chain", changed)


def compare_nodes(expected: list[dict[str, Any]], got: list[dict[str, Any]]) -> list[Diff]:
    """Each node's outputs in the order it told them, recorded against replayed."""
    def by_node(items: list[dict[str, Any]]) -> dict[tuple[Any, Any], list[dict[str, Any]]]:
        out: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
        for n in items:
            out.setdefault((n.get("chain"), n.get("node")), []).append(n)
        return out

    exp, now = by_node(expected), by_node(got)
    diffs: list[Diff] = []
    for key in [*exp, *(k for k in now if k not in exp)]:
        a, b = exp.get(key, []), now.get(key, [])
        for i in range(max(len(a), len(b))):
            e = a[i] if i < len(a) else None
            g = b[i] if i < len(b) else None
            fields = ("relation", "error", "data")
            if e is not None and g is not None and all(e.get(f) == g.get(f) for f in fields):
                continue
            where = f"node {key[1]}" + (f" output {i + 1}" if max(len(a), len(b)) > 1 else "")
            if e is None or g is None:
                what = "not in the recording" if e is None else "not told now"
                diffs.append(Diff("node", f"{where}: {what}", expected=_short(e), got=_short(g)))
            else:
                f = next(f for f in fields if e.get(f) != g.get(f))
                diffs.append(Diff("node", f"{where}: {f}", expected=e.get(f), got=g.get(f)))
    return diffs


def _short(n: dict[str, Any] | None) -> str | None:
    return None if n is None else f"{n.get('relation')}: {show(n.get('data'))}"


__all__ = ["chain_cassette", "chain_identity", "chain_record", "compare_nodes", "record_chain",
           "replay_chain"]
