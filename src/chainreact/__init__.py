"""chainreact: declarative ReAct agents and the workflows they run in.

`import chainreact` stays cheap: the public names below load their modules on first use.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Agent": "chainreact.agent",
    "RunResult": "chainreact.agent",
    "Middleware": "chainreact.agent",
    "tool": "chainreact.tools",
    "Tool": "chainreact.tools",
    "AgentConfig": "chainreact.config",
    "load_document": "chainreact.config",
    "ModelClient": "chainreact.llm",
    "Message": "chainreact.types",
    "ToolCall": "chainreact.types",
    "Usage": "chainreact.types",
}

def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'chainreact' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = ["__version__", *_LAZY]
