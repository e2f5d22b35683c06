"""RuleGo's rule-chain routes (same paths, methods and bodies as RuleGo's server).

    GET  /api/v1/rules                               loaded chains
    GET|POST|DELETE /api/v1/rules/{id}               a chain's DSL (secrets never returned) / store / remove
    POST /api/v1/rules/{id}/execute/{msgType}        run and answer with the ended messages
    POST /api/v1/rules/{id}/notify/{msgType}         run in the background, 200 at once
    POST /api/v1/rules/{id}/v1/chat/completions      an OpenAI chat request as message type chat.completions
                                                     (`user` / X-Session-Key: the session, server/sessions.py)
                                                     answered as on /v1 (tool frames for agui clients);
                                                     chains only (agents, flows: /v1/chat/completions)

With a state store (`--state`), the chain engine's session store is that store: `sessionKey` metadata
(the X-Session-Key header on execute/notify) keeps agent nodes' conversations across restarts.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .context import ServerContext
from .frames import chain_frames
from .openai_api import error, parse_chat_request, respond
from .sessions import chain_session, message_session, wire_chain_sessions


def not_found(ident: str) -> Response:
    return JSONResponse({"error": {"message": f"no rule chain with id {ident!r}", "code": "not_found"}},
                        status_code=404)


def routes(ctx: ServerContext) -> list[Route]:
    catalog = ctx.catalog

    def _chain(ident: str) -> Any:
        engine = catalog.engine
        return engine.get(ident) if engine is not None else None

    @ctx.guard("read")
    async def list_rules(request: Request) -> Response:
        engine = catalog.engine
        chains = engine.chains.values() if engine is not None else ()
        items = [{"id": c.id, "name": c.definition.ruleChain.name, "root": c.definition.ruleChain.root,
                  "disabled": c.disabled} for c in chains]
        return JSONResponse({"items": items, "total": len(items)})

    @ctx.guard("read", "id")
    async def get_rule(request: Request) -> Response:
        chain = _chain(request.path_params["id"])
        if chain is None:
            return not_found(request.path_params["id"])
        dsl = chain.definition.model_dump(mode="json", exclude_none=True)
        (dsl.get("ruleChain", {}).get("configuration") or {}).pop("secrets", None)
        return JSONResponse(dsl)

    @ctx.guard("write", "id")
    async def put_rule(request: Request) -> Response:
        ident = request.path_params["id"]
        from ..chains import ChainLoadError

        try:
            doc = orjson.loads(request.state.body)
        except orjson.JSONDecodeError as e:
            return error(400, f"the chain DSL is not valid JSON: {e}")
        if not isinstance(doc, dict):
            return error(400, "the chain DSL must be a JSON object with ruleChain and metadata")
        existing = catalog.entries.get(ident)
        if existing is not None and existing.kind != "chain":
            return error(409, f"id {ident!r} is an agent, not a chain")
        try:
            chain = catalog.chain_engine().load(doc, chain_id=ident)
        except ChainLoadError as e:
            paths = [{"path": p, "message": m} for p, m in (e.errors or [])]
            return JSONResponse({"error": {"message": str(e), "type": "invalid_request_error",
                                           "errors": paths}}, status_code=400)
        catalog.add_chain(chain.id, "<api>")
        return JSONResponse({"id": chain.id, "loaded": True})

    @ctx.guard("write", "id")
    async def delete_rule(request: Request) -> Response:
        ident = request.path_params["id"]
        if _chain(ident) is None:
            return not_found(ident)
        catalog.remove(ident)
        return JSONResponse({"id": ident, "deleted": True})

    def _message(request: Request) -> Any:
        from ..chains import RuleMsg

        body = request.state.body.decode("utf-8", "replace")
        meta = {k: v for k, v in request.query_params.items()}
        for h in ("x-session-key", "x-user-id"):
            if h in request.headers:
                meta["sessionKey" if h == "x-session-key" else "userId"] = request.headers[h]
        try:
            orjson.loads(body)
            data_type = "JSON"
        except orjson.JSONDecodeError:
            data_type = "TEXT"
        return RuleMsg(type=request.path_params["msgType"], data=body, metadata=meta, data_type=data_type)

    @ctx.guard("execute", "id")
    async def execute(request: Request) -> Response:
        ident = request.path_params["id"]
        if _chain(ident) is None:
            return not_found(ident)
        msg = _message(request)
        if refused := await message_session(request, ctx.owners, ident, msg.metadata.get("sessionKey")):
            return refused
        wire_chain_sessions(ctx.runs, catalog.engine)
        durable = ctx.durable("chain", ident)
        if durable is None:
            ends = await catalog.engine.run(ident, msg)
        else:  # serve --temporal: a workflow on the workers
            from ..durable import DurableRunError

            run = await durable.start_chain(ident, msg)
            try:
                ends = await run.result()
            except DurableRunError as e:
                return error(502, str(e), "server_error", "durable_run_failed")
        return JSONResponse({"ends": [e.to_dict() for e in ends]})

    @ctx.guard("execute", "id")
    async def notify(request: Request) -> Response:
        ident = request.path_params["id"]
        if _chain(ident) is None:
            return not_found(ident)
        msg = _message(request)
        if refused := await message_session(request, ctx.owners, ident, msg.metadata.get("sessionKey")):
            return refused
        wire_chain_sessions(ctx.runs, catalog.engine)
        durable = ctx.durable("chain", ident)
        if durable is None:
            ctx.spawn(catalog.engine.run(ident, msg))
        else:  # the workflow is started before the answer; it runs on in the workers
            await durable.start_chain(ident, msg)
        return JSONResponse({"id": ident, "accepted": True})

    @ctx.guard("execute", "id")
    async def rule_chat(request: Request) -> Response:
        ident = request.path_params["id"]
        if _chain(ident) is None:
            return error(404, f"no rule chain with id {ident!r}", code="model_not_found")
        body = parse_chat_request(request.state.body)
        if isinstance(body, Response):
            return body
        stream = bool(body.get("stream"))
        meta = await chain_session(request, body, ctx.runs, catalog.engine, ctx.owners, ident)
        if isinstance(meta, Response):
            return meta
        frames = chain_frames(catalog.engine, ident, body, stream=stream, metadata=meta,
                              durable=ctx.durable("chain", ident))
        return await respond(request, frames, str(body.get("model") or ident), stream)

    return [
        Route("/api/v1/rules", list_rules),
        Route("/api/v1/rules/{id}", get_rule, methods=["GET"]),
        Route("/api/v1/rules/{id}", put_rule, methods=["POST", "PUT"]),
        Route("/api/v1/rules/{id}", delete_rule, methods=["DELETE"]),
        Route("/api/v1/rules/{id}/execute/{msgType}", execute, methods=["POST"]),
        Route("/api/v1/rules/{id}/notify/{msgType}", notify, methods=["POST"]),
        Route("/api/v1/rules/{id}/v1/chat/completions", rule_chat, methods=["POST"]),
    ]
