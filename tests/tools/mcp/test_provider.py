"""`server: "self"`: tools supplied by the embedding application through the ToolProvider protocol."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chainreact.errors import ToolError
from chainreact.tools.base import ToolContext, ToolOutput
from chainreact.tools.mcp import MCPServer, ToolProvider, load_mcp_tools


class RuleChains:
    """A host provider like the rule-chain engine's: a small in-memory catalogue."""

    def __init__(self) -> None:
        self.chains = {"c1": {"id": "c1", "name": "orders"}, "c2": {"id": "c2", "name": "refunds"}}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def list_tool_definitions(self) -> list[dict[str, Any]]:
        return [
            {"name": "list_rule_chains", "description": "List rule chains", "parameters": {"type": "object"}},
            {
                "name": "get_rule_chain",
                "description": "Get one rule chain",
                "inputSchema": {
                    "type": "object",
                    "properties": {"id": {"type": "string"}},
                    "required": ["id"],
                },
            },
            {"name": "delete_rule_chain", "description": "Delete one"},
            {"name": "slow", "description": "Never answers in time"},
        ]

    async def call_tool(self, name: str, args: dict[str, Any]) -> str | dict[str, Any] | ToolOutput:
        self.calls.append((name, args))
        if name == "list_rule_chains":
            return {"chains": sorted(self.chains)}  # plain dict -> compact JSON
        if name == "get_rule_chain":
            chain = self.chains.get(args["id"])
            if chain is None:  # MCP-shaped error result
                return {"content": [{"type": "text", "text": f"no chain {args['id']}"}], "isError": True}
            return chain["name"]
        if name == "slow":
            await asyncio.sleep(30)
        return ToolOutput(content="refused", is_error=True)


def desc(**config: Any) -> dict[str, Any]:
    return {"type": "mcp", "config": {"server": "self", **config}}


def test_protocol_is_runtime_checkable():
    assert isinstance(RuleChains(), ToolProvider)


async def test_self_provider_list_filter_and_call():
    host = RuleChains()
    server = MCPServer.from_descriptor(
        desc(tools=["list_rule_chains", "get_rule_chain"]), providers={"self": host}
    )
    tools = await server.list_tools()
    assert [t.name for t in tools] == ["list_rule_chains", "get_rule_chain"]
    by_name = {t.name: t for t in tools}
    # missing `parameters` and the `inputSchema` spelling both end up as object schemas
    assert by_name["list_rule_chains"].parameters == {"type": "object", "properties": {}}
    assert by_name["get_rule_chain"].parameters["required"] == ["id"]

    assert await by_name["list_rule_chains"].run({}, ToolContext()) == '{"chains":["c1","c2"]}'
    assert await by_name["get_rule_chain"].run({"id": "c2"}, ToolContext()) == "refunds"
    err = await by_name["get_rule_chain"].run({"id": "zz"}, ToolContext())
    assert err == ToolOutput(content="Error: no chain zz", is_error=True)
    assert host.calls == [
        ("list_rule_chains", {}),
        ("get_rule_chain", {"id": "c2"}),
        ("get_rule_chain", {"id": "zz"}),
    ]
    await server.aclose()


async def test_provider_call_timeout_raises_tool_error():
    server = MCPServer.from_descriptor(desc(callTimeout=0.05), providers={"self": RuleChains()})
    with pytest.raises(ToolError, match=r"config\.callTimeout"):
        await server.call_tool("slow", {})


async def test_named_providers_and_load_mcp_tools():
    tools = await load_mcp_tools(
        [{"type": "mcp", "config": {"server": "rules", "tools": ["get_rule_chain"]}}],
        providers={"rules": RuleChains()},
    )
    assert [t.name for t in tools] == ["get_rule_chain"]
    assert await tools[0].run({"id": "c1"}, ToolContext()) == "orders"
