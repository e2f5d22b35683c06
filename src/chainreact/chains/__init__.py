"""chainreact.chains: a RuleGo-compatible rule-chain engine (DSL, engine, components, agent node).

Every name is imported on first use: `chainreact run` reaches `agent_from_document` (agent_doc.py)
through this package for every agent, and only an agent that runs rule chains needs the engine."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent_doc import agent_from_document
    from .context import NodeContext, NodeLimitError
    from .dsl import ChainDef, ChainLoadError, chain_from_dict, is_chain_document, load_chain_file
    from .engine import Chain, RuleEngine, validate, validate_chain
    from .model import DebugEvent, End
    from .msg import BINARY, DEFAULT, FAILURE, FALSE, JSON, STREAM, SUCCESS, TEXT, TRUE, RuleMsg
    from .tools import EngineToolProvider, chain_tool

__all__ = ["BINARY", "DEFAULT", "FAILURE", "FALSE", "JSON", "STREAM", "SUCCESS", "TEXT", "TRUE", "Chain",
           "ChainDef", "ChainLoadError", "DebugEvent", "End", "EngineToolProvider", "NodeContext",
           "NodeLimitError", "RuleEngine", "RuleMsg", "agent_from_document", "chain_from_dict", "chain_tool",
           "is_chain_document", "load_chain_file", "validate", "validate_chain"]


def __getattr__(name: str) -> Any:
    module: Any
    if name == "agent_from_document":
        from . import agent_doc as module
    elif name in ("NodeContext", "NodeLimitError"):
        from . import context as module
    elif name in ("ChainDef", "ChainLoadError", "chain_from_dict", "is_chain_document", "load_chain_file"):
        from . import dsl as module
    elif name in ("Chain", "RuleEngine", "validate", "validate_chain"):
        from . import engine as module
    elif name in ("DebugEvent", "End"):
        from . import model as module
    elif name in ("EngineToolProvider", "chain_tool"):  # they pull in the tools layer
        from . import tools as module
    elif name in __all__:
        from . import msg as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value
