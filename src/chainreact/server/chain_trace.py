"""A chain run that also reports what a timeline shows: every node's IN/OUT and its agent nodes' events.

    {"type": "node", "chainId", "nodeId", "flow": "IN" | "OUT", "relation", "error", "durationMs", "ts",
     "msg": {"id", "ts", "type", "dataType", "data", "metadata"}}       (the playground trace's debug event)
    {"type": "model_call_end" | "retry" | "failover" | "breaker" | "tool_result", "chain", "node",
     "agent_run_id", ...the agent event's own fields (chainreact.types.events)}

The runs API logs them in a chain run's event log (runs_chains.py), so a stored run can be replayed into
a timeline and a path through the graph. A message's data is cut at MAX_DATA characters (`dataCut`:
how long it was) and a run reports at most MAX_NODE_EVENTS node events (then one `node_events_cut`):
a looping chain must not fill the store. A node's Stream OUT events (one per streamed token) are left
out: the run logs the frames themselves (text_delta, tool).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MAX_DATA = 4000
MAX_NODE_EVENTS = 2000

Emit = Callable[[dict[str, Any]], None]


def node_event(ev: Any) -> dict[str, Any]:
    """The log's form of a chains DebugEvent."""
    d = ev.to_dict()
    d.pop("event", None)
    msg = d["msg"]
    data = msg.get("data")
    if isinstance(data, str) and len(data) > MAX_DATA:
        msg = {**msg, "data": data[:MAX_DATA], "dataCut": len(data)}
    return {**d, "type": "node", "ts": ev.ts, "msg": msg}


def agent_event(chain_id: str, node_id: str, e: Any) -> dict[str, Any]:
    """The log's form of an agent node's event (its own run id kept as `agent_run_id`)."""
    d = e.to_dict()
    d["agent_run_id"] = d.pop("run_id", None)
    return {**d, "chain": chain_id, "node": node_id}


async def traced_run(engine: Any, chain_id: str, msg: Any, on_stream: Any, emit: Emit) -> list[Any]:
    """`engine.run(chain_id, msg)` with debug capture on every node; its events go to `emit` in order.
    The engine's own `on_debug` (if any) still gets every debug event."""
    from ..chains.msg import STREAM
    from ..chains.trace import agent_events

    own = getattr(engine, "on_debug", None)
    seen = 0

    def on_debug(ev: Any) -> None:
        nonlocal seen
        if own is not None:
            own(ev)
        if ev.relation == STREAM:  # one per streamed token: the run logs their text and tool frames already
            return
        seen += 1
        if seen <= MAX_NODE_EVENTS:
            emit(node_event(ev))
        elif seen == MAX_NODE_EVENTS + 1:
            emit({"type": "node_events_cut", "after": MAX_NODE_EVENTS})

    def on_agent(chain: str, node: str, e: Any) -> None:
        emit(agent_event(chain, node, e))

    token = agent_events.set(on_agent)
    try:
        return list(await engine.run(chain_id, msg, on_stream=on_stream, on_debug=on_debug, debug=True))
    finally:
        agent_events.reset(token)
