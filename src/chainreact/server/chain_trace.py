"""A chain run that also reports what a timeline shows: every node's IN/OUT and its agent nodes' events
(their log form and limits: chains/trace.py).

The runs API logs them in a chain run's event log (runs_chains.py), so a stored run can be replayed into
a timeline and a path through the graph. A node's Stream OUT events (one per streamed token) are left
out: the run logs the frames themselves (text_delta, tool). Durable chain runs log the same events from
their workflow and node activities (durable/chain_workflow.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..chains.trace import agent_event, agent_events

if TYPE_CHECKING:
    from ..chains.engine import RuleEngine
    from ..chains.msg import RuleMsg

Emit = Callable[[dict[str, Any]], None]


async def traced_run(engine: RuleEngine, chain_id: str, msg: RuleMsg, on_stream: Any,
                     emit: Emit) -> list[Any]:
    """`engine.run(chain_id, msg)` with debug capture on every node; its events go to `emit` in order, and
    so do the recording of its agent nodes' model and tool calls (`io` events, for `chainreact runs export`:
    replay/chains.py). The engine's own `on_debug` (if any) still gets every debug event."""
    from ..replay.chains import record_chain

    def on_agent(chain: str, node: str, e: Any) -> None:
        emit(agent_event(chain, node, e))

    token = agent_events.set(on_agent)
    try:
        return await record_chain(engine, chain_id, msg, emit, on_stream=on_stream,
                                  on_debug=getattr(engine, "on_debug", None))
    finally:
        agent_events.reset(token)
