"""MCPServer (one descriptor -> a filtered set of Tools) and load_mcp_tools (several, names de-duplicated)."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from ...errors import ConfigError
from ..base import Tool, ToolContext, ToolOutput
from .config import MCPServerConfig, parse_descriptor
from .provider import ProviderBackend, ToolProvider


class _Backend(Protocol):
    async def list_definitions(self, timeout: float) -> list[dict[str, Any]]: ...
    async def call(self, name: str, args: dict[str, Any], timeout: float) -> str | ToolOutput: ...
    async def aclose(self) -> None: ...


class MCPServer:
    """The tools of one MCP server (or host provider), filtered as its descriptor says.

    Connection is lazy (first `list_tools`/`call_tool`). The tools it hands out share its connection;
    when every handed-out tool has been closed (`Tool.aclose`, which agents call on shutdown) the
    connection is closed too. `aclose()` closes it at once. Either way a later call reconnects.
    """

    def __init__(self, config: MCPServerConfig, backend: _Backend):
        self.config = config
        self._backend = backend
        self._open_tools = 0

    @classmethod
    def from_descriptor(cls, desc: Any, *, providers: Mapping[str, ToolProvider] | None = None,
                        where: str = "") -> MCPServer:
        """Build from a `ToolDescriptor` (type "mcp") or a dict in either spec form. Nothing connects yet.
        `where` (e.g. "tools[3]") names the entry in error messages."""
        cfg = parse_descriptor(desc, where)
        if cfg.transport == "provider" and cfg.provider not in (providers or {}) \
                and cfg.provider != "self" and shutil.which(cfg.provider):
            # RuleGo's `server` is a command line when it is not "self" or a URL: a bare word that no host
            # provider answers to but that is a program on PATH runs as a stdio server.
            cfg = dataclasses.replace(cfg, transport="stdio", command=cfg.provider, provider="")
        if cfg.transport == "provider":
            provider = (providers or {}).get(cfg.provider)
            if provider is None:
                known = ", ".join(sorted(providers or {})) or "none"
                raise ConfigError(
                    f"{cfg.where}: config.server {cfg.provider!r} names a host tool provider, but none was "
                    "given "
                    f"under that name (providers passed: {known}) and no program of that name is on PATH; "
                    f"pass providers={{{cfg.provider!r}: ...}} or give a command line or URL",
                    errors=[(f"{cfg.where}.config.server", f"no provider {cfg.provider!r}")],
                )
            return cls(cfg, ProviderBackend(provider, cfg.name))
        _require_sdk(cfg)
        from .client import SessionBackend

        return cls(cfg, SessionBackend(cfg))

    @property
    def name(self) -> str:
        return self.config.name

    async def list_definitions(self) -> list[dict[str, Any]]:
        """The tool definitions after the filter: [{name, description, parameters}], server-side names."""
        defs = await self._backend.list_definitions(self.config.list_timeout)
        return self.config.filter.apply(defs)

    async def list_tools(self) -> list[Tool]:
        tools: list[Tool] = [
            MCPTool(self, d["name"], d["description"], d["parameters"]) for d in await self.list_definitions()
        ]
        self._open_tools += len(tools)
        return tools

    async def call_tool(self, name: str, args: dict[str, Any] | None = None) -> str | ToolOutput:
        """Call a tool by its server-side name. Transport failures and timeouts raise ToolError."""
        return await self._backend.call(name, dict(args or {}), self.config.call_timeout)

    async def aclose(self) -> None:
        await self._backend.aclose()

    async def _release_tool(self) -> None:
        self._open_tools -= 1
        if self._open_tools <= 0:
            self._open_tools = 0
            await self.aclose()

    async def __aenter__(self) -> MCPServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<MCPServer {self.name!r} {self.config.describe()}>"


class MCPTool(Tool):
    """One tool of an MCPServer. `name` is what the model sees; `remote_name` is what the server calls it."""

    def __init__(self, server: MCPServer, remote_name: str, description: str, parameters: Any):
        self.server = server
        self.remote_name = remote_name
        self.name = tool_name(remote_name)
        self.description = description
        self.parameters = _object_schema(parameters)
        self._closed = False

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        return await self.server.call_tool(self.remote_name, args)

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self.server._release_tool()


async def load_mcp_tools(
    descriptors: Iterable[Any],
    *,
    providers: Mapping[str, ToolProvider] | None = None,
    taken: Iterable[str] = (),
    wheres: Sequence[str] | None = None,
) -> list[Tool]:
    """Resolve several MCP descriptors concurrently into one list of tools with unique names.

    A tool name offered by more than one server (or already in `taken`, e.g. the agent's builtin tools)
    is exposed as "<server>_<tool>" for every server offering it; if that is still not unique (two servers
    with the same name), "_2", "_3", ... is appended in descriptor order. If any server fails, the others
    are closed and the first error is raised. `wheres` names each descriptor in errors (e.g. "tools[3]").
    """
    descs = list(descriptors)
    names = list(wheres) if wheres is not None else [""] * len(descs)  # how errors name each entry
    servers = [MCPServer.from_descriptor(d, providers=providers, where=w)  # validate all first
               for d, w in zip(descs, names, strict=True)]
    results = await asyncio.gather(*(s.list_tools() for s in servers), return_exceptions=True)
    failure = next((r for r in results if isinstance(r, BaseException)), None)
    if failure is not None:
        await asyncio.gather(*(s.aclose() for s in servers), return_exceptions=True)
        raise failure
    per_server: list[list[Tool]] = [r for r in results if not isinstance(r, BaseException)]
    for server, tools in zip(servers, per_server, strict=True):
        if not tools:
            await server.aclose()  # nothing will hold this connection

    reserved = set(taken)
    offered = Counter(name for tools in per_server for name in {t.name for t in tools})
    used: set[str] = set(reserved)
    out: list[Tool] = []
    for server, tools in zip(servers, per_server, strict=True):
        for t in tools:
            name = t.name
            if offered[name] > 1 or name in reserved:
                name = tool_name(f"{server.name}_{name}")
            base, n = name, 2
            while name in used:
                suffix = f"_{n}"
                name = base[: 64 - len(suffix)] + suffix
                n += 1
            t.name = name
            used.add(name)
            out.append(t)
    return out


def _require_sdk(cfg: MCPServerConfig) -> None:
    """Fail at configuration time, not on the first call, when the SDK is missing or too old."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("mcp")
    except PackageNotFoundError:
        installed = ""
    major = installed.split(".", 1)[0]
    if not major.isdigit() or int(major) < 2:
        found = f"mcp {installed} is installed" if installed else "the 'mcp' package is not installed"
        raise ConfigError(
            f"{cfg.where}: MCP servers need the mcp SDK 2.x ({found}): pip install 'chainreact[mcp]'",
            errors=[(cfg.where, "mcp SDK 2.x missing")],
        )


def tool_name(name: str) -> str:
    """A name the OpenAI tools API accepts (^[A-Za-z0-9_-]{1,64}$); MCP allows '.', '/' and longer names."""
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", name) or "tool"
    return clean[:64]


def _object_schema(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    out = dict(schema)
    out.setdefault("type", "object")
    if out["type"] == "object":
        out.setdefault("properties", {})
    return out
