"""Messages, tool calls, usage and events: the bottom layer, importing nothing else of chainreact."""

from .events import (
    BreakerEvent,
    Cancelled,
    ClientEvent,
    ErrorEvent,
    Event,
    FailoverEvent,
    Final,
    Interrupted,
    ModelCallEnd,
    Preamble,
    ReasoningDelta,
    RetryEvent,
    RunStart,
    RunWarning,
    StepEnd,
    TextDelta,
    ToolCallEvent,
    ToolOutputDelta,
    ToolResultEvent,
)
from .messages import (
    REPORTED,
    Content,
    Message,
    ModelResponse,
    ReasoningChunk,
    Reported,
    Role,
    StreamItem,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    Usage,
    assistant,
    system,
    tool_result,
    user,
)

__all__ = [
    "REPORTED", "BreakerEvent", "Cancelled", "ClientEvent", "Content", "ErrorEvent", "Event", "FailoverEvent",
    "Final", "Interrupted", "Message", "ModelCallEnd", "ModelResponse", "Preamble", "ReasoningChunk",
    "ReasoningDelta", "Reported", "RetryEvent", "Role", "RunStart", "RunWarning", "StepEnd", "StreamItem",
    "TextChunk", "TextDelta", "ToolCall", "ToolCallChunk", "ToolCallEvent", "ToolOutputDelta",
    "ToolResultEvent", "Usage", "assistant", "system", "tool_result", "user",
]
