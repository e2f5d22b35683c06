"""Helpers for the MCP tool tests (real servers only); the fixtures in conftest.py wrap them.

* PyPI servers `mcp-server-time` / `mcp-server-git` over stdio (`python -m ...`, extra `dev`);
* npm reference servers installed by `.ci/setup.d/mcp.sh` into `.cache/npm`;
* an in-test server built with the SDK, served over streamable HTTP or SSE by uvicorn on 127.0.0.1
  (free port), behind a middleware that demands given headers (bearer token / custom header);
* an in-test stdio server script with tools that crash or sleep.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from chainreact.server.background import BackgroundServer, free_port

ROOT = Path(__file__).resolve().parents[3]
NPM_BIN = ROOT / ".cache" / "npm" / "node_modules" / ".bin"
# Spawned servers start in seconds, but a shared CI machine under load can take far longer than the
# 15 s default to import a Python server; tests are about behaviour, not start-up speed.
SPAWN = {"listTimeout": 90}


def npm_server(name: str) -> str:
    path = NPM_BIN / name
    if not path.exists():
        # Only legitimate when the npm registry could not be reached: CI runs .ci/setup.d/mcp.sh first.
        pytest.skip(f"{path} is missing: run `bash .ci/setup.d/mcp.sh` (needs the npm registry)")
    return str(path)


def time_descriptor(name: str = "time", pidfile: Path | None = None, **config: Any) -> dict[str, Any]:
    """mcp-server-time over stdio; with `pidfile`, each start appends the server's pid to it."""
    if pidfile is None:
        cfg: dict[str, Any] = {
            "command": sys.executable,
            "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        }
    else:
        # `exec` keeps the pid, so the recorded pid is the server itself.
        script = (
            f"echo $$ >> {shlex.quote(str(pidfile))}; exec {shlex.quote(sys.executable)} "
            "-m mcp_server_time --local-timezone UTC"
        )
        cfg = {"command": "/bin/sh", "args": ["-c", script]}
    return {"type": "mcp", "name": name, "config": {**cfg, **SPAWN, **config}}


def pids(pidfile: Path) -> list[int]:
    return [int(x) for x in pidfile.read_text().split()] if pidfile.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); treat it as dead (it no longer runs).
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


CRASHY_SERVER = '''
import os, sys
import anyio
from mcp.server.mcpserver import MCPServer

with open(sys.argv[1], "a") as f:
    f.write(f"{os.getpid()}\\n")
srv = MCPServer("crashy")

@srv.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"

@srv.tool()
def crash() -> str:
    """Exit the process without answering."""
    os._exit(3)

@srv.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return "slept"

srv.run()
'''


# --- in-test HTTP server -------------------------------------------------------------------------


def build_sdk_server() -> Any:
    import anyio
    from mcp.server.mcpserver import MCPServer as SDKServer

    srv = SDKServer("chainreact-test")

    @srv.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return f"echo: {text}"

    @srv.tool()
    async def slow(seconds: float) -> str:
        """Answer after `seconds`."""
        await anyio.sleep(seconds)
        return "done"

    @srv.tool()
    def fail(reason: str) -> str:
        """Always fails (an anticipated tool error: the client gets isError with this text)."""
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError(reason)

    @srv.tool(name="ns.lookup")
    def lookup(key: str) -> dict[str, Any]:
        """Structured result only."""
        return {"key": key, "found": True}

    return srv


class RequireHeaders:
    """ASGI middleware: HTTP requests without the given header values get 401 (and are counted)."""

    def __init__(self, app: Any, headers: dict[str, str]):
        self.app = app
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.rejected = 0
        self.accepted = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            got = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            if any(got.get(k) != v for k, v in self.headers.items()):
                self.rejected += 1
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b'{"error": "unauthorized"}'})
                return
            self.accepted += 1
        await self.app(scope, receive, send)


class HTTPServer:
    """The SDK test server under uvicorn in a thread; `restart()` gives a fresh server (no sessions)."""

    def __init__(self, transport: str, headers: dict[str, str]):
        self.transport = transport
        self.required = headers
        self.port = free_port()
        self.guard: RequireHeaders | None = None
        self._server: BackgroundServer | None = None

    @property
    def url(self) -> str:
        path = "/mcp" if self.transport == "streamable-http" else "/sse"
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        srv = build_sdk_server()
        app = (
            srv.streamable_http_app(host="127.0.0.1")
            if self.transport == "streamable-http"
            else srv.sse_app(host="127.0.0.1")
        )
        self.guard = RequireHeaders(app, self.required)
        self._server = BackgroundServer(self.guard, port=self.port, log_level="warning", lifespan="on",
                                        timeout_graceful_shutdown=1, stop_timeout=30).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def restart(self) -> None:
        self.stop()
        self.start()
