"""The one path from an agent document to a runnable Agent.

`chainreact run` (and `runs resume`), the server's catalog and `chainreact worker` build their agents
here, so a document means the same thing, and is checked the same way, wherever it runs:

    agent = agent_from_document("agent.json", globals={"api_key": "..."})
    agent = agent_from_document(path, globals=g, load=["chains/"])      # its rulechain tools' chains
    agent = agent_from_document(path, globals=g, engine=engine)         # a host's own loaded chains

An agent whose tools run rule chains (`rulechain` tools, the MCP `self` server), or that is given chains,
is hosted on a RuleEngine: `engine`, else a new one holding the `load`ed chain files and folders. A
`rulechain` tool whose target chain is not loaded is a ConfigError naming it when the agent is built, not
at its first run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..agent import Agent
    from ..agent.middleware import Middleware
    from ..config.loader import AgentDocument
    from .engine import RuleEngine


def agent_from_document(src: str | Path | Mapping[str, Any] | AgentDocument, *,
                        globals: Mapping[str, Any] | None = None, engine: RuleEngine | None = None,
                        load: Sequence[str | Path] = (), middleware: Sequence[Middleware] = ()) -> Agent:
    """The Agent of `src` (a path, a dict, or a document, resolved or not) with its endpoint templates
    rendered with `globals`; hosted on `engine` (or on a new engine with `load`) when it uses rule chains
    (module doc). Raises ConfigError naming the file and what is wrong."""
    from ..agent import Agent
    from ..config import resolve_agent_config

    g = dict(globals or {})
    doc = resolve_agent_config(src, g)
    extra: dict[str, Any] = {}
    if engine is not None or load or uses_chains(doc.config):
        from .tools import host_agent_parts

        if engine is None:
            from .engine import RuleEngine

            engine = RuleEngine(properties=g)
        for path in load:
            engine.load_path(path)
        targets = ((i, str(getattr(t, "targetId", ""))) for i, t in enumerate(doc.config.tools)
                   if getattr(t, "type", None) == "rulechain")
        missing = [(f"$.tools[{i}].targetId", target) for i, target in targets if engine.get(target) is None]
        if missing:
            from ..errors import ConfigError

            names = ", ".join(repr(target) for _, target in missing)
            raise ConfigError(f"{doc.source or doc.name}: rulechain tool target(s) {names} not loaded: give "
                              "their chain files or folders (--load; `serve`: beside the agent)",
                              source=doc.source, errors=[(path, f"no loaded rule chain {target!r}")
                                                         for path, target in missing])
        config, extra = host_agent_parts(engine, doc.config)
        doc = dataclasses.replace(doc, config=config)
    return Agent.from_config(doc, globals=g, middleware=middleware, **extra)


def uses_chains(config: Any) -> bool:
    """Whether an agent config's tools run rule chains: `rulechain` tools or the MCP `self` server."""
    for t in config.tools:
        kind = getattr(t, "type", None)
        if kind == "rulechain" or (kind == "mcp" and (t.config or {}).get("server") == "self"):
            return True
    return False


__all__ = ["agent_from_document", "uses_chains"]
