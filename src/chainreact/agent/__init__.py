"""The agent: one ReAct engine behind declarative documents and the programmatic API."""

from .agent import Agent
from .as_tool import AgentTool
from .build import AgentRegistry
from .cancel import CancelHandle, CancelMode
from .interrupt import Checkpoint, Interruption, Question, Resume, ToolInterrupt
from .middleware import AgentContext, Middleware, RunState, ToolCallInfo
from .plan import Detection, Limits, RunPlan
from .result import RunResult
from .run import AgentRun
from .special_tools import ExitTool, ToolSearchTool
from .streaming import StreamingFunctionTool, streaming_tool

__all__ = [
    "Agent", "AgentContext", "AgentRegistry", "AgentRun", "AgentTool", "CancelHandle", "CancelMode",
    "Checkpoint", "Detection", "ExitTool", "Interruption", "Limits", "Middleware", "Question", "Resume",
    "RunPlan", "RunResult", "RunState", "StreamingFunctionTool", "ToolCallInfo", "ToolInterrupt",
    "ToolSearchTool", "streaming_tool",
]
