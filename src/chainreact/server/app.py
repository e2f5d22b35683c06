"""The Starlette application: OpenAI-compatible routes for every agent and chain, RuleGo's rule routes,
health checks; API keys and a body limit in front of them.

    GET  /v1/models                                  agents and chains by id
    POST /v1/chat/completions                        model = an agent or chain id; stream or not
    GET  /api/v1/rules                               loaded chains
    GET|POST|DELETE /api/v1/rules/{id}               a chain's DSL (secrets never returned) / store / remove
    POST /api/v1/rules/{id}/execute/{msgType}        run and answer with the ended messages
    POST /api/v1/rules/{id}/notify/{msgType}         run in the background, 200 at once
    POST /api/v1/rules/{id}/v1/chat/completions      an OpenAI chat request as message type chat.completions
    GET  /healthz, /readyz
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .auth import KeyStore
from .catalog import Catalog
from .frames import agent_frames, chain_frames
from .openai_api import agent_input, error, parse_chat_request, respond

log = logging.getLogger("chainreact.server")

DEFAULT_BODY_LIMIT = 10 * 1024 * 1024
Handler = Callable[[Request], Awaitable[Response]]


class _TooLarge(Exception):
    pass


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused past `limit` bytes whether or not the client declared its length."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(catalog: Catalog, *, keys: KeyStore | None = None,
               body_limit: int = DEFAULT_BODY_LIMIT) -> Starlette:
    notify_tasks: set[asyncio.Task[Any]] = set()

    def guard(permission: str, ident_param: str | None = None) -> Callable[[Handler], Handler]:
        """Auth (when a keys file is given) and the body limit, around one route."""

        def wrap(fn: Handler) -> Handler:
            async def handler(request: Request) -> Response:
                openai_shape = request.url.path.startswith("/v1/") or request.url.path.endswith(
                    "/chat/completions")
                if keys is not None:
                    auth = request.headers.get("authorization", "")
                    token = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
                    key = keys.find(token) if token else None
                    if key is None:
                        return _deny(401, "a valid API key is required: Authorization: Bearer <key>",
                                     "invalid_api_key", openai_shape)
                    ident = request.path_params.get(ident_param) if ident_param else None
                    if not key.allows(permission, ident):
                        what = f" on {ident!r}" if ident else ""
                        return _deny(403, f"this API key lacks the {permission!r} permission{what}",
                                     "permission_denied", openai_shape)
                    request.state.key = key
                try:
                    request.state.body = await read_body(request, body_limit) \
                        if request.method in ("POST", "PUT") else b""
                except _TooLarge:
                    return error(413, f"the request body is larger than the limit of {body_limit} bytes",
                                 code="body_too_large")
                except ClientDisconnect:
                    return Response(status_code=499)
                return await fn(request)

            return handler

        return wrap

    # -- OpenAI -----------------------------------------------------------------------------------------

    @guard("read")
    async def models(request: Request) -> Response:
        key = getattr(request.state, "key", None)
        data = [{"id": e.id, "object": "model", "created": 0, "owned_by": f"chainreact-{e.kind}"}
                for e in catalog.entries.values() if key is None or key.allows("read", e.id)]
        return JSONResponse({"object": "list", "data": data})

    @guard("execute")
    async def chat(request: Request) -> Response:
        body = parse_chat_request(request.state.body)
        if isinstance(body, Response):
            return body
        ident = body.get("model")
        if not isinstance(ident, str) or not ident:
            return error(400, "'model' must name a served agent or chain (GET /v1/models lists them)")
        key = getattr(request.state, "key", None)
        if key is not None and not key.allows("execute", ident):
            return _deny(403, f"this API key may not use {ident!r}", "permission_denied", True)
        entry = catalog.entries.get(ident)
        if entry is None:
            return error(404, f"no agent or chain with id {ident!r}; GET /v1/models lists them",
                         code="model_not_found")
        stream = bool(body.get("stream"))
        if entry.kind == "agent":
            frames = agent_frames(entry.obj, agent_input(body), stream=stream)
        else:
            frames = chain_frames(catalog.engine, entry.id, body, stream=stream)
        return await respond(request, frames, ident, stream)

    # -- RuleGo -----------------------------------------------------------------------------------------

    def _chain(ident: str) -> Any:
        engine = catalog.engine
        return engine.get(ident) if engine is not None else None

    @guard("read")
    async def list_rules(request: Request) -> Response:
        engine = catalog.engine
        chains = engine.chains.values() if engine is not None else ()
        items = [{"id": c.id, "name": c.definition.ruleChain.name, "root": c.definition.ruleChain.root,
                  "disabled": c.disabled} for c in chains]
        return JSONResponse({"items": items, "total": len(items)})

    @guard("read", "id")
    async def get_rule(request: Request) -> Response:
        chain = _chain(request.path_params["id"])
        if chain is None:
            return _not_found(request.path_params["id"])
        dsl = chain.definition.model_dump(mode="json", exclude_none=True)
        (dsl.get("ruleChain", {}).get("configuration") or {}).pop("secrets", None)
        return JSONResponse(dsl)

    @guard("write", "id")
    async def put_rule(request: Request) -> Response:
        ident = request.path_params["id"]
        from ..chains import ChainLoadError

        try:
            doc = orjson.loads(request.state.body)
        except orjson.JSONDecodeError as e:
            return error(400, f"the chain DSL is not valid JSON: {e}")
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

    @guard("write", "id")
    async def delete_rule(request: Request) -> Response:
        ident = request.path_params["id"]
        if _chain(ident) is None:
            return _not_found(ident)
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

    @guard("execute", "id")
    async def execute(request: Request) -> Response:
        ident = request.path_params["id"]
        if _chain(ident) is None:
            return _not_found(ident)
        ends = await catalog.engine.run(ident, _message(request))
        return JSONResponse({"ends": [e.to_dict() for e in ends]})

    @guard("execute", "id")
    async def notify(request: Request) -> Response:
        ident = request.path_params["id"]
        if _chain(ident) is None:
            return _not_found(ident)
        task = asyncio.ensure_future(catalog.engine.run(ident, _message(request)))
        notify_tasks.add(task)  # keep a reference until it ends
        task.add_done_callback(notify_tasks.discard)
        return JSONResponse({"id": ident, "accepted": True})

    @guard("execute", "id")
    async def rule_chat(request: Request) -> Response:
        ident = request.path_params["id"]
        if _chain(ident) is None:
            return error(404, f"no rule chain with id {ident!r}", code="model_not_found")
        body = parse_chat_request(request.state.body)
        if isinstance(body, Response):
            return body
        stream = bool(body.get("stream"))
        frames = chain_frames(catalog.engine, ident, body, stream=stream)
        return await respond(request, frames, str(body.get("model") or ident), stream)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        kinds = [e.kind for e in catalog.entries.values()]
        return JSONResponse({"status": "ready", "agents": kinds.count("agent"),
                             "chains": kinds.count("chain"), "problems": catalog.problems})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        for t in list(notify_tasks):
            t.cancel()
        await catalog.aclose()

    routes = [
        Route("/healthz", healthz), Route("/readyz", readyz),
        Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/api/v1/rules", list_rules),
        Route("/api/v1/rules/{id}", get_rule, methods=["GET"]),
        Route("/api/v1/rules/{id}", put_rule, methods=["POST", "PUT"]),
        Route("/api/v1/rules/{id}", delete_rule, methods=["DELETE"]),
        Route("/api/v1/rules/{id}/execute/{msgType}", execute, methods=["POST"]),
        Route("/api/v1/rules/{id}/notify/{msgType}", notify, methods=["POST"]),
        Route("/api/v1/rules/{id}/v1/chat/completions", rule_chat, methods=["POST"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan,
                     exception_handlers={HTTPException: _http_error})  # type: ignore[dict-item]


async def _http_error(request: Request, exc: HTTPException) -> Response:
    # Unknown paths and methods answer in the same JSON shape as everything else.
    return JSONResponse({"error": {"message": f"{exc.detail}: {request.method} {request.url.path}",
                                   "code": "not_found" if exc.status_code == 404 else "bad_request"}},
                        status_code=exc.status_code)


def _deny(status: int, message: str, code: str, openai_shape: bool) -> Response:
    return error(status, message, "invalid_request_error" if status == 401 else "permission_error", code) \
        if openai_shape else JSONResponse({"error": {"message": message, "code": code}}, status_code=status)


def _not_found(ident: str) -> Response:
    return JSONResponse({"error": {"message": f"no rule chain with id {ident!r}", "code": "not_found"}},
                        status_code=404)
