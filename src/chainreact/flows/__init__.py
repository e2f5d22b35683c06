"""chainreact.flows: conversational flows of the spec's Basic Agent (`aiagent`) and chainreact's own node
kinds (`message`, `end`, `rulechain`), one user message per turn, sessions in chainreact.state.

    flow = Flow.load("examples/flows/support.json", state="sqlite:///state.db")
    turn = await flow.send("session-1", "Where is my order?", user={"id": "u1"})

See docs/flows.md.
"""

from __future__ import annotations

from .engine import MAX_HOPS, Flow, FlowEvent, FlowMessage, TurnResult
from .errors import FlowError, OutputValidationError
from .model import AIAgentNode, EndNode, FlowDef, MessageNode, RuleChainNode
from .schema import flow_json_schema
from .sessions import SessionSummary, list_sessions, memory_keys
from .validate import load_flow, validate

__all__ = ["MAX_HOPS", "AIAgentNode", "EndNode", "Flow", "FlowDef", "FlowError", "FlowEvent", "FlowMessage",
           "MessageNode", "OutputValidationError", "RuleChainNode", "SessionSummary", "TurnResult",
           "flow_json_schema", "list_sessions", "load_flow", "memory_keys", "validate"]
