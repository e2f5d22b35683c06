"""Flows: one turn of a flow session (flows/recording.py records every turn), exported and replayed.

The cassette of a turn holds its input (session, text, user, group), what it read from the store (the
session's node and variables, the conversation memory, long-term memories), its agent nodes' model and
tool calls, and its messages. The replay runs the same turn over a fresh in-memory store that answers
those reads from the recording (state/reads.py), its agent nodes answered from the cassette; the turn's
messages, output, next node and end are compared with the recorded ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..agent.plan import plan_hook
from ..agent.recording import document_identity
from ..state.errors import StateError
from .cassette import CassetteError, build_agents
from .diff import Diff
from .player import Replayer
from .run import ReplayResult, document_changed

if TYPE_CHECKING:
    from ..state.base import Store


def flow_cassette(run_id: str, records: list[dict[str, Any]], turn: int | None) -> dict[str, Any]:
    """The cassette of turn `turn` (from 1; default: the last) of a flow session's recorded turns."""
    turns: list[list[dict[str, Any]]] = [[]]
    done: set[Any] = set()  # the durable turns recorded (records tagged with the turn's id)
    for r in records:
        if r.get("turn_id") is not None and r["turn_id"] in done:
            continue  # a durable turn's save activity that ran again copied its records again
        turns[-1].append(r)
        if r.get("kind") == "turn":
            done.add(r.get("turn_id"))
            turns.append([])
    turns = [t for t in turns if t and t[-1].get("kind") == "turn"]
    if not turns:
        raise StateError(f"flow session {run_id!r} has no recorded turn")
    n = len(turns) if turn is None else turn
    if not 1 <= n <= len(turns):
        raise StateError(f"flow session {run_id!r}: no turn {n} (it has {len(turns)} recorded turn(s))")
    head = turns[n - 1][-1]
    # A durable turn's records are tagged with its id (records of another turn are not this one's); its
    # reads come in parts, one per activity that read (the later of a retried one's).
    records = [r for r in turns[n - 1][:-1] if r.get("turn_id") == head.get("turn_id")]
    parts: dict[Any, list[Any]] = {}
    for r in records:
        if r.get("kind") == "reads":
            parts[r.get("activity")] = list(r.get("reads") or [])
    reads = [*(x for part in parts.values() for x in part), *(head.get("reads") or [])]
    return {"kind": "flow", "run_id": run_id, "turn_number": n, "flow": head.get("flow"),
            "document": head.get("document") or {}, "input": head.get("input"), "reads": reads,
            "turn": head.get("turn"), "answer": _answer(head.get("turn")),
            "agents": build_agents(records, merge_top=False)}


def _answer(turn: Any) -> str | None:
    if not isinstance(turn, dict):
        return None
    return "\n\n".join(str(m.get("content")) for m in turn.get("messages") or [])


async def replay_flow(cassette: dict[str, Any], target: Any = None, *, load: Sequence[str] = (),
                      globals: Mapping[str, Any] | None = None, live_tools: bool = False,
                      ignore: tuple[str, ...] = ()) -> ReplayResult:
    """Run the recorded turn again over the recorded reads, agent nodes answered from the cassette."""
    from ..flows import Flow
    from ..state import open_store

    definition = target.definition if target is not None and not isinstance(target, str | Path) else None
    source = None if definition is not None else (target or (cassette.get("document") or {}).get("source"))
    if definition is None and (not source or not Path(str(source)).is_file()):
        raise CassetteError(f"replay: give the flow document (--doc FLOW): the recorded one {source!r} is "
                            "not there")
    fresh = await open_store("sqlite:///:memory:")
    store = cast("Store", _Replaying(cassette.get("reads") or [], fresh))  # the Store's methods, proxied
    if definition is not None:
        flow = Flow(definition, source=getattr(target, "source", None), store=store, record=False)
    else:
        flow = Flow.load(str(source), store=store, record=False)
    inp = cassette.get("input") or {}
    replayer = Replayer(cassette, live_tools=live_tools, ignore=ignore)
    try:
        with plan_hook(replayer):
            turn = await flow.send(str(inp.get("session") or "replay"), str(inp.get("text") or ""),
                                   user=inp.get("user"), group=inp.get("group"))
    finally:
        await flow.aclose()
        await fresh.close()
    diffs = replayer.finish()
    got = {"messages": [{"node": m.node, "content": m.content} for m in turn.messages], "output": turn.output,
           "node": turn.node, "ended": turn.ended}
    diffs += compare_turn(cassette.get("turn") or {}, got)
    steps = sum(t.made for t in replayer.tapes)
    changed = document_changed(cassette, document_identity(flow))
    return ReplayResult(not diffs, _answer(got), steps, diffs, "flow", changed)


def compare_turn(expected: dict[str, Any], got: dict[str, Any]) -> list[Diff]:
    diffs: list[Diff] = []
    exp_m, got_m = expected.get("messages") or [], got["messages"]
    for i in range(max(len(exp_m), len(got_m))):
        e = exp_m[i] if i < len(exp_m) else None
        g = got_m[i] if i < len(got_m) else None
        if e != g:
            node = (e or g or {}).get("node")
            diffs.append(Diff("turn", f"message {i + 1} (node {node})", expected=(e or {}).get("content"),
                              got=(g or {}).get("content")))
    for key in ("output", "node", "ended"):
        if expected.get(key) != got.get(key):
            diffs.append(Diff("turn", key, expected=expected.get(key), got=got.get(key)))
    return diffs


class _Replaying:
    """The recorded reads over a fresh store; a replayed turn's save does not expect the recorded version."""

    def __init__(self, reads: list[dict[str, Any]], inner: Any):
        from ..state.reads import ReadReplayer

        self._reads = ReadReplayer(reads, inner)
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reads, name)

    async def save_run(self, run_id: str, snapshot: Any, **kwargs: Any) -> int:
        kwargs.pop("expect_version", None)
        return int(await self._inner.save_run(run_id, snapshot, **kwargs))

    async def close(self) -> None:
        return None  # the replay closes the fresh store itself


__all__ = ["compare_turn", "flow_cassette", "replay_flow"]
