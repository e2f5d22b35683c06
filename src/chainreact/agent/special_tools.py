"""Tools the loop gives a meaning to: Exit (ends the run with its argument) and ToolSearch (deferred tools).

Exit: the model calls `exit(final_result=...)` and the run ends with that text as the answer (it is a
ReturnDirectly tool; the ChatModelAgent design marks it "not recommended": a plain answer does the same).

Deferred tools: tools the model does not see at first (a large catalogue would crowd every request). The
`tool_search` tool searches their names and descriptions; the tools it finds are loaded: from the next
model call on they are in the request and can be called. The loading is the loop's decision (it reads
`LoadTools` from the tool's output), so it replays deterministically; middleware may edit
`state.deferred` (the tools not loaded yet) in `before_model`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..tools.base import Tool, ToolContext, ToolOutput


class ExitTool(Tool):
    name = "exit"
    description = "Finish the task: call this with your final answer when you are done."
    parameters = {
        "type": "object",
        "properties": {"final_result": {"type": "string", "description": "The final answer for the user."}},
        "required": ["final_result"],
    }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return str(args.get("final_result", ""))


@dataclass(frozen=True, slots=True)
class LoadTools:
    """ToolOutput.data of a tool-search result: the deferred tools to load."""

    names: tuple[str, ...]


class ToolSearchTool(Tool):
    name = "tool_search"
    parameters = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "Words describing the tool you need."}},
        "required": ["query"],
    }

    def __init__(self, deferred: Sequence[Tool], limit: int = 5):
        self.deferred = list(deferred)
        self.limit = limit
        self.description = (
            f"Find and load more tools ({len(self.deferred)} available but not loaded yet). Describe what "
            "you need; the matching tools become callable from your next step."
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        found = search_tools(self.deferred, str(args.get("query", "")), self.limit)
        if not found:
            return ToolOutput("No tool matches that query; try other words.")
        lines = [f"- {t.name}: {t.description}" for t in found]
        return ToolOutput("Loaded these tools (call them from now on):\n" + "\n".join(lines),
                          data=LoadTools(tuple(t.name for t in found)))


def search_tools(tools: Sequence[Tool], query: str, limit: int) -> list[Tool]:
    """Tools ranked by how many query words their name and description contain (ties keep order)."""
    words = {w for w in re.findall(r"\w+", query.lower()) if len(w) > 1}
    if not words:
        return list(tools[:limit])
    scored = []
    for i, t in enumerate(tools):
        text = f"{t.name.replace('_', ' ')} {t.name} {t.description}".lower()
        score = sum(1 for w in words if w in text)
        if score:
            scored.append((-score, i, t))
    return [t for _, _, t in sorted(scored, key=lambda s: (s[0], s[1]))[:limit]]


def settle_tool_search(tools: Sequence[Tool], deferred: Sequence[Tool],
                       planned: Sequence[Tool]) -> list[Tool]:
    """The run's tools once before_agent has run: unchanged if the deferred tools are the agent's (by
    name, in order); otherwise the `tool_search` tool is replaced by one over `deferred` (in its place, or
    last if there was none), or dropped when `deferred` is empty."""
    if [t.name for t in deferred] == [t.name for t in planned]:
        return list(tools)
    old = next((i for i, t in enumerate(tools) if t.name == ToolSearchTool.name), None)
    out = [t for t in tools if t.name != ToolSearchTool.name]
    if deferred:
        limit = getattr(tools[old], "limit", 5) if old is not None else 5
        out.insert(len(out) if old is None else old, ToolSearchTool(deferred, limit))
    return out
