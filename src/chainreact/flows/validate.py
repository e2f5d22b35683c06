"""Loading and checking a flow document: every problem at once, each with its JSON path.

Shape errors come from the pydantic models; the cross-node checks run on the raw document next to them
(so one run reports a misspelt field *and* a transition to a missing node): unique node names, at most
one start node, transitions and outcome transitions that name an existing node, conditions and templates
that parse, `output.schema` that is a usable JSON Schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..config import fallback_id
from ..config.kinds import wrong_kind
from ..errors import ConfigError
from ..expr import ExprSyntaxError
from .exprs import compile_condition, compile_template
from .llm import PROVIDERS
from .model import NODE_TYPES, FlowDef

# Node fields that are `{{...}}` templates.
_TEMPLATE_FIELDS = ("userMessage", "systemMessage", "userIdentityExpression", "answerMessage", "message",
                    "input")


def _path(loc: tuple[Any, ...]) -> str:
    out = "$"
    prev: Any = None
    for i, part in enumerate(loc):
        # A discriminated union puts the tag in the location: $.nodes[0].aiagent.output -> drop it.
        if i >= 2 and loc[i - 2] == "nodes" and isinstance(prev, int) and part in NODE_TYPES:
            prev = part
            continue
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
        prev = part
    return out


def _shape_errors(e: ValidationError) -> list[tuple[str, str]]:
    out = []
    for err in e.errors():
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field (docs/flows.md lists the fields of each node kind)"
        elif err["type"] == "union_tag_invalid":
            msg = f"unknown node type; expected one of {', '.join(NODE_TYPES)}"
        out.append((_path(tuple(err["loc"])), msg))
    return out


def _check_transition(t: Any, where: str, names: set[str], errors: list[tuple[str, str]]) -> None:
    if not isinstance(t, dict) or t.get("end") is True:
        return
    target = t.get("targetId")
    if isinstance(target, str) and target not in names:
        known = ", ".join(sorted(names)) or "none"
        errors.append((f"{where}.targetId", f"no node named {target!r} in this flow (nodes: {known})"))


def _check_schema(schema: Any, where: str, errors: list[tuple[str, str]]) -> None:
    from ..tools.jsonschema_lite import compile_schema

    if not isinstance(schema, dict):
        return  # the shape check already reports it
    try:
        compile_schema(schema)
    except Exception as e:  # SchemaError, or a keyword of the wrong type the compiler tripped over
        errors.append((where, f"not a valid JSON Schema: {e}"))


def _collaborators(node: dict[str, Any]) -> list[Any]:
    mac = node.get("multiAgentCollaboration")
    if not isinstance(mac, dict) or mac.get("enabled") is False:
        return []
    found = mac.get("collaborators")
    return found if isinstance(found, list) else []


def _check_collaboration(node: dict[str, Any], at: str, by_name: dict[str, Any],
                         errors: list[tuple[str, str]], base_dir: Path | None) -> None:
    tool_names: set[str] = set()
    for j, c in enumerate(_collaborators(node)):
        if not isinstance(c, dict):
            continue
        where = f"{at}.multiAgentCollaboration.collaborators[{j}]"
        target, file = c.get("node"), c.get("agentFile")
        if bool(target) == bool(file):
            errors.append((where, "give exactly one of node (an aiagent node of this flow) or agentFile"))
        if isinstance(file, str) and file and base_dir is not None and not (base_dir / file).is_file():
            errors.append((f"{where}.agentFile", f"no agent document {str(base_dir / file)!r} (agentFile is "
                                                 "relative to the flow document)"))
        if isinstance(target, str) and target:
            other = by_name.get(target)
            if other is None:
                known = ", ".join(sorted(n for n, d in by_name.items() if d.get("type") == "aiagent"))
                errors.append((f"{where}.node", f"no node named {target!r} in this flow (aiagent nodes: "
                                                f"{known or 'none'})"))
            elif other.get("type") != "aiagent":
                errors.append((f"{where}.node", f"{target!r} is a {other.get('type')} node; a collaborator "
                                                "must be an aiagent node"))
            elif target == node.get("name"):
                errors.append((f"{where}.node", "an agent cannot be its own collaborator"))
        name = c.get("name") or target or None
        if isinstance(name, str):
            if name in tool_names:
                errors.append((f"{where}.name", f"two collaborators are called {name!r}: give each a "
                                                "distinct name"))
            tool_names.add(name)


def _check_collaboration_cycles(nodes: list[Any], by_name: dict[str, Any],
                                errors: list[tuple[str, str]]) -> None:
    """A supervisor reaching itself through its collaborators' own collaborators would recurse forever."""
    graph: dict[str, list[str]] = {
        name: [str(c["node"]) for c in _collaborators(n)
               if isinstance(c, dict) and isinstance(c.get("node"), str) and c["node"] in by_name
               and c["node"] != name]
        for name, n in by_name.items()}
    for i, node in enumerate(nodes):
        if not isinstance(node, dict) or not isinstance(node.get("name"), str):
            continue
        start = node["name"]
        stack: list[tuple[str, list[str]]] = [(c, [start, c]) for c in graph.get(start, [])]
        seen: set[str] = set()
        while stack:
            cur, path = stack.pop()
            if cur == start:
                errors.append((f"$.nodes[{i}].multiAgentCollaboration",
                               f"collaborators form a cycle: {' -> '.join(path)}"))
                break
            if cur in seen:
                continue
            seen.add(cur)
            stack.extend((n, [*path, n]) for n in graph.get(cur, []))


