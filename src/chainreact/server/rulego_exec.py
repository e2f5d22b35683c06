"""RuleGo's message routes (rulego-server internal/controller/rule.go Execute, PostMsg).

    POST /api/v1/rules/{id}/execute/{msgType}     run the chain on the body and answer, as RuleGo does, the
                                                  data of its out message (the first ended branch) with
                                                  Content-Type application/json, or 400 with the error text
                                                  (text/plain); `?_ends=true`: every ended branch instead,
                                                  {"ends": [{"relation", "error", "msg"}]}
    POST /api/v1/rules/{id}/notify/{msgType}      the same message in the background: 200, an empty body
    POST /api/v1/rules/{id}/v1/chat/completions   an OpenAI chat request as message type chat.completions
                                                  (`user` / X-Session-Key: the session, server/sessions.py),
                                                  answered as on /v1 (tool frames for agui clients); chains
                                                  only (agents, flows: /v1/chat/completions)

The message: type `msgType`; data the body (data type JSON when it parses, else TEXT); metadata the query
parameters, except RuleGo's own, which are never copied into it:
    _msgId              the message id
    _fromNodeId         the message enters at that node (its path on from there)
    _onlyNodeId         only that node runs (its relations end the branch)
    _headersToMetadata  true: the request headers join the metadata (Go's canonical names; never
                        Authorization, Cookie, X-User-Token)
    _debugMode          true: every node of the message reports its IN/OUT (server/rulego_runlog.py)
    _ends               true (chainreact's): answer every ended branch
RuleGo's server of the UI's generation read `msgId`, `headersToMetadata` (and its UI sends `debugMode`)
without the underscore, and left them in the metadata: they work the same, and stay there. The headers
X-Session-Key and X-User-Id become metadata `sessionKey` and `userId` (the agent nodes' sessions).

With a state store (`--state`), the chain engine's session store is that store: `sessionKey` metadata
keeps agent nodes' conversations across restarts. With `--temporal` a chain's message is a workflow on
the workers (`_fromNodeId` / `_onlyNodeId` are refused there: 400).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from .context import Handler, ServerContext
from .frames import chain_frames
from .openai_api import error, parse_chat_request, respond
from .rulego_http import dsl_view, not_found, ok
from .rulego_runlog import RunLog
from .sessions import chain_session, message_session, wire_chain_sessions

if TYPE_CHECKING:
    from ..chains.model import DebugEvent
    from ..chains.msg import RuleMsg

log = logging.getLogger("chainreact.server")

CONTROL = frozenset({"_msgId", "_fromNodeId", "_onlyNodeId", "_headersToMetadata", "_debugMode", "_ends"})
SECRET_HEADERS = frozenset({"authorization", "cookie", "x-user-token"})


@dataclass(slots=True)
class Incoming:
    msg: RuleMsg
    debug: bool
    start: str | None  # the node it enters at
    only: bool  # that node alone


def canonical_header(name: str) -> str:
    """Go's http.CanonicalHeaderKey: x-session-key -> X-Session-Key."""
    return "-".join(p[:1].upper() + p[1:].lower() for p in name.split("-"))


def incoming(request: Request) -> Incoming:
    """The message a RuleGo execute/notify request sends (above)."""
    from ..chains import RuleMsg

    q = request.query_params
    meta: dict[str, str] = {}
    for k, v in q.multi_items():
        if k not in CONTROL:
            meta.setdefault(k, v)  # Go's url.Values.Get: the first value
    if "true" in (q.get("_headersToMetadata"), q.get("headersToMetadata")):
        for k, v in request.headers.items():
            if k not in SECRET_HEADERS:
                meta.setdefault(canonical_header(k), v)
    for h, name in (("x-session-key", "sessionKey"), ("x-user-id", "userId")):
        if h in request.headers:
            meta[name] = request.headers[h]
    body = request.state.body.decode("utf-8", "replace")
    try:
        orjson.loads(body)
        data_type = "JSON"
    except orjson.JSONDecodeError:
        data_type = "TEXT"
    msg = RuleMsg(type=request.path_params["msgType"], data=body, metadata=meta, data_type=data_type)
    if msg_id := q.get("_msgId") or q.get("msgId"):
        msg.id = msg_id
    only = q.get("_onlyNodeId") or None
    return Incoming(msg, "true" in (q.get("_debugMode"), q.get("debugMode")), only or q.get("_fromNodeId")
                    or None, only is not None)


