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
from ..descriptors import McpAuth, McpConfig, validate_part
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
    client_name: str = ""  # RuleGo's client_name/client_version: the clientInfo sent at initialize
    client_version: str = ""
    # Tools whose calls may be re-sent after the session was lost mid-call: True = all, else these names.
    retry_non_idempotent: bool | frozenset[str] = False
    where: str = "tools[mcp]"  # how error messages name the descriptor

    def may_resend(self, tool: str, idempotent_hint: bool = False) -> bool:
        """Whether a call of `tool` that was in flight when the session died may be sent again."""
        if idempotent_hint or self.retry_non_idempotent is True:
            return True
        return isinstance(self.retry_non_idempotent, frozenset) and tool in self.retry_non_idempotent

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
    name = _str(raw.get("name"), "name", where or "tools[mcp]")
    where = where or (f"tools[mcp {name!r}]" if name else "tools[mcp]")
    if raw.get("type", "mcp") != "mcp":
        _fail(where, "type", f"expected 'mcp', got {raw.get('type')!r}")
    cfg = validate_part(McpConfig, raw.get("config") or {}, f"{where}.config")
    client_raw = raw.get("mcpClient")
    if client_raw is not None:
        client = validate_part(McpConfig, client_raw, f"{where}.mcpClient")
        # mcpClient's keys win over config's (both forms share one set of key names)
        cfg = cfg.model_copy(update={k: getattr(client, k) for k in client.model_fields_set})
    name = name or cfg.name
    server, url, command, args = cfg.server.strip(), cfg.url, cfg.command, [str(a) for a in cfg.args]
    transport_raw = cfg.transport.strip().lower()
    if transport_raw and transport_raw not in _TRANSPORT_ALIASES:
        _fail(where, "config.transport",
              f"unknown transport {transport_raw!r}; use stdio, streamable-http or sse")

    if server and (url or command):
        _fail(where, "config.server", "'server' excludes 'url' and 'command' (it names the server itself)")
    provider = ""
    if server:
        # RuleGo's remote forms: an http(s) URL, or a command line; a bare word names a host provider.
        if re.match(r"(?i)https?://", server):
            url = server
        elif _is_command_line(server):
            parts = split_command_line(server, where)
            command, args = parts[0], parts[1:]
        else:
            provider = server
    transport: Transport
    if provider:
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
            "no server given: set config.server (a host provider, an http(s) URL or a command line), "
            "config.command (stdio) or url (streamable-http/sse)",
        )

    if transport == "stdio" and not command:
        _fail(where, "config.command", "required for transport 'stdio'")
    if transport in ("streamable-http", "sse"):
        if not url:
            _fail(where, "url", f"required for transport {transport!r}")
        if urlsplit(url).scheme not in ("http", "https"):
            _fail(where, "url", f"must be an http(s) URL, got {url!r}")

    env = {k: _scalar(v) for k, v in cfg.env.items()}
    cwd = cfg.cwd or None
    if cwd is not None and not os.path.isdir(cwd):
        _fail(where, "config.cwd", f"directory {cwd!r} does not exist")

    headers = {k: _scalar(v) for k, v in cfg.headers.items()}
    headers.update(_auth_headers(cfg.auth))
    if headers and transport in ("stdio", "provider"):
        _fail(where, "auth", f"headers/auth apply to HTTP transports only, not {transport!r}")

    tool_filter = cfg.toolFilter.model_dump() if cfg.toolFilter is not None else None
    flt = parse_filter(cfg.tools, tool_filter, where)

    call_default = DEFAULT_CALL_TIMEOUT
    ms = raw.get("timeout")
    if ms:  # the generic ToolDescriptor.timeout is milliseconds; config.callTimeout (seconds) wins
        call_default = _positive(ms, "timeout", where) / 1000.0
    retry = cfg.retryNonIdempotent
    out = MCPServerConfig(
        name="",
        transport=transport,
        command=command,
        args=args,
        env=env,
        cwd=cwd,
        url=url,
        headers=headers,
        provider=provider,
        filter=flt,
        # RuleGo's `timeout` (seconds) is its connect timeout: here the default of listTimeout.
        list_timeout=cfg.listTimeout or cfg.timeout or DEFAULT_LIST_TIMEOUT,
        call_timeout=cfg.callTimeout or call_default,
        description=str(raw.get("description") or ""),
        client_name=cfg.client_name,
        client_version=cfg.client_version,
        retry_non_idempotent=retry if isinstance(retry, bool) else frozenset(retry),
        where=where,
    )
    out.name = sanitize_name(name) if name else derive_name(out)
    return out


def _is_command_line(server: str) -> bool:
    """A `server` value that runs a program: it has arguments, quotes or a path (`/usr/bin/x`, `./x`)."""
    return any(c.isspace() for c in server) or server[0] in "\"'./~" or "/" in server or "\\" in server


def split_command_line(line: str, where: str = "tools[mcp]") -> list[str]:
    """Split a command line as RuleGo does: whitespace separates, '...' and "..." group (no escapes)."""
    out: list[str] = []
    current: list[str] = []
    quote = ""
    started = False
    for ch in line:
        if quote:
            if ch == quote:
                quote = ""
            else:
                current.append(ch)
        elif ch in "\"'":
            quote, started = ch, True
        elif ch.isspace():
            if started:
                out.append("".join(current))
                current, started = [], False
        else:
            current.append(ch)
            started = True
    if quote:
        _fail(where, "config.server", f"unterminated {quote} quote in command line {line!r}")
    if started:
        out.append("".join(current))
    if not out or not out[0]:
        _fail(where, "config.server", f"no command in {line!r}")
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


def _auth_headers(auth: McpAuth | None) -> dict[str, str]:
    """The flow spec's McpAuthDef: {"type": "bearer", "bearerToken"} or {"type": "header", "headers"}."""
    if auth is None:
        return {}
    if auth.type == "bearer":
        return {"Authorization": f"Bearer {auth.bearerToken}"}
    return dict(auth.headers)


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _str(v: Any, key: str, where: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        _fail(where, key, f"must be a string, got {type(v).__name__}")
    return v


def _positive(v: Any, key: str, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
        _fail(where, key, f"must be a positive number of seconds, got {v!r}")
    return float(v)


def _fail(where: str, key: str, msg: str) -> NoReturn:
    raise ConfigError(f"{where}.{key}: {msg}", errors=[(f"{where}.{key}", msg)])
