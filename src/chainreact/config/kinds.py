"""What a JSON/YAML document is, by its shape: an agent, a rule chain or a flow.

- agent: a rule-chain node `{"type": "ai/agent" (or absent), "configuration": {...}}`, or a bare agent
  configuration: an object with at least one agent field (`url`, `model`, `systemPrompt`, `tools`, ...;
  `name` and `description` alone do not count: a package.json has them too);
- chain: a RuleGo rule chain `{"ruleChain": {...}, "metadata": {"nodes": [...], ...}}`;
- flow: `{"nodes": [{"type": "aiagent", ...}, ...]}`.

Anything else is a ConfigError saying what was expected, never an empty agent.
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import ConfigError

DocumentKind = Literal["agent", "chain", "flow"]

# Fields that say "agent" on their own (computed from the model on first use).
_AGENT_KEYS: frozenset[str] | None = None
_GENERIC_KEYS = frozenset({"name", "description"})
# chainreact.flows.model.NODE_TYPES (config sits below flows, so the names are restated; a test pins them).
_FLOW_NODE_TYPES = frozenset({"aiagent", "message", "end", "rulechain"})


def _agent_keys() -> frozenset[str]:
    global _AGENT_KEYS
    if _AGENT_KEYS is None:
        from .models import AgentConfig

        _AGENT_KEYS = frozenset(AgentConfig.model_fields) - _GENERIC_KEYS
    return _AGENT_KEYS


def detect_document_kind(data: Any, *, source: str | None = None) -> DocumentKind:
    """"agent", "chain" or "flow" for a parsed document; ConfigError (naming `source`) for anything else."""
    where = source or "<document>"
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: $: expected an object (an agent, a rule chain or a flow), "
                          f"got {type(data).__name__}", source=source, errors=[("$", "expected an object")])
    if isinstance(data.get("ruleChain"), dict):
        return "chain"
    nodes = data.get("nodes")
    if isinstance(nodes, list) and all(isinstance(n, dict) and isinstance(n.get("type"), str) for n in nodes):
        return "flow"
    if isinstance(data.get("configuration"), dict) and data.get("type", "ai/agent") == "ai/agent":
        return "agent"
    if "configuration" not in data and data.get("type") in _FLOW_NODE_TYPES:
        # A flow's node on its own: it looks like an agent (llmConfig, a prompt) but runs only in a flow.
        kind = data["type"]
        raise ConfigError(
            f"{where}: this is a flow node ({kind!r}), not a document: a node runs inside a flow. Put it "
            'in a flow document\'s nodes, {"nodes": [<this node>, ...], "id": "my-flow"} (docs/flows.md), '
            "then `chainreact validate` or `chainreact flow send` that",
            source=source, errors=[("$.type", f"a flow node ({kind!r}), not a document: put it in a flow "
                                               '{"nodes": [<this node>, ...]}')],
        )
    if "configuration" not in data and _agent_keys() & data.keys():
        return "agent"
    keys = ", ".join(sorted(map(str, data))[:8]) or "none"
    raise ConfigError(
        f"{where}: not an agent, rule chain or flow document (top-level keys: {keys}). Expected an agent "
        "configuration (url, model, systemPrompt, tools, ...), an ai/agent node "
        '{"type": "ai/agent", "configuration": {...}}, a rule chain {"ruleChain": ..., "metadata": ...} '
        'or a flow {"nodes": [...]}',
        source=source, errors=[("$", "not an agent, rule chain or flow document")],
    )


_HOW_TO_RUN: dict[str, tuple[str, str]] = {
    "agent": ("an agent document", "run it with `chainreact run FILE PROMPT`, or talk to it with "
                                   "`chainreact chat FILE`"),
    "chain": ("a rule chain", "run it with `chainreact chain run FILE --data ...`"),
    "flow": ("a flow", "send it a message with `chainreact flow send FILE TEXT --session S`, or talk to it "
                       "with `chainreact chat FILE`"),
}


def kind_mismatch(kind: DocumentKind, expected: DocumentKind, source: str | None) -> ConfigError:
    """The error of a command given a `kind` document where it runs `expected` ones: what the file is and
    the command that runs it ("this is a flow, not an agent document: send it a message with ...")."""
    what, how = _HOW_TO_RUN[kind]
    said = f"this is {what}, not {_HOW_TO_RUN[expected][0]}"
    return ConfigError(f"{source or '<document>'}: {said}: {how}", source=source, errors=[("$", said)])


def wrong_kind(data: Any, expected: DocumentKind, source: str | None) -> ConfigError | None:
    """kind_mismatch's error when `data` is a document of another kind than `expected`; None when it is
    `expected` or no document at all (the caller's own checks say what is wrong then)."""
    try:
        kind = detect_document_kind(data)
    except ConfigError:
        return None
    return None if kind == expected else kind_mismatch(kind, expected, source)
