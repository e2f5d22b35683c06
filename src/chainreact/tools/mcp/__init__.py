"""MCP tools: the tools of Model Context Protocol servers (stdio, streamable HTTP, SSE) and of host providers.

    from chainreact.tools.mcp import MCPServer, load_mcp_tools
    server = MCPServer.from_descriptor(desc)   # a ToolDescriptor (type "mcp") or a dict
    tools = await server.list_tools()          # filtered; each Tool.run calls the server
    await server.aclose()

Needs the `mcp` extra (`pip install 'chainreact[mcp]'`) for real servers and jq filters; host providers
(`server: "self"`) work without it. The SDK is imported only when a connection is opened.
See docs/tools-mcp.md.
"""

from .config import MCPServerConfig, parse_descriptor
from .filters import ToolFilter
from .provider import ToolProvider
from .server import MCPServer, MCPTool, load_mcp_tools

__all__ = [
    "MCPServer",
    "MCPServerConfig",
    "MCPTool",
    "ToolFilter",
    "ToolProvider",
    "load_mcp_tools",
    "parse_descriptor",
]
