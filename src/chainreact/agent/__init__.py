"""The agent: one ReAct engine behind declarative documents and the programmatic API."""

from .agent import Agent
from .answer_format import AnswerFormat, AnswerFormatError, answer_format
from .as_tool import AgentTool
from .build import AgentRegistry, sub_agent_problems
from .cancel import CancelHandle, CancelMode
from .gc_load import gc_tuning, runs_in_flight
from .interrupt import Checkpoint, Interruption, Question, Resume, ToolInterrupt
from .middleware import AgentContext, Middleware, RunState, ToolCallInfo
from .plan import Detection, Limits, RunPlan
from .result import RunResult
from .run import AgentRun
from .run_options import EXTERNAL, ExternalTool, RunOptions, external_tools, pending_external
from .special_tools import ExitTool, ToolSearchTool
from .streaming import StreamingFunctionTool, streaming_tool

__all__ = [
    "EXTERNAL", "Agent", "AgentContext", "AgentRegistry", "AgentRun", "AgentTool", "AnswerFormat",
    "AnswerFormatError", "CancelHandle", "CancelMode", "Checkpoint", "Detection", "ExitTool", "ExternalTool",
    "Interruption", "Limits", "Middleware", "Question", "Resume", "RunOptions", "RunPlan", "RunResult",
    "RunState", "StreamingFunctionTool", "ToolCallInfo", "ToolInterrupt", "ToolSearchTool", "answer_format",
    "external_tools", "gc_tuning", "pending_external", "runs_in_flight", "streaming_tool",
    "sub_agent_problems",
]
