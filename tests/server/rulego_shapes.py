"""RuleGo's wire shapes, transcribed from its Go sources (rulego/rulego api/types, rulego-server
internal/controller and internal/service), for the RuleGo face's tests. Each is the set of JSON keys the
Go struct marshals (fields tagged `omitempty` are listed apart: they may be absent)."""

from __future__ import annotations

from typing import Any

# api/types/dsl.go RuleChain: {RuleChain RuleChainBaseInfo `json:"ruleChain"`, Metadata `json:"metadata"`}
RULE_CHAIN = {"ruleChain", "metadata"}
# api/types/dsl.go RuleChainBaseInfo (configuration and additionalInfo are omitempty in Go; RuleGo's UI
# reads additionalInfo.description without a check, so chainreact always sends it)
BASE_INFO = {"id", "name", "debugMode", "root", "disabled", "additionalInfo"}
BASE_INFO_OPTIONAL = {"configuration"}
# api/types/dsl.go RuleMetadata (endpoints, ruleChainConnections: omitempty)
METADATA = {"firstNodeIndex", "nodes", "connections"}
# api/types/dsl.go RuleNode (additionalInfo: omitempty)
RULE_NODE = {"id", "type", "name", "debugMode", "configuration"}
# api/types/msg.go RuleMsg
RULE_MSG = {"ts", "id", "dataType", "type", "data", "metadata"}
# rulego-server internal/controller/rule.go list(): map{"total", "page", "size", "items"}
PAGE = {"total", "page", "size", "items"}
# internal/service/debug_data.go DebugDataPage
DEBUG_PAGE = {"pageSize", "current", "total", "items"}
# internal/service/debug_data.go DebugData (chainReact adds chainId, as rulego's newer server does)
DEBUG_DATA = {"ts", "nodeId", "flowType", "msg", "relationType", "err"}
# internal/router/websocket.go: the map each debug event is marshalled from
WS_EVENT = {"chainId", "flowType", "nodeId", "relationType", "err", "msg", "ts"}
# api/types/dsl.go RuleChainRunSnapshot (RuleChain embedded: its fields at the top; additionalInfo omitempty)
RUN_SNAPSHOT = {"ruleChain", "metadata", "id", "startTs", "endTs", "logs"}
# api/types/dsl.go RuleNodeRunLog
NODE_RUN_LOG = {"nodeId", "inMsg", "outMsg", "relationType", "err", "logItems", "startTs", "endTs"}
# internal/controller/node.go Components(): map{"endpoints", "nodes", "tools", "builtins"}
COMPONENTS = {"endpoints", "nodes", "tools", "builtins"}
# api/types/component.go ComponentForm (router: omitempty, endpoints only)
COMPONENT_FORM = {"type", "category", "order", "fields", "label", "desc", "icon", "relationTypes", "disabled",
                  "version", "componentKind"}
# api/types/component.go ComponentFormField (ref, group: omitempty)
FORM_FIELD = {"name", "type", "defaultValue", "label", "desc", "validate", "rules", "fields", "component",
              "required"}
# internal/controller/base.go Login(): map{"token", "expiresAt"}
LOGIN = {"token", "expiresAt"}


def has_shape(value: Any, keys: set[str], optional: frozenset[str] | set[str] = frozenset()) -> bool:
    """`value` is an object with every key of `keys` and none but those and `optional`."""
    return isinstance(value, dict) and keys <= set(value) <= keys | optional


def chain_shape(doc: Any) -> None:
    """A chain DSL as RuleGo marshals it, checked all the way down to its nodes."""
    assert has_shape(doc, RULE_CHAIN), doc
    assert has_shape(doc["ruleChain"], BASE_INFO, BASE_INFO_OPTIONAL), doc["ruleChain"]
    assert isinstance(doc["ruleChain"]["additionalInfo"], dict)
    assert has_shape(doc["metadata"], METADATA, {"endpoints", "ruleChainConnections"}), doc["metadata"]
    for node in doc["metadata"]["nodes"]:
        assert has_shape(node, RULE_NODE, {"additionalInfo"}), node
