"""Built-in stateless responders: callables that compute a turn from the request alone.

Stateless on purpose: benchmarks fire many concurrent conversations at one server, and a responder that
reads the conversation's progress from the request itself needs no per-client bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def tool_steps_responder(n: int, tool_name: str = "add") -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A responder that asks for `n` tool calls, one per request, then gives a final text answer.

    With k = the number of `role == "tool"` messages in the request: while k < n it answers a call to
    `tool_name` with arguments {"a": k, "b": 1} (id `call_k`); afterwards a final text, split into about
    20 chunks when the request streams.
    """
    if n < 0:
        raise ValueError(f"tool_steps_responder: n must be >= 0, got {n}")

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        k = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "tool")
        if k < n:
            return {"tool_calls": [{"id": f"call_{k}", "name": tool_name, "arguments": {"a": k, "b": 1}}]}
        text = (
            f"All {k} tool steps are done and the running total is now {k}. "
            "This is the final answer of the scripted benchmark conversation."
        )
        turn: dict[str, Any] = {"text": text}
        if body.get("stream") is True:
            turn["chunks"] = 20
        return turn

    return respond
