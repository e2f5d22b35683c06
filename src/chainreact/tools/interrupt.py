"""The interrupt a tool raises when it needs an answer before it can finish (the agent's loop stops the run
with the question and, on resume, runs the call again with the answer: agent/interrupt.py).

It lives with the tools because tools raise it (the builtin `ask_user`, an approval wrapper, your own);
the agent layer re-exports it as `chainreact.agent.ToolInterrupt`.
"""

from __future__ import annotations

from typing import Any

ANSWER = "answer"  # the ToolContext.state key a resumed call finds its answer under


class ToolInterrupt(Exception):
    """Raised by a tool (or a wrap_tool_call middleware) that needs an answer before it can finish."""

    def __init__(self, question: str = "", *, kind: str = "ask_user", schema: dict[str, Any] | None = None,
                 data: Any = None):
        super().__init__(question)
        self.question = question
        self.kind = kind  # ask_user | approval | your own
        self.schema = schema  # JSON Schema the answer must match (None: any)
        self.data = data


__all__ = ["ANSWER", "ToolInterrupt"]
