"""chainreact.chains: a RuleGo-compatible rule-chain engine (DSL, engine, components, agent node)."""

from .context import DebugEvent, End, NodeContext, NodeLimitError
from .dsl import ChainDef, ChainLoadError, chain_from_dict, is_chain_document, load_chain_file
from .engine import Chain, RuleEngine, validate_chain
from .msg import BINARY, DEFAULT, FAILURE, FALSE, JSON, STREAM, SUCCESS, TEXT, TRUE, RuleMsg

__all__ = ["BINARY", "DEFAULT", "FAILURE", "FALSE", "JSON", "STREAM", "SUCCESS", "TEXT", "TRUE", "Chain",
           "ChainDef", "ChainLoadError", "DebugEvent", "End", "NodeContext", "NodeLimitError", "RuleEngine",
           "RuleMsg", "chain_from_dict", "is_chain_document", "load_chain_file", "validate_chain"]
