"""OpenAI-compatible routes for everything loaded.

    GET  /v1/models              agents and chains by id
    POST /v1/chat/completions    model = an agent or chain id; stream or not
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .context import ServerContext, deny
from .frames import agent_frames, chain_frames
from .openai_api import agent_input, error, parse_chat_request, respond


def routes(ctx: ServerContext) -> list[Route]:
    catalog = ctx.catalog

    @ctx.guard("read")
    async def models(request: Request) -> Response:
        key = getattr(request.state, "key", None)
        data = [{"id": e.id, "object": "model", "created": 0, "owned_by": f"chainreact-{e.kind}"}
                for e in catalog.entries.values() if key is None or key.allows("read", e.id)]
        return JSONResponse({"object": "list", "data": data})

    @ctx.guard("execute")
    async def chat(request: Request) -> Response:
        body = parse_chat_request(request.state.body)
        if isinstance(body, Response):
            return body
        ident = body.get("model")
        if not isinstance(ident, str) or not ident:
            return error(400, "'model' must name a served agent or chain (GET /v1/models lists them)")
        key = getattr(request.state, "key", None)
        if key is not None and not key.allows("execute", ident):
            return deny(403, f"this API key may not use {ident!r}", "permission_denied", True)
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

    return [Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])]
