"""From descriptors to tools: resolving a config's `tools` list (strings and objects mixed).

    "bash"                                  builtin by name (string shorthand)
    {"type": "builtin", "name", "config"}   builtin with its config (workDir, timeout...)
    {"type": "python", "name", "config": {"function": "pkg.mod:fn"}}   a Python function
    {"type": "http" | "standard", ...}      an HTTP endpoint (the flow spec's ToolForAIDef)
    {"type": "mcp", ...}                    the tools of an MCP server (filtered)
    {"type": "a2a", "url", "auth"}          a remote A2A agent (its card gives the name and description)
    {"type": "agent", "targetId": "id"}     another agent document, as a tool (`parameters`: its input
                                            schema; `timeout` in ms, default 120 s)
    {"type": "rulechain", "targetId": "id"} a chain of the host's rule engine (chains.tools supplies it)

Tool objects and plain functions (programmatic users) pass through unchanged.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..config import ToolDescriptor, load_document
from ..errors import ConfigError
from ..tools.base import Tool, as_tool
from ..tools.registry import create_builtin


class AgentRegistry:
    """Finds agent documents by id: from a dict (id -> document/path/Agent) and/or directories.

    In a directory, `<id>.json|.yaml|.yml` matches, as does any document whose node `id` equals the id.
    """

    def __init__(self, agents: Mapping[str, Any] | None = None, dirs: Sequence[str | Path] = ()):
        self._agents: dict[str, Any] = dict(agents or {})
        self._dirs = [Path(d) for d in dirs]

    def find(self, target_id: str) -> Any:
        if target_id in self._agents:
            return self._agents[target_id]
        for d in self._dirs:
            for ext in (".json", ".yaml", ".yml"):
                p = d / f"{target_id}{ext}"
                if p.is_file():
                    return str(p)
            for p in sorted(d.glob("*")):
                if p.suffix in (".json", ".yaml", ".yml") and p.is_file():
                    try:
                        doc = load_document(p, lenient=True)  # only its id is read here
                    except ConfigError:
                        continue
                    if doc.id == target_id:
                        return doc
        return None

    def ids(self) -> list[str]:
        """The ids an `agent` tool may name: the dict's, and the directories' agent documents (by file
        stem and by their own id); chains, flows and other files there are not agents."""
        ids = set(self._agents)
        for d in self._dirs:
            for p in sorted(d.glob("*")):
                if p.suffix in (".json", ".yaml", ".yml") and p.is_file():
                    try:
                        doc = load_document(p, lenient=True)  # a typo in it is reported when it is built
                    except ConfigError:
                        continue  # not an agent document (or a broken one: `validate` names it)
                    ids.update(i for i in (p.stem, doc.id) if i)
        return sorted(ids)


MAX_AGENT_DEPTH = 8  # sub-agents of sub-agents... at most this deep
AGENT_TOOL_TIMEOUT_MS = 120_000  # the spec's default for `agent` / `rulechain` tools


class ToolOwner(Protocol):
    """What resolving tools needs from the agent that owns them (the Agent implements it)."""

    name: str

    @property
    def agent_id(self) -> str:
        """The document's id (else the name): how sub-agent cycles are recognised."""
        ...
    base_dir: Path
    providers: dict[str, Any]
    agents: AgentRegistry

    def render_descriptor(self, desc: ToolDescriptor) -> ToolDescriptor: ...

    def load_sub_agent(self, found: Any) -> Any:
        """A registry entry as an agent object with `as_tool(...)`."""
        ...


def _import_function(path: str, where: str, base_dir: Path | None = None) -> Callable[..., Any] | Tool:
    """Import `module:function`; a module next to the document (base_dir) is found too."""
    mod, _, attr = path.partition(":") if ":" in path else path.rpartition(".")
    if not mod or not attr:
        raise ConfigError(f"{where}: expected a function path like 'package.module:function', got {path!r}")
    try:
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if base_dir is None or e.name != mod.split(".")[0]:
                raise
            import sys

            sys.path.insert(0, str(base_dir))
            try:
                module = importlib.import_module(mod)
            finally:
                sys.path.remove(str(base_dir))
        fn = getattr(module, attr)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"{where}: cannot import {path!r}: {e}") from None
    if not callable(fn) and not isinstance(fn, Tool):
        raise ConfigError(f"{where}: {path!r} is not callable")
    return fn


