"""The JSON Schema of an agent document (`chainreact schema`), as strict as `chainreact validate`.

validate (config/loader.py) refuses a key no model knows, at any depth of the configuration (`maxSteps`,
`params.temprature`, `failover[0].modle`) and beside a node's `configuration`, unless the document says
`"unknownFields": "warn"`. The schema says the same: the models' definitions are strict
(`additionalProperties: false`), and a document whose configuration says `"unknownFields": "warn"`
matches lenient copies of them (the same definitions with extra keys allowed, named `...Lenient`). The
parts validate keeps lenient stay open in both: free-form objects (`params.extraFields`,
`params.jsonSchema`, a tool's `parameters`) and a tool's typed `config`/`execution` (unknown keys there are
warnings: tools/descriptors.py adds their definitions).

A bare configuration needs one agent field besides `name`/`description` (config/kinds.py), and a flow's
node on its own is not an agent document.
"""

from __future__ import annotations

import copy
from typing import Any

from .kinds import _FLOW_NODE_TYPES, _agent_keys
from .models import AgentConfig, RuleChainNode

# The models whose unknown keys validate reports (loader._collect_unknown walks exactly these).
STRICT_MODELS = ("AgentConfig", "ChatMessage", "ModelParams", "Compat", "Timeouts", "FailoverEndpoint",
                 "ToolDescriptor", "RuleChainNode")
NODE_KEYS = ("id", "type", "name", "configuration", "debugMode", "additionalInfo")
LENIENT = "Lenient"


def json_schema() -> dict[str, Any]:
    """JSON Schema of an agent document (bare configuration or rule-chain node), for editors (module doc)."""
    agent = AgentConfig.model_json_schema(by_alias=True)
    node = RuleChainNode.model_json_schema(by_alias=True)
    defs: dict[str, Any] = {**agent.pop("$defs", {}), **node.pop("$defs", {})}
    defs["AgentConfig"] = agent
    node["properties"]["configuration"] = {"$ref": "#/$defs/AgentConfig"}
    node["properties"]["type"] = {"const": "ai/agent", "default": "ai/agent", "title": "Type"}
    for key in NODE_KEYS:  # RuleGo's node fields that validate accepts beside the configuration
        node["properties"].setdefault(key, {})
    defs["RuleChainNode"] = node
    for name in STRICT_MODELS:
        lenient = _renamed(copy.deepcopy(defs[name]))
        lenient["additionalProperties"] = True
        defs[name + LENIENT] = lenient
        defs[name] = {**defs[name], "additionalProperties": False}
    warn = {"properties": {"unknownFields": {"const": "warn"}}, "required": ["unknownFields"]}
    is_node = {"required": ["configuration"]}
    bare = {"anyOf": [{"required": [k]} for k in sorted(_agent_keys())],
            "not": {"anyOf": [is_node, {"properties": {"type": {"enum": sorted(_FLOW_NODE_TYPES)}},
                                        "required": ["type"]}]}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "chainreact agent document",
        "anyOf": [
            {"$ref": "#/$defs/RuleChainNode"},
            {"allOf": [{"$ref": "#/$defs/AgentConfig"}, bare]},
            # "unknownFields": "warn": unknown keys are ignored (validate warns)
            {"allOf": [{"$ref": f"#/$defs/RuleChainNode{LENIENT}"}, {"properties": {"configuration": warn}}]},
            {"allOf": [{"$ref": f"#/$defs/AgentConfig{LENIENT}"}, bare, warn]},
        ],
        "$defs": defs,
    }


def _renamed(schema: Any) -> Any:
    """`schema` with its references to the strict models pointing at their lenient copies."""
    if isinstance(schema, dict):
        out = {k: _renamed(v) for k, v in schema.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.removeprefix("#/$defs/") in STRICT_MODELS:
            out["$ref"] = ref + LENIENT
        return out
    if isinstance(schema, list):
        return [_renamed(v) for v in schema]
    return schema


__all__ = ["json_schema"]
