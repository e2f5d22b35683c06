"""Tool descriptors checked without running anything: what `chainreact validate` reports about an agent's
`tools` (and a flow node's), which a run would otherwise find only when it builds its tools.

Each descriptor goes through the same parsing its run uses (the HTTP tool's `execution`, the MCP server's
config, a builtin's and an agent tool's config), but nothing is imported from the user's code, no server
is started or called and no file is read. A descriptor holding a `${...}` expression is left to its run:
its values are known only then (globals, session values).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from ..errors import ConfigError


def descriptor_problems(entries: Sequence[Any], where: str) -> list[tuple[str, str]]:
    """(JSON path, message) for each problem of the descriptors `entries` (`where`: their list's path,
    e.g. "$.configuration.tools")."""
    problems: list[tuple[str, str]] = []
    for i, entry in enumerate(entries):
        at = f"{where}[{i}]"
        d = _as_dict(entry)
        if d is None or "${" in orjson.dumps(d, default=str).decode():
            continue  # a Python tool object, or values known only at run time
        try:
            _check(d, at)
        except ConfigError as e:
            problems.extend(e.errors or [(at, str(e))])
    return problems


def _as_dict(entry: Any) -> dict[str, Any] | None:
    if isinstance(entry, str):
        return {"type": "builtin", "name": entry}
    if isinstance(entry, dict):
        return entry
    dump = getattr(entry, "model_dump", None)  # a ToolDescriptor
    return dump(exclude_none=True, by_alias=True) if dump is not None else None


def _check(d: dict[str, Any], at: str) -> None:
    kind = d.get("type") or "builtin"
    config = d.get("config") or {}
    if kind == "builtin":
        from .builtin.configs import MODELS
        from .descriptors import validate_part
        from .registry import builtin_factory

        name = str(d.get("name") or "")
        if not name:
            raise ConfigError(f"{at}.name: a builtin tool needs a name (e.g. 'bash')",
                              errors=[(f"{at}.name", "a builtin tool needs a name (e.g. 'bash')")])
        builtin_factory(name, f"{at}.name")
        if name in MODELS:
            validate_part(MODELS[name], config, f"{at}.config")
    elif kind in ("http", "standard"):
        from .http import create_http_tool

        create_http_tool(d, at)
    elif kind == "mcp":
        from .mcp.config import parse_descriptor

        parse_descriptor(d, at)
    elif kind == "python":
        from .descriptors import PythonToolConfig, validate_part

        path = validate_part(PythonToolConfig, config, f"{at}.config").function or d.get("name") or ""
        mod, _, attr = path.partition(":") if ":" in path else path.rpartition(".")
        if not mod or not attr:
            msg = f"expected a function path like 'package.module:function', got {path!r}"
            raise ConfigError(f"{at}.config.function: {msg}", errors=[(f"{at}.config.function", msg)])
    elif kind == "a2a":
        from .a2a import parse_descriptor as parse_a2a

        parse_a2a(d, at)
    elif kind in ("agent", "rulechain"):
        from .descriptors import AgentToolOptions, RuleChainToolOptions, validate_part

        if not d.get("targetId"):
            what = "another agent document's id" if kind == "agent" else "the rule chain to run"
            msg = f"{'an' if kind == 'agent' else 'a'} {kind!r} tool needs a targetId naming {what}"
            raise ConfigError(f"{at}.targetId: {msg}", errors=[(f"{at}.targetId", msg)])
        validate_part(AgentToolOptions if kind == "agent" else RuleChainToolOptions, config, f"{at}.config")


__all__ = ["descriptor_problems"]
