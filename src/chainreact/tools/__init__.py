"""Tools: the protocol, the `@tool` decorator, builtins, MCP, HTTP and sub-agent tools."""

from .base import FunctionTool, Tool, ToolContext, ToolOutput, as_tool, schema_from_signature, tool

__all__ = ["FunctionTool", "Tool", "ToolContext", "ToolOutput", "as_tool", "schema_from_signature", "tool"]