async def resolve_tools(entries: Sequence[Any], owner: ToolOwner) -> list[Tool]:
    tools: list[Tool] = []
    approve: set[int] = set()  # ids of the tools whose descriptor sets requireApproval
    approve_mcp: set[str] = set()  # the `where` of MCP entries that set it (their tools come later)
    mcp: list[tuple[str, ToolDescriptor]] = []
    mcp_at = 0  # MCP tools take the place of the first MCP entry (servers connect together)
    for i, entry in enumerate(entries):
        where = f"tools[{i}]"
        if isinstance(entry, Tool) or (callable(entry) and not isinstance(entry, str | dict)):
            tools.append(as_tool(entry))
            continue
        if isinstance(entry, str):
            tools.append(create_builtin(entry, {}, None, where))
            continue
        desc = entry if isinstance(entry, ToolDescriptor) else ToolDescriptor.model_validate(entry)
        desc = owner.render_descriptor(desc)
        before = len(tools)
        if desc.type == "builtin":
            if not desc.name:
                raise ConfigError(f"{where}: a builtin tool needs a name (e.g. 'bash')")
            tools.append(create_builtin(desc.name, desc.config, desc, where))
        elif desc.type == "python":
            from ..tools.descriptors import PythonToolConfig, validate_part

            pcfg = validate_part(PythonToolConfig, desc.config, f"{where}.config")
            path = pcfg.function or desc.name
            fn = _import_function(str(path), where, owner.base_dir)
            if isinstance(fn, Tool):  # already a tool (e.g. decorated with @tool)
                tools.append(fn)
            else:
                from ..tools.base import FunctionTool

                name = desc.name if desc.name and ":" not in desc.name else None
                ft = FunctionTool(fn, name=name, description=desc.description or None,
                                 parameters=_parameters(desc.parameters, where), thread=pcfg.thread)
                if desc.timeout:
                    ft.timeout = desc.timeout / 1000
                tools.append(ft)
        elif desc.type in ("http", "standard"):
            from ..tools.http import create_http_tool

            tools.append(create_http_tool(desc, where))
        elif desc.type == "mcp":
            if not mcp:
                mcp_at = len(tools)
            mcp.append((where, desc))
            if desc.requireApproval:
                approve_mcp.add(where)
        elif desc.type == "a2a":
            from ..tools.a2a import load_a2a_tool

            tools.append(await load_a2a_tool(desc, where))
        elif desc.type == "agent":
            tools.append(_agent_tool(desc, owner, where))
        elif desc.type == "rulechain":
            raise ConfigError(
                f"{where}: tool type 'rulechain' (targetId {desc.targetId!r}) runs a chain of a rule engine: "
                "load the chain (chainreact run --load CHAIN, chainreact serve CHAIN_DIR), or run this agent "
                "as an ai/agent node of a chain"
            )
        if desc.requireApproval:
            approve.update(id(t) for t in tools[before:])
    if mcp:
        try:
            from ..tools.mcp import load_mcp_tools
        except ImportError as e:
            raise ConfigError(
                f"{mcp[0][0]}: MCP tools need the 'mcp' extra: pip install 'chainreact[mcp]' ({e})"
            ) from None
        # Names already taken by other tools make clashing MCP tools take a "<server>_" prefix.
        found = await load_mcp_tools([d for _, d in mcp], providers=owner.providers,
                                     taken=[t.name for t in tools], wheres=[w for w, _ in mcp])
        tools[mcp_at:mcp_at] = found
        approve.update(id(t) for t in found if _mcp_where(t) in approve_mcp)
    if approve:
        from .interrupts import require_approval

        tools = [require_approval(t) if id(t) in approve else t for t in tools]
    seen: dict[str, int] = {}
    for i, t in enumerate(tools):
        if t.name in seen:
            raise ConfigError(f"tools: two tools are named {t.name!r} (entries {seen[t.name]} and {i}); "
                              "tool names must be unique—rename one")
        seen[t.name] = i
    return tools


def _mcp_where(t: Tool) -> str | None:
    """The descriptor entry ("tools[3]") an MCP tool came from."""
    return getattr(getattr(getattr(t, "server", None), "config", None), "where", None)


def _parameters(p: Any, where: str) -> dict[str, Any] | None:
    if p is None:
        return None
    if isinstance(p, str):
        import orjson

        try:
            p = orjson.loads(p)
        except orjson.JSONDecodeError as e:
            raise ConfigError(f"{where}.parameters: not valid JSON Schema text: {e}") from None
    if isinstance(p, dict) and "schema" in p and "type" not in p:
        p = p["schema"]  # the flow spec wraps it as {"schema": {...}}
    if not isinstance(p, dict):
        raise ConfigError(f"{where}.parameters: expected a JSON Schema object")
    return p


