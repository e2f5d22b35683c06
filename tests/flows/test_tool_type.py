"""ToolForAIDef.type is optional in the flow spec: a tool without it is a `standard` tool (direct execution)
unless it has an `mcpClient` (then it is an MCP tool)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chainreact.flows import Flow

from ..tools.mcp.mcp_testkit import HTTPServer
from .servers import order_tool, shop_api

SCHEMA = {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}


def one_node(llm_url: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "t", "nodes": [{"name": "clerk", "type": "aiagent", "llmConfig": {"url": llm_url},
                                  "userMessage": "{{userInput}}", "tools": tools,
                                  "output": {"schema": SCHEMA}}]}


async def test_a_tool_without_type_and_with_execution_is_a_standard_tool(fake_llm: Any,
                                                                          tmp_path: Path) -> None:
    with shop_api() as api:
        tool = order_tool(api)
        del tool["type"]
        srv = fake_llm([
            {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "A1"}, "id": "c1"}]},
            {"text": json.dumps({"response": "Shipped."})},
        ])
        async with Flow.from_dict(one_node(srv.url, [tool]), state=f"sqlite:///{tmp_path}/s.db") as flow:
            turn = await flow.send("s1", "Where is A1?")
        assert [m.content for m in turn.messages] == ["Shipped."]
        assert [(h.method, h.path) for h in api.hits] == [("GET", "/orders/A1")]
        result = [m for m in srv.chat_requests[1].messages if m.get("role") == "tool"]
        assert json.loads(result[0]["content"])["status"] == "shipped"


async def test_a_tool_without_type_and_with_mcp_client_is_an_mcp_tool(fake_llm: Any,
                                                                        tmp_path: Path) -> None:
    mcp = HTTPServer("streamable-http", {})
    mcp.start()
    try:
        tool = {"name": "helpers", "description": "MCP helpers",
                "mcpClient": {"url": mcp.url, "toolFilter": {"type": "include", "includedTools": ["echo"]}}}
        srv = fake_llm([
            {"tool_calls": [{"name": "echo", "arguments": {"text": "Lyon"}, "id": "c1"}]},
            {"text": json.dumps({"response": "Done."})},
        ])
        async with Flow.from_dict(one_node(srv.url, [tool]), state=f"sqlite:///{tmp_path}/s.db") as flow:
            turn = await flow.send("s1", "Echo Lyon")
        assert [m.content for m in turn.messages] == ["Done."]
        assert [t["function"]["name"] for t in srv.chat_requests[0].body["tools"]] == ["echo"]
        result = [m for m in srv.chat_requests[1].messages if m.get("role") == "tool"]
        assert result[0]["content"] == "echo: Lyon"
    finally:
        mcp.stop()
