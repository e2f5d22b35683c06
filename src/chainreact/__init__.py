"""chainreact: declarative ReAct agents and the workflows they run in.

`import chainreact` stays cheap: the public names below load their modules on first use. Type checkers
read the same names from the `TYPE_CHECKING` imports (kept equal to `_LAZY` by a test).

This module is also where the OpenTelemetry switch is read (`CHAINREACT_OTEL=1`: docs/observability.md):
every entry point passes through it (the CLI, the server, a program importing any part of chainreact), and
the agent and chain layers below only run the global middleware and aspects that
`chainreact.observability.enable()` registers with them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from chainreact.agent import (
        Agent,
        AgentContext,
        AgentRegistry,
        AgentRun,
        CancelMode,
        Middleware,
        RunResult,
    )
    from chainreact.config import (
        AgentConfig,
        AgentDocument,
        ModelParams,
        load_document,
        resolve_agent_config,
    )
    from chainreact.errors import ChainreactError, ConfigError, ModelError, ToolError
    from chainreact.llm import ModelClient
    from chainreact.tools import Tool, ToolContext, ToolOutput, tool
    from chainreact.types import Event, Message, ToolCall, Usage

_LAZY = {
    "Agent": "chainreact.agent",
    "AgentContext": "chainreact.agent",
    "AgentRegistry": "chainreact.agent",
    "AgentRun": "chainreact.agent",
    "CancelMode": "chainreact.agent",
    "Middleware": "chainreact.agent",
    "RunResult": "chainreact.agent",
    "AgentConfig": "chainreact.config",
    "AgentDocument": "chainreact.config",
    "ModelParams": "chainreact.config",
    "load_document": "chainreact.config",
    "resolve_agent_config": "chainreact.config",
    "ChainreactError": "chainreact.errors",
    "ConfigError": "chainreact.errors",
    "ModelError": "chainreact.errors",
    "ToolError": "chainreact.errors",
    "ModelClient": "chainreact.llm",
    "Tool": "chainreact.tools",
    "ToolContext": "chainreact.tools",
    "ToolOutput": "chainreact.tools",
    "tool": "chainreact.tools",
    "Event": "chainreact.types",
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


OTEL_SWITCH = "CHAINREACT_OTEL"


def _otel_switch() -> None:
    # Only when asked: OpenTelemetry is an extra, and `import chainreact` must stay cheap without it.
    if os.environ.get(OTEL_SWITCH, "") not in ("", "0", "false"):
        from .observability import enable

        enable()


_otel_switch()


__all__ = [
    "Agent", "AgentConfig", "AgentContext", "AgentDocument", "AgentRegistry", "AgentRun", "CancelMode",
    "ChainreactError", "ConfigError", "Event", "Message", "Middleware", "ModelClient", "ModelError",
    "ModelParams", "RunResult", "Tool", "ToolCall", "ToolContext", "ToolError", "ToolOutput", "Usage",
    "__version__", "load_document", "resolve_agent_config", "tool",
]
