"""The agent: one ReAct engine behind declarative documents and the programmatic API."""

from .agent import Agent
from .as_tool import AgentTool
from .build import AgentRegistry
from .cancel import CancelHandle, CancelMode
from .middleware import AgentContext, Middleware, RunState, ToolCallInfo
from .plan import Detection, Limits, RunPlan
from .result import RunResult
from .run import AgentRun

__all__ = [
    "Agent", "AgentContext", "AgentRegistry", "AgentRun", "AgentTool", "CancelHandle", "CancelMode",
    "Detection", "Limits", "Middleware", "RunPlan", "RunResult", "RunState", "ToolCallInfo",
]
