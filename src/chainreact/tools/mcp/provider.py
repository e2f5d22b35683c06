"""Host-injected tool providers: `{"type": "mcp", "config": {"server": "self", ...}}`.

The embedding application passes `providers={"self": my_provider}`; the descriptor's `server` names the
key. No MCP connection is involved: definitions and calls go straight to the provider object, and its
results are mapped like MCP results (a dict in the MCP `CallToolResult` shape is understood).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, runtime_checkable

from ...errors import ToolError
from ...jsonutil import to_text
from ..base import ToolOutput
from .results import map_result


@runtime_checkable
class ToolProvider(Protocol):
    async def list_tool_definitions(self) -> list[dict[str, Any]]:
        """Each: {"name", "description", "parameters": JSON Schema} ("inputSchema" is accepted too)."""
        ...

    async def call_tool(self, name: str, args: dict[str, Any]) -> str | dict[str, Any] | ToolOutput: ...


class ProviderBackend:
    """Adapts a ToolProvider to the backend interface MCPServer uses."""

    def __init__(self, provider: ToolProvider, server: str):
        self.provider = provider
        self.server = server

    async def list_definitions(self, timeout: float) -> list[dict[str, Any]]:
        try:
            defs = await asyncio.wait_for(self.provider.list_tool_definitions(), timeout)
        except TimeoutError:
            raise ToolError(
                f"MCP provider {self.server!r}: list_tool_definitions() took longer than {timeout:g} s "
                "(config.listTimeout)"
            ) from None
        out: list[dict[str, Any]] = []
        for i, d in enumerate(defs or []):
            if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not d["name"]:
                raise ToolError(
                    f"MCP provider {self.server!r}: tool definition #{i} has no string 'name': {d!r}"
                )
            params = d.get("parameters", d.get("inputSchema"))
            out.append(
                {
                    "name": d["name"],
                    "description": str(d.get("description") or ""),
                    "parameters": params if isinstance(params, dict) else None,
                }
            )
        return out

    async def call(self, name: str, args: dict[str, Any], timeout: float) -> str | ToolOutput:
        try:
            result = await asyncio.wait_for(self.provider.call_tool(name, args), timeout)
        except TimeoutError:
            raise ToolError(
                f"MCP tool {name!r} (provider {self.server!r}) did not answer within {timeout:g} s "
                "(config.callTimeout)"
            ) from None
        if isinstance(result, ToolOutput | str):
            return result
        if isinstance(result, dict) and isinstance(result.get("content"), list):
            return map_result(result)
        return to_text(result)

    async def aclose(self) -> None:
        """The provider belongs to the host application; nothing to release here."""
