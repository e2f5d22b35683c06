"""Agent configuration documents: typed models, the JSON/YAML loader, and the one path from a document to
the runtime configuration (`resolve_agent_config`)."""

from .checks import template_problems
from .documents import FoundDocument, FoundDocuments, fallback_id, find_documents
from .endpoint import env_api_key, env_endpoint, with_default_endpoint
from .globals import build_globals, parse_global
from .kinds import DocumentKind, detect_document_kind
from .loader import AgentDocument, UnknownFieldWarning, load_document, parse_text
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
from .resolve import (
    as_document,
    render_run_texts,
    resolve_agent_config,
    template_context,
    uses_embedded_model,
)
from .schema import json_schema

__all__ = [
    "AgentConfig",
    "AgentDocument",
    "ChatMessage",
    "Compat",
    "DocumentKind",
    "FailoverEndpoint",
    "FoundDocument",
    "FoundDocuments",
    "ModelParams",
    "RuleChainNode",
    "Timeouts",
    "ToolDescriptor",
    "UnknownFieldWarning",
    "as_document",
    "build_globals",
    "detect_document_kind",
    "env_api_key",
    "env_endpoint",
    "fallback_id",
    "find_documents",
    "is_local_url",
    "json_schema",
    "load_document",
    "parse_global",
    "parse_text",
    "render_run_texts",
    "resolve_agent_config",
    "template_context",
    "template_problems",
    "uses_embedded_model",
    "with_default_endpoint",
]
