"""Agent configuration documents: typed models and the JSON/YAML loader."""

from .loader import AgentDocument, UnknownFieldWarning, json_schema, load_document, parse_text
from .models import (
    AgentConfig,
    ChatMessage,
    Compat,
    FailoverEndpoint,
    ModelParams,
    RuleChainNode,
    Timeouts,
    ToolDescriptor,
    is_local_url,
)

__all__ = [
    "AgentConfig", "AgentDocument", "ChatMessage", "Compat", "FailoverEndpoint", "ModelParams",
    "RuleChainNode", "Timeouts", "ToolDescriptor", "UnknownFieldWarning", "is_local_url", "json_schema",
    "load_document", "parse_text",
]
