"""MCP at /mcp: every served agent, chain and flow as an MCP tool, over streamable HTTP.

    POST|GET|DELETE /mcp     the MCP streamable HTTP endpoint (the official `mcp` SDK's server)

Tools, named by the served id (characters outside `A-Za-z0-9_.-` become `_`):
    agent   {"input": string}                                   -> the agent's answer
    chain   {"data": any, "metadata": {string: string}, "msgType": string}
            -> the data of the chain's Success end (a string is sent as TEXT data, anything else as JSON)
    flow    {"text": string, "session": string}                 -> the turn's messages (a new session when
            `session` is omitted; its id is in the structured result)

With a keys file, each HTTP request needs `Authorization: Bearer <key>` (401 otherwise); `tools/list`
shows only what the key may `read`, `tools/call` needs `execute` on the id. Failures (a run that fails,
a chain that ends in Failure, a refused id, bad arguments) are tool results with `isError: true`.

Needs the `mcp` extra; without it the server starts without /mcp (and says so in the log). The SDK is
imported, and its session manager started, on the first request to /mcp; the manager stops with the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import re
import secrets
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .catalog import Entry
from .context import ServerContext
from .login import flow_user

log = logging.getLogger("chainreact.server")

_NAME_BAD = re.compile(r"[^A-Za-z0-9_.-]")
KEY_SCOPE = "chainreact.key"  # ASGI scope entry holding the request's API key

AGENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The user message for the agent."}},
    "required": ["input"],
}
CHAIN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "data": {"description": "The message data: a string is sent as TEXT, anything else as JSON."},
        "metadata": {"type": "object", "additionalProperties": {"type": "string"},
                     "description": "The message metadata."},
        "msgType": {"type": "string", "description": "The message type (default MCP)."},
    },
    "required": ["data"],
}
FLOW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The user's message."},
        "session": {"type": "string", "description": "The conversation to continue (default: a new one)."},
    },
    "required": ["text"],
}


class ToolFailure(Exception):
    """A call that answers with isError: the message is the tool result's text."""


def tool_name(ident: str) -> str:
    return _NAME_BAD.sub("_", ident)[:128] or "tool"


def routes(ctx: ServerContext) -> list[BaseRoute]:
    if importlib.util.find_spec("mcp") is None:
        log.warning("no /mcp: the mcp extra is not installed (pip install 'chainreact[mcp]')")
        return []
    endpoint = _LazyMcp(ctx)

    @contextlib.asynccontextmanager
    async def stop_at_exit() -> AsyncIterator[None]:
        try:
            yield
        finally:
            await endpoint.close()

    ctx.lifespans.append(stop_at_exit)
    return [Route("/mcp", endpoint=_Guard(ctx, endpoint), methods=["GET", "POST", "DELETE"])]


