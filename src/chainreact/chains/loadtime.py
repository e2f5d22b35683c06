"""Load-time substitution in node configurations: `${global.k}`, `${vars.k}`, `${ruleChain.field}`.

Every string of a configuration (recursively) is rewritten once when the chain is compiled; a string that
is wholly one placeholder keeps the value's type; unresolvable placeholders and every other `${...}`
(per-message ones like `${metadata.x}`) are left unchanged (RuleGo engine/node.go, utils/str)."""

from __future__ import annotations

import re
from typing import Any

_PLACEHOLDER = re.compile(r"\$\{\s*(global|vars|ruleChain)\.([A-Za-z0-9_.\-]+)\s*\}")
_MISSING = object()


def _lookup(env: dict[str, Any], root: str, path: str) -> Any:
    cur: Any = env.get(root)
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return _MISSING
    return cur


def _text(v: Any) -> str:
    from .msg import to_data_string

    return to_data_string(v)


def substitute(value: Any, env: dict[str, Any]) -> Any:
    if isinstance(value, str):
        if "${" not in value:
            return value
        m = _PLACEHOLDER.fullmatch(value.strip())
        if m:
            v = _lookup(env, m.group(1), m.group(2))
            return value if v is _MISSING else v

        def repl(m: re.Match[str]) -> str:
            v = _lookup(env, m.group(1), m.group(2))
            return m.group(0) if v is _MISSING else _text(v)

        return _PLACEHOLDER.sub(repl, value)
    if isinstance(value, dict):
        return {k: substitute(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, env) for v in value]
    return value