def _agent_tool(desc: ToolDescriptor, owner: ToolOwner, where: str) -> Tool:
    if not desc.targetId:
        raise ConfigError(f"{where}: an 'agent' tool needs a targetId naming another agent document")
    found = owner.agents.find(desc.targetId)
    if found is None:
        known = ", ".join(owner.agents.ids()) or "(none registered)"
        raise ConfigError(f"{where}: no agent with id {desc.targetId!r}; known agent ids: {known}. "
                          "Pass agents= (a dict or a directory) to Agent.from_config")
    check_sub_agents(owner.agent_id, desc.targetId, owner.agents, where)
    sub = owner.load_sub_agent(found)
    from ..tools.descriptors import AgentToolOptions, validate_part

    opts = validate_part(AgentToolOptions, desc.config, f"{where}.config")
    timeout = desc.timeout if desc.timeout is not None else AGENT_TOOL_TIMEOUT_MS
    tool: Tool = sub.as_tool(name=desc.name or None, description=desc.description or None,
                             input_schema=_parameters(desc.parameters, where),
                             full_history=opts.full_history, emit_internal_events=opts.emit_internal_events)
    tool.timeout = timeout / 1000 if timeout else None
    return tool


def _agent_targets(found: Any) -> list[str]:
    """The targetIds of the `agent` tools of a registry entry (a path, a dict, a document, an Agent)."""
    from ..config import AgentDocument

    cfg: Any
    if isinstance(found, str | Path | Mapping):
        try:
            cfg = load_document(dict(found) if isinstance(found, Mapping) else found, lenient=True).config
        except ConfigError:
            return []  # reported when that agent itself is built
    elif isinstance(found, AgentDocument):
        cfg = found.config
    else:
        cfg = getattr(found, "config", None)
        if cfg is None:
            return []
    out: list[str] = []
    for t in cfg.tools:
        desc = t if isinstance(t, ToolDescriptor) else None
        if desc is None and isinstance(t, Mapping):
            desc = ToolDescriptor.model_validate(t)
        if desc is not None and desc.type == "agent" and desc.targetId:
            out.append(desc.targetId)
    return out


def check_sub_agents(owner_id: str, target_id: str, registry: AgentRegistry, where: str) -> None:
    """Refuse an agent that reaches itself through its sub-agents, and nesting deeper than MAX_AGENT_DEPTH.
    Walks the documents only (nothing is built or connected)."""

    def walk(chain: tuple[str, ...]) -> None:
        if chain[-1] in chain[:-1]:
            raise ConfigError(f"{where}: agent {owner_id!r} reaches itself through its sub-agents "
                              f"({' -> '.join(chain)}); an agent cannot be its own sub-agent")
        if len(chain) - 1 > MAX_AGENT_DEPTH:
            raise ConfigError(f"{where}: sub-agents nest deeper than {MAX_AGENT_DEPTH} levels "
                              f"({' -> '.join(chain)}); flatten the hierarchy")
        found = registry.find(chain[-1])
        if found is not None:
            for nxt in _agent_targets(found):
                walk((*chain, nxt))

    walk((owner_id, target_id))


def sub_agent_problems(doc: Any) -> list[tuple[str, str]]:
    """(JSON path, message) for each `agent` tool of a loaded document (config.AgentDocument) that its run
    would refuse: a target no document beside it has, or one that leads back to the agent itself (or
    nests deeper than MAX_AGENT_DEPTH). The agent registry is the document's folder, as in
    Agent.from_config; a targetId holding `${...}` is left to the run."""
    registry = AgentRegistry(dirs=[doc.base_dir])
    owner = doc.id or doc.name
    problems: list[tuple[str, str]] = []
    for i, t in enumerate(doc.config.tools):
        if not isinstance(t, ToolDescriptor) or t.type != "agent" or not t.targetId or "${" in t.targetId:
            continue
        at = f"{doc.json_prefix}.tools[{i}].targetId"
        if registry.find(t.targetId) is None:
            known = ", ".join(registry.ids()) or "none"
            problems.append((at, f"no agent document with id {t.targetId!r} in {doc.base_dir} "
                                 f"(a file {t.targetId}.json/.yaml or a node with that id; found: {known})"))
            continue
        try:
            check_sub_agents(owner, t.targetId, registry, at)
        except ConfigError as e:
            problems.append((at, str(e).removeprefix(f"{at}: ")))
    return problems