class _LazyMcp:
    """The SDK's server and session manager, made on the first /mcp request: importing the SDK takes
    ~0.3 s and ~25 MB, which a server no MCP client talks to should not pay at startup. The manager's
    task group lives in a task of its own until the app stops (the lifespan hook above)."""

    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx
        self.handle: ASGIApp | None = None
        self.lock = asyncio.Lock()
        self.task: asyncio.Task[None] | None = None
        self.stop = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handle = self.handle or await self._start()
        if handle is None:
            body = orjson.dumps({"error": {"message": "MCP is not available: the mcp extra failed to import "
                                                      "(see the server log); pip install 'chainreact[mcp]'",
                                           "code": "mcp_unavailable"}})
            await send({"type": "http.response.start", "status": 501,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        await handle(scope, receive, send)

    async def _start(self) -> ASGIApp | None:
        async with self.lock:
            if self.handle is not None:
                return self.handle
            try:
                manager = _manager(self.ctx)
            except ImportError as exc:
                log.warning("no /mcp: the mcp extra failed to import: %s", exc)
                return None
            running = asyncio.Event()

            async def hold() -> None:
                async with manager.run():
                    running.set()
                    await self.stop.wait()

            self.task = asyncio.ensure_future(hold())
            started = asyncio.ensure_future(running.wait())
            await asyncio.wait({started, self.task}, return_when=asyncio.FIRST_COMPLETED)
            if not running.is_set():
                started.cancel()
                failed, self.task = self.task, None
                failed.result()  # the manager failed: this request fails (500), the next one tries again
            self.handle = manager.handle_request
            return self.handle

    async def close(self) -> None:
        if self.task is not None:
            self.stop.set()
            await asyncio.gather(self.task, return_exceptions=True)


def _manager(ctx: ServerContext) -> Any:
    """`mcp_server` in a streamable HTTP session manager (imports the SDK: ImportError when the extra is
    missing or broken)."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    return StreamableHTTPSessionManager(app=mcp_server(ctx), max_request_body_size=ctx.body_limit)


def mcp_server(ctx: ServerContext) -> Any:
    """The SDK's low-level server with every served agent, chain and flow as a tool; each request's API
    key (the ASGI scope's KEY_SCOPE) decides what it lists and may call. Also served over the SSE
    transport at RuleGo's path (server/rulego_mcp.py). Imports the SDK."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    def visible(key: Any) -> dict[str, Entry]:
        tools: dict[str, Entry] = {}
        for e in ctx.catalog.entries.values():
            if key is None or key.allows("read", e.id):
                tools.setdefault(tool_name(e.id), e)
        return tools

    def request_key(rctx: Any) -> Any:
        request = getattr(rctx, "request", None)
        return request.scope.get(KEY_SCOPE) if request is not None else None

    async def list_tools(rctx: Any, params: Any) -> Any:
        tools = []
        for name, e in visible(request_key(rctx)).items():
            schema = AGENT_SCHEMA if e.kind == "agent" else CHAIN_SCHEMA if e.kind == "chain" else FLOW_SCHEMA
            desc = e.description or f"Run the {e.kind} {e.id!r} served by chainreact."
            tools.append(types.Tool(name=name, description=desc, input_schema=schema))
        return types.ListToolsResult(tools=tools)

    async def call_tool(rctx: Any, params: Any) -> Any:
        key = request_key(rctx)
        args = dict(params.arguments or {})
        entry = visible(key).get(params.name)
        try:
            if entry is None:
                raise ToolFailure(f"no tool {params.name!r}; tools/list shows the tools this key may use")
            if key is not None and not key.allows("execute", entry.id):
                raise ToolFailure(f"this API key may not execute {entry.id!r}")
            if entry.kind == "agent":
                text, data = await _call_agent(ctx, entry, args), None
            elif entry.kind == "chain":
                text, data = await _call_chain(ctx, entry, args)
            else:
                text, data = await _call_flow(ctx, entry, args, getattr(rctx, "request", None))
        except ToolFailure as e:
            return types.CallToolResult(content=[types.TextContent(text=str(e))], is_error=True)
        except Exception as e:  # a failed run is the tool's error, never the session's
            log.warning("MCP tool %r failed: %s", params.name, e)
            return types.CallToolResult(content=[types.TextContent(text=f"Error: {e or type(e).__name__}")],
                                        is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)

    return Server("chainreact", on_list_tools=list_tools, on_call_tool=call_tool)


class _Guard:
    """The API-key check and the app's request checks (rate limits) in front of the SDK's ASGI handler (a
    class: Starlette passes it raw ASGI), as ServerContext.guard does for the other routes."""

    def __init__(self, ctx: ServerContext, app: ASGIApp):
        self.ctx = ctx
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        keys = self.ctx.keys
        key = None
        if keys is not None:
            auth = next((v.decode("latin-1") for k, v in scope.get("headers", ())
                         if k == b"authorization"), "")
            token = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
            key = keys.find(token) if token else None
            if key is None:
                body = orjson.dumps({"error": {"message": "a valid API key is required: Authorization: "
                                                          "Bearer <key>", "code": "invalid_api_key"}})
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
            scope[KEY_SCOPE] = key
        if await refused_by_checks(self.ctx, scope, receive, send, key):
            return
        await self.app(scope, receive, send)


async def refused_by_checks(ctx: ServerContext, scope: Scope, receive: Receive, send: Send, key: Any) -> bool:
    """Run the app's request checks (rate limits) for a raw ASGI route; True when one refused (answered)."""
    if ctx.checks:
        request = Request(scope, receive)
        request.state.key = key
        for check in ctx.checks:
            if (refused := check(request)) is not None:
                await refused(scope, receive, send)
                return True
    return False


async def _call_agent(ctx: ServerContext, entry: Entry, args: dict[str, Any]) -> str:
    text = args.get("input")
    if not isinstance(text, str):
        raise ToolFailure("'input' must be a string: the user message for the agent")
    dispatch = ctx.durable("agent", entry.id)  # `serve --temporal`: a workflow on the workers
    if dispatch is not None:
        result = await dispatch.run("agent", entry.agent, text)
    else:
        result = await entry.agent.run(text)
    if result.interruption is not None:
        asks = "; ".join(q.question or q.kind for q in result.interruption.questions)
        raise ToolFailure(f"the agent stopped to ask: {asks}; it cannot ask questions over MCP, give it what "
                          "it needs in the input")
    return str(result.content)


async def _call_chain(ctx: ServerContext, entry: Entry, args: dict[str, Any]) -> tuple[str, Any]:
    from ..chains import FAILURE, SUCCESS, RuleMsg

    if "data" not in args:
        raise ToolFailure("'data' is required: the message data for the chain")
    meta = args.get("metadata") or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise ToolFailure("'metadata' must be an object of strings")
    msg_type = args.get("msgType") or "MCP"
    if not isinstance(msg_type, str):
        raise ToolFailure("'msgType' must be a string")
    data = args["data"]
    msg = RuleMsg(type=msg_type, data=data if isinstance(data, str) else orjson.dumps(data).decode(),
                  metadata=dict(meta), data_type="TEXT" if isinstance(data, str) else "JSON")
    durable = ctx.durable("chain", entry.id)  # `serve --temporal`: a workflow on the workers
    if durable is None:
        ends = await ctx.catalog.chains.run(entry.id, msg)
    else:
        from ..durable import DurableRunError

        try:
            ends = await (await durable.start_chain(entry.id, msg)).result()
        except DurableRunError as e:
            raise ToolFailure(str(e)) from None
    ok = next((e for e in ends if e.relation == SUCCESS and not e.error), None)
    if ok is None:
        bad = next((e for e in ends if e.relation == FAILURE or e.error), None)
        raise ToolFailure(f"the chain failed: {(bad.error or bad.msg.data) if bad else 'no Success end'}")
    out = ok.msg.data
    try:
        parsed = orjson.loads(out)
    except orjson.JSONDecodeError:
        parsed = None
    return out, parsed if isinstance(parsed, dict) else None


async def _call_flow(ctx: ServerContext, entry: Entry, args: dict[str, Any],
                     request: Request | None) -> tuple[str, Any]:
    text, session = args.get("text"), args.get("session") or "mcp-" + secrets.token_hex(8)
    if not isinstance(text, str) or not isinstance(session, str):
        raise ToolFailure("'text' (and 'session', when given) must be strings")
    flow = await ctx.flows.served(entry.id)
    refused = await ctx.owners.check(request, flow.session_key(session), session, write=True) \
        if request is not None else None
    if refused is not None:
        raise ToolFailure(refused.message)
    user = flow_user(ctx, request, flow, None) if request is not None else {}
    turn = await flow.send(session, text, user=user)
    return "\n\n".join(m.content for m in turn.messages), {"session": session, **turn.to_dict()}


__all__ = ["AGENT_SCHEMA", "CHAIN_SCHEMA", "FLOW_SCHEMA", "KEY_SCOPE", "mcp_server", "routes", "tool_name"]
