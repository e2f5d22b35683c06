"""The Agent of a `chainreact run` document, with the rule chains its tools use: shared by `run` and
`runs resume` (which rebuilds a saved run's agent from the document and chains saved with it)."""

from __future__ import annotations

from typing import Any


def build_agent(doc: Any, globals_: dict[str, Any], load: list[str] | tuple[str, ...], source: str) -> Any:
    """The Agent of a resolved document; with `load` (chain files or folders), or rulechain / MCP `self`
    tools, hosted on a RuleEngine holding those chains (the spec's Multi-Tool document runs unchanged
    this way). `runs resume` builds the agent of a saved run the same way."""
    from ..agent import Agent

    extra: dict[str, Any] = {}
    if load or _uses_chains(doc.config):
        import dataclasses

        from ..chains import RuleEngine
        from ..chains.tools import host_agent_parts

        engine = RuleEngine(properties=globals_)
        for path in load:
            engine.load_path(path)
        missing = [t.targetId for t in doc.config.tools
                   if getattr(t, "type", None) == "rulechain" and engine.get(t.targetId) is None]
        if missing:
            from ..errors import ConfigError

            raise ConfigError(f"{source}: rulechain tool target(s) {', '.join(map(repr, missing))} not "
                              "loaded: give their chain files or folders with --load")
        config, extra = host_agent_parts(engine, doc.config)
        doc = dataclasses.replace(doc, config=config)
    return Agent.from_config(doc, globals=globals_, **extra)


def _uses_chains(config: Any) -> bool:
    for t in config.tools:
        kind = getattr(t, "type", None)
        if kind == "rulechain" or (kind == "mcp" and (t.config or {}).get("server") == "self"):
            return True
    return False
