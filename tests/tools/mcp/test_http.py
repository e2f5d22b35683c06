"""An in-test SDK server over streamable HTTP and SSE on 127.0.0.1, behind bearer / header auth."""

from __future__ import annotations

import pytest

from chainreact.errors import ToolError
from chainreact.tools.base import ToolContext, ToolOutput
from chainreact.tools.mcp import MCPServer

pytestmark = pytest.mark.mcp
CTX = ToolContext()
TOKEN = "sk-test-7f3a"


def flow_desc(url: str, auth: dict | None = None, **client: object) -> dict:
    mcp_client: dict = {"url": url, **client}
    if auth is not None:
        mcp_client["auth"] = auth
    return {"name": "testTools", "type": "mcp", "description": "in-test server", "mcpClient": mcp_client}


async def test_streamable_http_bearer_auth_list_and_call(http_server):
    srv = http_server(headers={"Authorization": f"Bearer {TOKEN}"})
    desc = flow_desc(srv.url, {"type": "bearer", "bearerToken": TOKEN})
    async with MCPServer.from_descriptor(desc) as server:
        tools = {t.name: t for t in await server.list_tools()}
        assert set(tools) == {"echo", "slow", "fail", "ns_lookup"}
        assert tools["ns_lookup"].remote_name == "ns.lookup"  # '.' is not allowed in OpenAI tool names
        assert tools["echo"].parameters["required"] == ["text"]
        assert await tools["echo"].run({"text": "hi"}, CTX) == "echo: hi"
        # structured content (dict return) -> the server also sends its JSON as text; either way it's JSON
        looked = await tools["ns_lookup"].run({"key": "k1"}, CTX)
        assert isinstance(looked, str) and '"key"' in looked and '"k1"' in looked
        failed = await tools["fail"].run({"reason": "disk on fire"}, CTX)
        assert isinstance(failed, ToolOutput) and failed.is_error
        assert failed.content.startswith("Error: ") and "disk on fire" in failed.content
    assert srv.guard.rejected == 0 and srv.guard.accepted > 0


async def test_wrong_or_missing_bearer_token_is_rejected(http_server):
    srv = http_server(headers={"Authorization": f"Bearer {TOKEN}"})
    for auth in ({"type": "bearer", "bearerToken": "sk-wrong"}, None):
        server = MCPServer.from_descriptor(flow_desc(srv.url, auth))
        with pytest.raises(ToolError) as ei:
            await server.list_tools()
        msg = str(ei.value)
        assert "HTTP 401" in msg and "auth" in msg and srv.url in msg
        await server.aclose()
    assert srv.guard.rejected >= 2 and srv.guard.accepted == 0


async def test_custom_header_auth_and_exclude_filter(http_server):
    required = {"Authorization": "ApiKey abc", "X-App-ID": "customer-support-agent"}
    srv = http_server(headers=required)
    desc = flow_desc(
        srv.url,
        {"type": "header", "headers": required},
        toolFilter={"type": "exclude", "excludedTools": ["fail", "slow"]},
    )
    async with MCPServer.from_descriptor(desc) as server:
        assert sorted(t.name for t in await server.list_tools()) == ["echo", "ns_lookup"]
        assert await server.call_tool("echo", {"text": "x"}) == "echo: x"
    # one header right, one missing: rejected
    bad = flow_desc(srv.url, {"type": "header", "headers": {"Authorization": "ApiKey abc"}})
    with pytest.raises(ToolError, match="HTTP 401"):
        await MCPServer.from_descriptor(bad).list_tools()


async def test_server_restart_between_calls_reinitialises(http_server):
    srv = http_server(headers={"Authorization": f"Bearer {TOKEN}"})
    desc = flow_desc(srv.url, {"type": "bearer", "bearerToken": TOKEN})
    async with MCPServer.from_descriptor(desc) as server:
        assert await server.call_tool("echo", {"text": "before"}) == "echo: before"
        srv.restart()  # a new server process state: the old session id is unknown (HTTP 404)
        assert await server.call_tool("echo", {"text": "after"}) == "echo: after"
        assert srv.guard.rejected == 0


async def test_server_gone_gives_tool_error_naming_the_url(http_server):
    srv = http_server()
    async with MCPServer.from_descriptor(flow_desc(srv.url)) as server:
        assert await server.call_tool("echo", {"text": "1"}) == "echo: 1"
        srv.stop()
        with pytest.raises(ToolError) as ei:
            await server.call_tool("echo", {"text": "2"})
        assert srv.url in str(ei.value) and "could not connect" in str(ei.value)


async def test_http_call_timeout(http_server):
    srv = http_server()
    # 2 s, not less: the timeout also bounds the echo call after it, and on a loaded 2-core CI machine the
    # in-test server (same process) took over 0.5 s to answer that echo once.
    async with MCPServer.from_descriptor(flow_desc(srv.url, callTimeout=2)) as server:
        with pytest.raises(ToolError, match=r"'slow' .* did not answer within 2 s"):
            await server.call_tool("slow", {"seconds": 30})
        assert await server.call_tool("echo", {"text": "still here"}) == "echo: still here"


async def test_sse_transport_with_bearer_auth(http_server):
    srv = http_server(transport="sse", headers={"Authorization": f"Bearer {TOKEN}"})
    desc = {
        "type": "mcp",
        "name": "legacy",
        "config": {"url": srv.url, "auth": {"type": "bearer", "bearerToken": TOKEN}},
    }
    async with MCPServer.from_descriptor(desc) as server:
        assert server.config.transport == "sse"
        assert "echo" in [t.name for t in await server.list_tools()]
        assert await server.call_tool("echo", {"text": "over sse"}) == "echo: over sse"
    with pytest.raises(ToolError):
        await MCPServer.from_descriptor({"type": "mcp", "config": {"url": srv.url}}).list_tools()


async def test_rulego_server_url_is_streamable_http(http_server):
    srv = http_server()
    desc = {"type": "mcp", "config": {"server": srv.url, "tools": "echo"}}
    async with MCPServer.from_descriptor(desc) as server:
        assert server.config.transport == "streamable-http"
        tools = await server.list_tools()
        assert [t.name for t in tools] == ["echo"]
        assert await tools[0].run({"text": "hi"}, CTX) == "echo: hi"
