"""Who is told about the agent events of `ai/agent` and `ai/llm` nodes while a chain runs, and the log's
form of a timeline's events.

A chain's Stream frames carry what a client is shown (text, reasoning, tool calls). A run that also
keeps a timeline (the server's runs API: model calls, retries, failovers, breaker changes, tool results)
sets `agent_events` to a sink for the message's run; nodes started in that run's tasks inherit it (a
context variable, so concurrent runs of one engine each have their own, and nothing is paid without one).

The timeline's events as a run's log keeps them (server/chain_trace.py in process, the durable chain
workflow and its node activities on Temporal workers):

    {"type": "node", "chainId", "nodeId", "flow": "IN" | "OUT", "relation", "error", "durationMs", "ts",
     "msg": {"id", "ts", "type", "dataType", "data", "metadata"}}       (the playground trace's debug event)
    {"type": "model_call_end" | "retry" | "failover" | "breaker" | "tool_result", "chain", "node",
     "agent_run_id", ...the agent event's own fields (chainreact.types.events)}

A message's data is cut at MAX_DATA characters (`dataCut`: how long it was) and a run reports at most
MAX_NODE_EVENTS node events (then one `node_events_cut`): a looping chain must not fill the store.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import DebugEvent

# sink(chain id, node id, agent event): the events of TIMELINE_EVENTS types, as the agent yields them
AgentEventSink = Callable[[str, str, Any], None]

agent_events: ContextVar[AgentEventSink | None] = ContextVar("chainreact_chain_agent_events", default=None)

TIMELINE_EVENTS = frozenset({"model_call_end", "retry", "failover", "breaker", "tool_result"})

MAX_DATA = 4000
MAX_NODE_EVENTS = 2000


def node_event(ev: DebugEvent) -> dict[str, Any]:
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


__all__ = ["MAX_DATA", "MAX_NODE_EVENTS", "TIMELINE_EVENTS", "AgentEventSink", "agent_event", "agent_events",
           "node_event"]
