"""The merged outputs of join, flow and groupAction, shaped as RuleGo marshals them."""

from __future__ import annotations

from typing import Any

import orjson

from ..msg import JSON, RuleMsg, parse_json_or_string


def wrapper(msg: RuleMsg, err: str | None, node_id: str) -> dict[str, Any]:
    return {"msg": {"ts": msg.ts, "id": msg.id, "dataType": msg.data_type, "type": msg.type,
                    "data": msg.data, "metadata": {}},
            "err": err or "", "nodeId": node_id}


def wrappers_json(items: list[dict[str, Any]]) -> str:
    """Go marshals the wrapper structs in field order (msg, err, nodeId), not sorted like maps."""
    return orjson.dumps(items).decode()


def merge_map(items: list[tuple[RuleMsg, str | None, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m, _err, nid in items:
        v = parse_json_or_string(m.data) if m.data_type == JSON else m.data
        if isinstance(v, dict):
            out.update(v)
        else:
            out[nid] = v
    return out
