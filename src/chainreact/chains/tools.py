"""Chains as tools of an agent: the `rulechain` and `agent` tool types (by `targetId`), and the built-in
MCP provider `server: "self"` that lists, reads and runs the engine's loaded chains.

    tool = chain_tool(engine, "summarize")        # a chainreact Tool running chain "summarize"
    Agent(..., tools=[tool]); Agent(..., providers={"self": EngineToolProvider(engine)})

A tool call sends a new message (type TOOL_CALL, JSON data = the arguments) to the chain and answers the
data of the last ended branch; a Failure end, a timeout or a missing chain is an error result for the
model, never an exception."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import orjson

from ..tools.base import Tool, ToolContext, ToolOutput
from .msg import FAILURE, JSON, TEXT, RuleMsg

if TYPE_CHECKING:
    from .model import EngineLike as RuleEngine

DEFAULT_TIMEOUT = 120.0
TOOL_CALL = "TOOL_CALL"
_AGENT_SCHEMA = {"type": "object", "properties": {"input": {"type": "string", "description": "the task"}},
                 "required": ["input"]}
_FREE_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}


def _tool_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", text)[:64]
    return name or "chain"


class ChainTool(Tool):
    def __init__(self, engine: RuleEngine, target_id: str, *, name: str | None = None,
                 description: str | None = None, parameters: dict[str, Any] | None = None,
                 timeout: float = DEFAULT_TIMEOUT, kind: str = "rulechain"):
        self.engine = engine
        self.target_id = target_id
        self.kind = kind
        self.timeout = timeout
        chain = engine.get(target_id)
        info = (chain.definition.ruleChain.additionalInfo or {}) if chain is not None else {}
        chain_name = chain.name if chain is not None else ""
        self.name = name or _tool_name(chain_name if kind == "agent" and chain_name else target_id)
        self.description = description or str(info.get("description") or chain_name
                                               or f"Runs the rule chain {target_id!r}.")
        schema = parameters or info.get("inputSchema")
        if isinstance(schema, str):
            try:
                schema = orjson.loads(schema)
            except orjson.JSONDecodeError:
                schema = None
        self._free_text = not isinstance(schema, dict) and kind == "agent"
        self.parameters = schema if isinstance(schema, dict) else (_AGENT_SCHEMA if kind == "agent"
                                                                   else _FREE_SCHEMA)

    async def run(self, args: dict[str, Any], ctx: ToolContext | None = None) -> str | ToolOutput:
        if self._free_text and set(args) <= {"input"}:
            msg = RuleMsg(type=TOOL_CALL, data=str(args.get("input", "")), data_type=TEXT)
        else:
            msg = RuleMsg(type=TOOL_CALL, data=orjson.dumps(args).decode(), data_type=JSON)
        if self.engine.get(self.target_id) is None:  # said so the operator can fix it, not 'failed'
            return ToolOutput(f"Error: rule chain {self.target_id!r} is not loaded (load its file: "
                              "`chainreact chain run --load FILE_OR_DIR`, or serve its folder)", True)
        try:
            ends = await self.engine.run(self.target_id, msg, timeout=self.timeout)
        except Exception as e:
            return ToolOutput(f"Error: rule chain {self.target_id!r} failed: {e}", True)
        if not ends:
            return ""
        last = ends[-1]
        if last.relation == FAILURE or last.error:
            return ToolOutput(f"Error: rule chain {self.target_id!r} ended on {last.relation or 'Failure'}: "
                              f"{last.error or last.msg.data}", True)
        return last.msg.data


def chain_tool(engine: RuleEngine, target_id: str, **kwargs: Any) -> Tool:
    """A Tool that runs chain `target_id` of `engine` (see ChainTool for the keyword arguments)."""
    return ChainTool(engine, target_id, **kwargs)


def chain_tools_for(engine: RuleEngine, entries: list[Any]) -> tuple[list[Any], list[Tool]]:
    """Split a config's tool entries: `rulechain` entries and `agent` entries naming a loaded chain become
    ChainTools; everything else stays for the agent's own resolver. This is the resolver hook the agent's
    build step can call for these two types."""
    keep: list[Any] = []
    tools: list[Tool] = []
    for entry in entries:
        desc = entry.model_dump() if hasattr(entry, "model_dump") else entry
        if isinstance(desc, dict) and desc.get("type") in ("rulechain", "agent"):
            target = str(desc.get("targetId") or "")
            if desc["type"] == "rulechain" or (target and engine.get(target) is not None):
                ms = desc.get("timeout")
                tools.append(ChainTool(engine, target, name=desc.get("name") or None,
                                       description=desc.get("description") or None,
                                       parameters=desc.get("parameters") if isinstance(desc.get("parameters"),
                                                                                       dict) else None,
                                       timeout=ms / 1000 if ms else DEFAULT_TIMEOUT, kind=desc["type"]))
                continue
        keep.append(entry)
    return keep, tools


def host_agent_parts(engine: RuleEngine, config: Any) -> tuple[Any, dict[str, Any]]:
    """For a host that runs agents beside a chain engine (`chainreact run --load`, `chainreact serve`): the
    agent config without its chain tool entries, and the Agent keywords that supply them (the chain tools,
    and the `self` MCP provider over this engine's chains)."""
    keep, tools = chain_tools_for(engine, list(config.tools))
    return config.model_copy(update={"tools": keep}), {"tools": tools,
                                                        "providers": {"self": EngineToolProvider(engine)}}


class EngineToolProvider:
    """The `server: "self"` MCP provider: the host's loaded chains as tools."""

    def __init__(self, engine: RuleEngine):
        self.engine = engine

    async def list_tool_definitions(self) -> list[dict[str, Any]]:
        return [
            {"name": "list_rule_chains",
             "description": "List the loaded rule chains (id, name, description).",
             "parameters": {"type": "object", "properties": {}}},
            {"name": "get_rule_chain", "description": "The DSL (JSON) of one rule chain, by id.",
             "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
            {"name": "run_rule_chain",
             "description": "Send a message to a rule chain and return its ended branches.",
             "parameters": {"type": "object", "properties": {
                 "id": {"type": "string"}, "data": {"type": "string"}, "type": {"type": "string"},
                 "metadata": {"type": "object", "additionalProperties": {"type": "string"}}},
                 "required": ["id"]}},
        ]

    async def call_tool(self, name: str, args: dict[str, Any]) -> str | ToolOutput:
        engine = self.engine
        if name == "list_rule_chains":
            out = [{"id": c.id, "name": c.name,
                    "description": str((c.definition.ruleChain.additionalInfo or {}).get("description", ""))}
                   for c in engine.chains.values()]
            return orjson.dumps(out).decode()
        cid = str(args.get("id") or "")
        chain = engine.get(cid)
        if chain is None:
            return ToolOutput(f"Error: no rule chain with id {cid!r} (see list_rule_chains)", True)
        if name == "get_rule_chain":
            return orjson.dumps(chain.definition.to_json()).decode()
        if name == "run_rule_chain":
            data = args.get("data", "")
            msg = RuleMsg(type=str(args.get("type") or TOOL_CALL),
                          data=data if isinstance(data, str) else orjson.dumps(data).decode(),
                          metadata={str(k): str(v) for k, v in (args.get("metadata") or {}).items()})
            ends = await engine.run(chain.id, msg, timeout=DEFAULT_TIMEOUT)
            return orjson.dumps([e.to_dict() for e in ends]).decode()
        return ToolOutput(f"Error: unknown tool {name!r}", True)


def tool_resolver(engine: RuleEngine) -> Any:
    """A resolver for the agent's tool building: descriptor (`rulechain`, or `agent` naming a loaded
    chain) -> Tool, or None when the descriptor is not about a chain of this engine."""

    def resolve(desc: Any) -> Tool | None:
        _keep, tools = chain_tools_for(engine, [desc])
        return tools[0] if tools else None

    return resolve
