"""Who is told about the agent events of `ai/agent` and `ai/llm` nodes while a chain runs.

A chain's Stream frames carry what a client is shown (text, reasoning, tool calls). A run that also
keeps a timeline (the server's runs API: model calls, retries, failovers, breaker changes, tool results)
sets `agent_events` to a sink for the message's run; nodes started in that run's tasks inherit it (a
context variable, so concurrent runs of one engine each have their own, and nothing is paid without one).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

# sink(chain id, node id, agent event): the events of TIMELINE_EVENTS types, as the agent yields them
AgentEventSink = Callable[[str, str, Any], None]

agent_events: ContextVar[AgentEventSink | None] = ContextVar("chainreact_chain_agent_events", default=None)

TIMELINE_EVENTS = frozenset({"model_call_end", "retry", "failover", "breaker", "tool_result"})

__all__ = ["TIMELINE_EVENTS", "AgentEventSink", "agent_events"]
