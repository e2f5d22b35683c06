"""Served documents that cannot run, and why: `/readyz` lists them, `chainreact serve` prints them at start.

A document that does not load at all is a *problem* (`catalog.problems`). Some load and still cannot run:
a rule chain's `ai/agent` or `ai/llm` node whose `url`, `key` or `model` (or a failover endpoint's) still
holds a `${...}` after the chain's load-time substitution. RuleGo leaves a `${global.x}` that no global
defines as it is, so the chain loads, and its first message would send a model call to the text
"${global.url}". An agent document cannot be in that state: its endpoint templates are rendered strictly,
and a missing global is a problem naming it (config/resolve.py).
"""

from __future__ import annotations

import re
from typing import Any

from .catalog import Catalog

_FIELDS = ("url", "key", "model")
_PLACEHOLDER = re.compile(r"\$\{\s*([^}]*?)\s*\}")


def cannot_run(catalog: Catalog) -> list[dict[str, str]]:
    """One {"id", "kind", "source", "why"} per served document that cannot run (module doc)."""
    out: list[dict[str, str]] = []
    engine = catalog.engine
    for entry in catalog.entries.values():
        if entry.kind != "chain" or engine is None:
            continue
        chain = engine.get(entry.id)
        if chain is None:
            continue
        whys = [why for node in chain.nodes.values() for why in _node_whys(node)]
        if whys:
            out.append({"id": entry.id, "kind": entry.kind, "source": entry.source, "why": "; ".join(whys)})
    return out


def _node_whys(node: Any) -> list[str]:
    cfg = getattr(node.component, "agent_config", None)
    if cfg is None:
        return []
    endpoints = [("", cfg), *((f"failover[{i}].", fo) for i, fo in enumerate(cfg.failover))]
    whys = []
    for prefix, ep in endpoints:
        for name in _FIELDS:
            value = getattr(ep, name, None) or ""
            m = _PLACEHOLDER.search(value) if isinstance(value, str) else None
            if m is None:
                continue
            variable = m.group(1)
            if re.fullmatch(r"(global|vars|ruleChain)\.[\w.\-]+", variable):
                why = f"{variable} is not defined"
                if variable.startswith("global."):
                    why += f" (give it: --global {variable.removeprefix('global.')}=...)"
            else:  # a chain renders only these three at load; nothing renders a node's endpoint later
                why = "only ${global.x}, ${vars.x} and ${ruleChain.x} are rendered in a node's endpoint"
            whys.append(f"node {node.id!r} {prefix}{name} is {value!r}: {why}")
    return whys


__all__ = ["cannot_run"]
