"""MCP tool descriptors (both spec forms) parsed into one validated `MCPServerConfig`.

Accepted forms (see docs/tools-mcp.md):
  * rule-chain: {"type": "mcp", "name": "fs", "config": {"transport": "stdio", "command": ..., ...}}
                {"type": "mcp", "config": {"server": "self", "tools": ["a", "b"]}}
  * flow:       {"type": "mcp", "name": "weatherTools",
                 "mcpClient": {"url": ..., "auth": ..., "toolFilter": ...}}
`mcpClient` keys are merged over `config` keys, so both forms share one set of key names.
Validation is eager: a bad descriptor fails when the server object is built, not on the first call.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn
from urllib.parse import urlsplit

from ...errors import ConfigError
from .filters import ToolFilter, parse_filter

Transport = Literal["stdio", "streamable-http", "sse", "provider"]

DEFAULT_LIST_TIMEOUT = 15.0
DEFAULT_CALL_TIMEOUT = 120.0

_TRANSPORT_ALIASES = {
    "stdio": "stdio",
    "streamable-http": "streamable-http",
    "streamable_http": "streamable-http",
    "streamablehttp": "streamable-http",
    "http": "streamable-http",
    "sse": "sse",
}

# Interpreters/launchers whose first positional argument names the server better than they do.
_LAUNCHERS = {"python", "python3", "node", "npx", "uvx", "uv", "bunx", "deno", "sh", "bash", "pipx", "npm"}

_KNOWN_KEYS = {
    "server",
    "transport",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "auth",
    "tools",
    "toolFilter",
    "listTimeout",
    "callTimeout",
    "name",
}


@dataclass(slots=True)
class MCPServerConfig:
    name: str
    transport: Transport
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    provider: str = ""  # key into the host's `providers` mapping (transport "provider")
    filter: ToolFilter = field(default_factory=ToolFilter)
    list_timeout: float = DEFAULT_LIST_TIMEOUT
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    description: str = ""
    where: str = "tools[mcp]"  # how error messages name the descriptor

    def describe(self) -> str:
        """Short human description of the endpoint for error messages."""
        if self.transport == "stdio":
            return f"stdio command {' '.join([self.command, *self.args])!r}"
        if self.transport == "provider":
            return f"host provider {self.provider!r}"
        return f"{self.transport} endpoint {self.url}"


def parse_descriptor(desc: Any, where: str = "") -> MCPServerConfig:
    """Validate an MCP descriptor (a `ToolDescriptor` or a plain dict) into an MCPServerConfig."""
    raw = _as_dict(desc)
    name = _str(raw.get("name"), "name", where)
    where = where or (f"tools[mcp {name!r}]" if name else "tools[mcp]")
    if raw.get("type", "mcp") != "mcp":
        _fail(where, "type", f"expected 'mcp', got {raw.get('type')!r}")
    cfg = dict(raw.get("config") or {})
    if not isinstance(cfg, dict):
        _fail(where, "config", "must be an object")
    client = raw.get("mcpClient")
    if client is not None:
        if not isinstance(client, dict):
            _fail(where, "mcpClient", "must be an object")
        cfg.update(client)
    unknown = sorted(set(cfg) - _KNOWN_KEYS)
    if unknown:
        _fail(
            where,
            "config",
            f"unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(_KNOWN_KEYS))}",
        )
    name = name or _str(cfg.get("name"), "config.name", where)

    server = _str(cfg.get("server"), "config.server", where)
    url = _str(cfg.get("url"), "url", where)
    command = _str(cfg.get("command"), "config.command", where)
    transport_raw = _str(cfg.get("transport"), "config.transport", where).lower()

    if transport_raw and transport_raw not in _TRANSPORT_ALIASES:
        _fail(
            where,
            "config.transport",
            f"unknown transport {transport_raw!r}; use stdio, streamable-http or sse",
        )
    transport: Transport
    if server:
        if url or command:
            _fail(where, "config.server", "a host provider ('server') excludes 'url' and 'command'")
        transport = "provider"
    elif transport_raw:
        transport = _TRANSPORT_ALIASES[transport_raw]  # type: ignore[assignment]
    elif command:
        transport = "stdio"
    elif url:
        # A URL ending in /sse is the legacy HTTP+SSE endpoint by convention; everything else is streamable.
        transport = "sse" if urlsplit(url).path.rstrip("/").endswith("/sse") else "streamable-http"
    else:
        _fail(
            where,
            "config",
            "no server given: set config.server (host provider), config.command (stdio) "
            "or url (streamable-http/sse)",
        )

    if transport == "stdio" and not command:
        _fail(where, "config.command", "required for transport 'stdio'")
    if transport in ("streamable-http", "sse"):
        if not url:
            _fail(where, "url", f"required for transport {transport!r}")
        if urlsplit(url).scheme not in ("http", "https"):
            _fail(where, "url", f"must be an http(s) URL, got {url!r}")

    args = cfg.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
        _fail(where, "config.args", "must be a list of strings")
    env = _str_map(cfg.get("env"), "config.env", where)
    cwd = _str(cfg.get("cwd"), "config.cwd", where) or None
    if cwd is not None and not os.path.isdir(cwd):
        _fail(where, "config.cwd", f"directory {cwd!r} does not exist")

    headers = _str_map(cfg.get("headers"), "config.headers", where)
    headers.update(_auth_headers(cfg.get("auth"), where))
    if headers and transport in ("stdio", "provider"):
        _fail(where, "auth", f"headers/auth apply to HTTP transports only, not {transport!r}")

    flt = parse_filter(cfg.get("tools"), cfg.get("toolFilter"), where)

    desc_text = raw.get("description") or ""
    call_default = DEFAULT_CALL_TIMEOUT
    ms = raw.get("timeout")
    if ms:  # the generic ToolDescriptor.timeout is milliseconds; config.callTimeout (seconds) wins
        call_default = _positive(ms, "timeout", where) / 1000.0

    out = MCPServerConfig(
        name="",
        transport=transport,
        command=command,
        args=[str(a) for a in args],
        env=env,
        cwd=cwd,
        url=url,
        headers=headers,
        provider=server,
        filter=flt,
        list_timeout=_positive(cfg.get("listTimeout", DEFAULT_LIST_TIMEOUT), "config.listTimeout", where),
        call_timeout=_positive(cfg.get("callTimeout", call_default), "config.callTimeout", where),
        description=str(desc_text),
        where=where,
    )
    out.name = sanitize_name(name) if name else derive_name(out)
    return out


def derive_name(cfg: MCPServerConfig) -> str:
    """A server name for prefixes and messages when the descriptor has none."""
    if cfg.transport == "provider":
        return sanitize_name(cfg.provider)
    if cfg.transport == "stdio":
        base = os.path.basename(cfg.command)
        if base.split(".")[0] in _LAUNCHERS or re.match(r"python3(\.\d+)?$", base):
            rest = [a for a in cfg.args if not a.startswith("-")]
            if rest:
                base = rest[0]
        # "@scope/server-filesystem" -> "server-filesystem"; "mcp_server_time" stays.
        base = base.rsplit("/", 1)[-1].split("@", 1)[0] or base
        return sanitize_name(base.removesuffix(".py").removesuffix(".js"))
    host = urlsplit(cfg.url).hostname or "mcp"
    return sanitize_name(host)


def sanitize_name(name: str) -> str:
    """Restrict to the characters OpenAI-style function names allow ([A-Za-z0-9_-], at most 64)."""
    clean = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "mcp"
    return clean[:64]


def _as_dict(desc: Any) -> dict[str, Any]:
    if isinstance(desc, dict):
        return desc
    dump = getattr(desc, "model_dump", None)
    if callable(dump):  # chainreact.config.ToolDescriptor (pydantic)
        out = dump(exclude_none=True)
        assert isinstance(out, dict)
        return out
    raise ConfigError(f"tools: an MCP descriptor must be an object, got {type(desc).__name__}")


def _auth_headers(auth: Any, where: str) -> dict[str, str]:
    """The flow spec's McpAuthDef: {"type": "bearer", "bearerToken"} or {"type": "header", "headers"}."""
    if auth is None:
        return {}
    if not isinstance(auth, dict):
        _fail(where, "auth", "must be an object")
    kind = auth.get("type")
    if kind == "bearer":
        token = auth.get("bearerToken")
        if not isinstance(token, str) or not token:
            _fail(where, "auth.bearerToken", "required (non-empty string) when auth.type is 'bearer'")
        return {"Authorization": f"Bearer {token}"}
    if kind == "header":
        headers = _str_map(auth.get("headers"), "auth.headers", where)
        if not headers:
            _fail(where, "auth.headers", "required (non-empty object) when auth.type is 'header'")
        return headers
    _fail(where, "auth.type", f"must be 'bearer' or 'header', got {kind!r}")


def _str(v: Any, key: str, where: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        _fail(where, key, f"must be a string, got {type(v).__name__}")
    return v


def _str_map(v: Any, key: str, where: str) -> dict[str, str]:
    if v is None:
        return {}
    if not isinstance(v, dict) or not all(isinstance(k, str) for k in v):
        _fail(where, key, "must be an object of strings")
    return {k: str(x) for k, x in v.items()}


def _positive(v: Any, key: str, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
        _fail(where, key, f"must be a positive number of seconds, got {v!r}")
    return float(v)


def _fail(where: str, key: str, msg: str) -> NoReturn:
    raise ConfigError(f"{where}: {key}: {msg}", errors=[(f"{where}.{key}", msg)])
