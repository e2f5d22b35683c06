"""The result of a run, and folding an event stream into it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..types import Message, Usage


@dataclass
class RunResult:
    content: str
    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    steps: int = 0
    # stop | length | content_filter | max_steps | return_directly | cancelled | interrupted
    stop_reason: str = "stop"
    reasoning: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    interruption: Any = None  # stop_reason "interrupted": the questions and pending calls (interrupt.py)
    session_values: Any = None  # the run's session values (with the answer under output_key, if set)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "content": self.content,
            "stop_reason": self.stop_reason,
            "steps": self.steps,
            "usage": self.usage.to_dict(),
            "messages": [m.to_openai() for m in self.messages],
            "metadata": self.metadata,
        }
        if self.reasoning:
            out["reasoning"] = self.reasoning
        return out
