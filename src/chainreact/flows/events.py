"""What a turn yields: FlowEvents, and the agent's own events (tool calls, collaborators) mapped onto them.

`Flow.stream()` is the one event stream of a turn (`Flow.send()` consumes it). Agent events are passed on
live, while the node's agent runs, so a chat front end can show a tool call as it starts:

- `tool_call` (`id`, `name`, `arguments`, `path`), `tool_result` (`id`, `name`, `content`, `is_error`,
  `path`), `tool_output_delta` (`id`, `name`, `text`, `path`);
- a collaborator's run (multiAgentCollaboration) nests: its own events come with a longer `path`
  (supervisor first), framed by `agent_start` (`agent`, `path`, `input`) and `agent_end` (`agent`,
  `path`, `content`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class FlowMessage:
    node: str
    content: str
    role: str = "assistant"

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "role": self.role, "content": self.content}


@dataclass
class FlowEvent:
    """One thing that happened in a turn: `node` (entered), `message`, `output`, `warning`, `ask_user`,
    `login_required`, `ignored`, `memory`, the agent's `tool_call` / `tool_result` / `tool_output_delta`,
    a collaborator's `agent_start` / `agent_end`, and `turn_end`; with `stream(agent_events=True)`,
    `agent` (whose `data["agent_event"]` is the agent's own event) in place of the agent's ones."""

    type: str
    node: str | None
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {k: v.to_dict() if hasattr(v, "to_dict") else v for k, v in self.data.items()}
        return {"event": self.type, "node": self.node, **data}


def message(node: str, text: str) -> FlowEvent:
    return FlowEvent("message", node, {"role": "assistant", "content": text})


def from_agent_event(ev: Any, node: str) -> FlowEvent | None:
    """The flow's form of an agent event (chainreact.types Event), or None for those a turn does not show
    (model calls, text deltas of the JSON answer, step ends)."""
    path = list(ev.path)
    nested = len(path) > 1
    t = ev.type
    if t == "tool_call":
        call = ev.call
        return FlowEvent("tool_call", node, {"id": call.id, "name": call.name, "arguments": call.arguments,
                                             "path": path})
    if t == "tool_result":
        return FlowEvent("tool_result", node, {"id": ev.call_id, "name": ev.name, "content": ev.content,
                                               "is_error": ev.is_error, "path": path})
    if t == "tool_output_delta":
        return FlowEvent("tool_output_delta", node, {"id": ev.call_id, "name": ev.name, "text": ev.text,
                                                     "path": path})
    if nested and t == "run_start":
        return FlowEvent("agent_start", node, {"agent": ev.agent, "path": path, "input": _jsonable(ev.input)})
    if nested and t == "final":
        return FlowEvent("agent_end", node, {"agent": ev.agent, "path": path, "content": ev.content})
    return None


def _jsonable(value: Any) -> Any:
    from ..jsonutil import to_text

    return value if isinstance(value, str | int | float | bool | dict | list) or value is None \
        else to_text(value)


__all__ = ["FlowEvent", "FlowMessage", "from_agent_event", "message"]
