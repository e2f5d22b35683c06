"""Small JSON-shaped helpers shared across layers (bottom layer: imports nothing of chainreact)."""

from __future__ import annotations

from typing import Any


def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`top` merged into a copy of `base`: nested objects merge, any other value of `top` wins."""
    out = dict(base)
    for k, v in top.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def to_text(value: Any) -> str:
    """A tool's return value as text for the model: strings as they are, None as "", else compact JSON
    (falling back to str() for what JSON cannot hold)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    import orjson

    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)