async def deliver(ctx: ServerContext, ident: str, inc: Incoming) -> list[Any]:
    """Run the message through chain `ident` (in process: with its debug events published and logged,
    server/rulego_runlog.py; with `--temporal`: as a workflow). Raises LookupError for an unknown start
    node, DurableRunError for a failed workflow."""
    durable = ctx.durable("chain", ident)
    if durable is not None:
        return list(await (await durable.start_chain(ident, inc.msg)).result())
    engine = ctx.catalog.chains
    chain = engine.get(ident)
    recorder = RunLog(ctx.rulego.hub, ident, inc.msg)
    own = engine.on_debug

    def on_debug(ev: DebugEvent) -> None:
        recorder.on_debug(ev)
        if own is not None:
            own(ev)

    try:
        ends = await engine.run(ident, inc.msg, on_debug=on_debug, debug=True if inc.debug else None,
                                start_node=inc.start, only_node=inc.only)
    except Exception as e:
        if recorder.events:
            await recorder.save(ctx.store, None, str(e) or type(e).__name__, dsl_view(chain))
        raise
    if recorder.events:
        await recorder.save(ctx.store, ends, None, dsl_view(chain))
    return ends


async def _in_background(ctx: ServerContext, ident: str, inc: Incoming) -> None:
    try:
        await deliver(ctx, ident, inc)
    except Exception as e:  # nobody waits for a notified message: its failure is logged
        log.warning("chain %r: notified message %s failed: %s", ident, inc.msg.id, e)


def refused(text: str) -> Response:
    """RuleGo's failure answer: 400, the error text."""
    return PlainTextResponse(text, status_code=400)


def message_routes(ctx: ServerContext) -> list[Route]:
    catalog = ctx.catalog

    def chain_of(ident: str) -> Any:
        engine = catalog.engine
        return engine.get(ident) if engine is not None else None

    async def check(request: Request) -> tuple[str, Incoming] | Response:
        ident = request.path_params["id"]
        chain = chain_of(ident)
        if chain is None:
            return not_found(ident)
        if chain.disabled:
            return refused(f"rule chain {ident!r} is stopped: POST /api/v1/rules/{ident}/operate/start "
                           "deploys it")
        inc = incoming(request)
        if inc.start is not None and ctx.durable("chain", ident) is not None:
            return refused("_fromNodeId and _onlyNodeId are not supported for chains run on Temporal "
                           "(serve --temporal)")
        if inc.start is not None and inc.start not in chain.nodes:
            return refused(f"node id={inc.start} not found in rule chain {ident!r}")
        # its sessionKey: no other wing's conversation, no other user's session (server/owners.py)
        if denied := await message_session(request, ctx.owners, ident, inc.msg.metadata.get("sessionKey")):
            return denied
        wire_chain_sessions(ctx.runs, catalog.engine)
        return ident, inc

    def message_route(fn: Callable[[Request, str, Incoming], Awaitable[Response]]) -> Handler:
        """An execute/notify route given the checked message (a refusal is answered before)."""
        @ctx.guard("execute", "id", users=True)
        async def handler(request: Request) -> Response:
            checked = await check(request)
            return checked if isinstance(checked, Response) else await fn(request, *checked)

        handler.__name__ = fn.__name__
        return handler

    @message_route
    async def execute(request: Request, ident: str, inc: Incoming) -> Response:
        try:
            ends = await deliver(ctx, ident, inc)
        except Exception as e:  # a failed workflow (--temporal), a chain removed meanwhile
            return refused(str(e) or type(e).__name__)
        if request.query_params.get("_ends") == "true":
            return JSONResponse({"ends": [e.to_dict() for e in ends]})
        first = ends[0] if ends else None
        if first is None:
            return ok()  # no branch ended (a chain with end nodes none reached): RuleGo writes nothing
        if first.error is not None:
            return refused(first.error)
        return Response(first.msg.data, media_type="application/json")

    @message_route
    async def notify(request: Request, ident: str, inc: Incoming) -> Response:
        durable = ctx.durable("chain", ident)
        if durable is not None:  # the workflow is started before the answer; it runs on in the workers
            await durable.start_chain(ident, inc.msg)
        else:
            ctx.spawn(_in_background(ctx, ident, inc))
        return ok()

    @ctx.guard("execute", "id", users=True)
    async def rule_chat(request: Request) -> Response:
        ident = request.path_params["id"]
        if chain_of(ident) is None:
            return error(404, f"no rule chain with id {ident!r}", code="model_not_found")
        body = parse_chat_request(request.state.body)
        if isinstance(body, Response):
            return body
        stream = bool(body.get("stream"))
        meta = await chain_session(request, body, ctx.runs, catalog.engine, ctx.owners, ident)
        if isinstance(meta, Response):
            return meta
        frames = chain_frames(catalog.chains, ident, body, stream=stream, metadata=meta,
                              durable=ctx.durable("chain", ident))
        return await respond(request, frames, str(body.get("model") or ident), stream)

    return [
        Route("/api/v1/rules/{id}/execute/{msgType}", execute, methods=["POST"]),
        Route("/api/v1/rules/{id}/notify/{msgType}", notify, methods=["POST"]),
        Route("/api/v1/rules/{id}/v1/chat/completions", rule_chat, methods=["POST"]),
    ]


routes = message_routes

__all__ = ["CONTROL", "Incoming", "canonical_header", "deliver", "incoming", "routes"]
