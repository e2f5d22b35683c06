"""chainreact.chains: a RuleGo-compatible rule-chain engine (DSL, engine, components, agent node)."""

from typing import Any

from .context import NodeContext, NodeLimitError
from .dsl import ChainDef, ChainLoadError, chain_from_dict, is_chain_document, load_chain_file
from .engine import Chain, RuleEngine, validate, validate_chain
from .model import DebugEvent, End
from .msg import BINARY, DEFAULT, FAILURE, FALSE, JSON, STREAM, SUCCESS, TEXT, TRUE, RuleMsg

__all__ = ["BINARY", "DEFAULT", "FAILURE", "FALSE", "JSON", "STREAM", "SUCCESS", "TEXT", "TRUE", "Chain",
           "ChainDef", "ChainLoadError", "DebugEvent", "End", "EngineToolProvider", "NodeContext",
           "NodeLimitError", "RuleEngine", "RuleMsg", "chain_from_dict", "chain_tool", "is_chain_document",
           "load_chain_file", "validate", "validate_chain"]


def __getattr__(name: str) -> Any:
    # chains-as-tools pull in the tools layer: imported on first use (`import chainreact.chains` stays light)
    if name in ("EngineToolProvider", "chain_tool"):
        from . import tools

        return getattr(tools, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