def _semantic_errors(data: dict[str, Any], base_dir: Path | None = None) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
    nodes = data.get("nodes")
    if not isinstance(nodes, list):
        return errors
    names: set[str] = set()
    starts: list[str] = []
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            continue
        name = node.get("name")
        if isinstance(name, str):
            if name in names:
                errors.append((f"$.nodes[{i}].name", f"duplicate node name {name!r}"))
            names.add(name)
        if node.get("start") is True:
            starts.append(f"$.nodes[{i}]")
    by_name = {n["name"]: n for n in nodes if isinstance(n, dict) and isinstance(n.get("name"), str)}
    _check_collaboration_cycles(nodes, by_name, errors)
    if len(starts) > 1:
        errors.append((starts[1] + ".start", f"more than one start node ({', '.join(starts)})"))
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            continue
        at = f"$.nodes[{i}]"
        _check_transition(node.get("transition"), f"{at}.transition", names, errors)
        if node.get("type") == "rulechain" and not node.get("chainId") and not node.get("chainFile"):
            errors.append((at, "a rulechain node needs chainId or chainFile"))
        for field in _TEMPLATE_FIELDS:
            text = node.get(field)
            if isinstance(text, str):
                try:
                    compile_template(text)
                except ExprSyntaxError as e:
                    errors.append((f"{at}.{field}", f"expression does not parse: {e}"))
        memory = node.get("memory")
        if isinstance(memory, dict) and isinstance(memory.get("memoryId"), str):
            try:
                compile_template(memory["memoryId"])
            except ExprSyntaxError as e:
                errors.append((f"{at}.memory.memoryId", f"expression does not parse: {e}"))
        llm = node.get("llmConfig")
        if isinstance(llm, dict) and not llm.get("url") and isinstance(llm.get("provider"), str) \
                and not PROVIDERS.get(llm["provider"].lower()):
            known = ", ".join(p for p, u in PROVIDERS.items() if u)
            errors.append((f"{at}.llmConfig.provider", f"unknown provider {llm['provider']!r} (or one "
                           f"that needs a URL): give llmConfig.url, or one of {known}"))
        output = node.get("output")
        if isinstance(output, dict):
            _check_schema(output.get("schema"), f"{at}.output.schema", errors)
        _check_collaboration(node, at, by_name, errors, base_dir)
        outcomes = node.get("agentOutcomes")
        if isinstance(outcomes, list):
            for j, oc in enumerate(outcomes):
                if not isinstance(oc, dict):
                    continue
                cond = oc.get("condition")
                if isinstance(cond, str):
                    try:
                        compile_condition(cond)
                    except ExprSyntaxError as e:
                        errors.append((f"{at}.agentOutcomes[{j}].condition", f"does not parse: {e}"))
                _check_transition(oc.get("transition"), f"{at}.agentOutcomes[{j}].transition", names,
                                  errors)
    return errors


def _tool_errors(flow: FlowDef) -> list[tuple[str, str]]:
    """The agent nodes' tool descriptors, parsed as their turns would (an HTTP tool without `execution`,
    a bad MCP config...), so such a flow fails to load rather than in the middle of a conversation."""
    from ..tools.check import descriptor_problems

    errors: list[tuple[str, str]] = []
    for i, node in enumerate(flow.nodes):
        tools = getattr(node, "tools", None)
        if tools:
            errors.extend(descriptor_problems([t.descriptor() for t in tools], f"$.nodes[{i}].tools"))
    return errors


def load_flow(data: Any, *, source: str | None = None) -> FlowDef:
    """The flow of a parsed document, or ConfigError whose `errors` lists every (JSON path, message)."""
    where = source or "<flow>"
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: $: expected a flow object {{\"nodes\": [...]}}", source=source,
                          errors=[("$", "expected an object")])
    if wrong := wrong_kind(data, "flow", source):  # an agent or a chain: say so, not the fields it lacks
        raise wrong
    errors: list[tuple[str, str]] = []
    flow: FlowDef | None = None
    try:
        flow = FlowDef.model_validate(data)
    except ValidationError as e:
        errors.extend(_shape_errors(e))
    # agentFile is checked against the disk only when the document's place is known.
    errors.extend(_semantic_errors(data, Path(source).parent if source and Path(source).is_file() else None))
    if flow is not None:
        errors.extend(_tool_errors(flow))
    if errors or flow is None:
        lines = "\n".join(f"  {p}: {m}" for p, m in errors)
        raise ConfigError(f"{where}: invalid flow ({len(errors)} problem(s)):\n{lines}", source=source,
                          errors=errors)
    return flow


def validate(data: Any, *, source: str | None = None) -> str:
    """`chainreact validate`'s hook: a one-line summary, or ConfigError listing every problem."""
    flow = load_flow(data, source=source)
    kinds: dict[str, int] = {}
    for n in flow.nodes:
        kinds[n.type] = kinds.get(n.type, 0) + 1
    parts = ", ".join(f"{v} {k}" for k, v in kinds.items())
    ident = flow.id or flow.name or fallback_id(source, "flow")  # the id `serve` lists it under
    return f"{ident!r}, {len(flow.nodes)} node(s) ({parts}), " \
           f"start {flow.start_node.name!r}"


__all__ = ["load_flow", "validate"]
