"""MCP at RuleGo's path (rulego-server internal/controller/mcp.go): MCP's HTTP+SSE transport, the tools
of /mcp (every served agent, chain and flow: server/mcp_routes.py).

    GET  /api/v1/mcp/{apiKey}/sse       the SSE stream; its first event, `endpoint`, names the URL below
    POST /api/v1/mcp/{apiKey}/message   ?session_id=...: the client's JSON-RPC messages (202)

The API key is in the path, as RuleGo's server takes it: with a keys file it must be a key (or a logged-in
user's token with permissions), and it decides what the tools list shows and may call, as on /mcp;
without one, any value is accepted (RuleGo's anonymous user). The SDK (the `mcp` extra) is imported on
the first request; without it both routes answer 501.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from typing import Any
from urllib.parse import quote

import orjson
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .context import ServerContext
from .mcp_routes import KEY_SCOPE, mcp_server, refused_by_checks

log = logging.getLogger("chainreact.server")


async def _refuse(send: Send, status: int, message: str, code: str) -> None:
    body = orjson.dumps({"error": {"message": message, "code": code}})
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


class SseMcp:
    """The SDK's SSE transport and server, made on first use; `stream` and `message` are its two ASGI
    apps, behind the key check."""

    def __init__(self, ctx: ServerContext):
        self.ctx = ctx
        self.parts: tuple[Any, Any] | None = None
        self.lock = asyncio.Lock()

    async def _parts(self) -> tuple[Any, Any] | None:
        async with self.lock:
            if self.parts is None:
                try:
                    from mcp.server.sse import SseServerTransport

                    self.parts = (mcp_server(self.ctx),
                                  SseServerTransport("/message", max_request_body_size=self.ctx.body_limit))
                except ImportError as exc:
                    log.warning("no MCP at /api/v1/mcp: the mcp extra failed to import: %s", exc)
            return self.parts

    async def _admit(self, scope: Scope, receive: Receive, send: Send) -> tuple[Any, Any] | None:
        """The server and transport, with the request's key in its scope; None when refused (answered)."""
        ctx = self.ctx
        key = None
        if ctx.keys is not None:
            key = ctx.authenticate(scope["path_params"]["apiKey"], users=True)
            if key is None:
                await _refuse(send, 401, "the API key in the path is not valid", "invalid_api_key")
                return None
            scope[KEY_SCOPE] = key
        # The same limits as /mcp and every other route (per key, else per client address).
        if await refused_by_checks(ctx, scope, receive, send, key):
            return None
        parts = await self._parts()
        if parts is None:
            await _refuse(send, 501, "MCP is not available: pip install 'chainreact[mcp]'", "mcp_unavailable")
        return parts

    async def stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        parts = await self._admit(scope, receive, send)
        if parts is None:
            return
        server, transport = parts
        # The endpoint event names root_path + "/message": this key's own message URL.
        key = quote(scope["path_params"]["apiKey"], safe="")
        scope = {**scope, "root_path": scope.get("root_path", "") + f"/api/v1/mcp/{key}"}
        try:
            async with transport.connect_sse(scope, receive, send) as (read, write):
                await server.run(read, write, server.create_initialization_options())
        except ValueError:
            return  # refused by the transport's request checks (it answered)

    async def message(self, scope: Scope, receive: Receive, send: Send) -> None:
        parts = await self._admit(scope, receive, send)
        if parts is not None:
            await parts[1].handle_post_message(scope, receive, send)


class _Asgi:
    """A raw ASGI app (Starlette would wrap a function or method as a request handler)."""

    def __init__(self, fn: ASGIApp):
        self.fn = fn

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.fn(scope, receive, send)


def routes(ctx: ServerContext) -> list[BaseRoute]:
    if importlib.util.find_spec("mcp") is None:
        return []  # mcp_routes says so in the log
    mcp = SseMcp(ctx)
    return [Route("/api/v1/mcp/{apiKey}/sse", _Asgi(mcp.stream), methods=["GET"]),
            Route("/api/v1/mcp/{apiKey}/message", _Asgi(mcp.message), methods=["POST"])]


__all__ = ["SseMcp", "routes"]
