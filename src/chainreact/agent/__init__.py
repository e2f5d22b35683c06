"""The agent: one ReAct engine behind declarative documents and the programmatic API."""

from .agent import Agent, AgentRun
from .as_tool import AgentTool
from .build import AgentRegistry
from .cancel import CancelHandle, CancelMode
from .middleware import AgentContext, Middleware, RunState, ToolCallInfo
from .result import RunResult

__all__ = [
    "Agent", "AgentContext", "AgentRegistry", "AgentRun", "AgentTool", "CancelHandle", "CancelMode",
    "Middleware", "RunResult", "RunState", "ToolCallInfo",
]
