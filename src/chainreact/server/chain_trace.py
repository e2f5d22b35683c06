"""A chain run that also reports what a timeline shows: every node's IN/OUT and its agent nodes' events
(their log form and limits: chains/trace.py).

The runs API logs them in a chain run's event log (runs_chains.py), so a stored run can be replayed into
a timeline and a path through the graph. A node's Stream OUT events (one per streamed token) are left
out: the run logs the frames themselves (text_delta, tool). Durable chain runs log the same events from
their workflow and node activities (durable/chain_workflow.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..chains.trace import MAX_NODE_EVENTS, agent_event, node_event

Emit = Callable[[dict[str, Any]], None]


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
