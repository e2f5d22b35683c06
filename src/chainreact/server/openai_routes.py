"""OpenAI-compatible routes for everything loaded.

    GET  /v1/models              agents, chains and flows by id
    GET  /v1/models/{id}         one of them (404 model_not_found)
    POST /v1/chat/completions    model = an agent, chain or flow id; stream or not

An agent runs through the run registry (server/agent_chat.py): `user` (or `X-Session-Key`) names its
session when the server has a state store; `tools`, `tool_choice` and `response_format` apply to its
run (client_tools.py). So does a chain's: each agent node of the chain keeps its own
conversation in that session (server/sessions.py `chain_session`).

A flow gets the last user message as one turn of the session named by `user` (or `X-Session-Key`; none:
a new session, whose key comes back in the `X-Session-Key` response header); the answer is the turn's
messages (server/flows_runtime.py), streamed (`stream: true`) as the agent nodes write them; an agui
client (X-Stream-Protocol: agui) gets the agent nodes' tool calls and results among them as tool frames,
as from an agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .agent_chat import agent_chat
from .catalog import Entry
from .context import ServerContext, deny
from .flows_runtime import flow_frames, last_user_text, session_key
from .frames import agent_frames, chain_frames
from .login import flow_user
from .openai_api import agent_input, agui, error, parse_chat_request, respond
from .sessions import chain_session

if TYPE_CHECKING:
    from .catalog import Catalog, Entry


def routes(ctx: ServerContext) -> list[Route]:
    catalog = ctx.catalog

    @ctx.guard("read")
    async def models(request: Request) -> Response:
        key = getattr(request.state, "key", None)
        data = [_model(e) for e in catalog.entries.values() if key is None or key.allows("read", e.id)]
        return JSONResponse({"object": "list", "data": data})

    @ctx.guard("read", "id")
    async def model(request: Request) -> Response:
        ident = request.path_params["id"]
        entry = catalog.entries.get(ident)
        if entry is None:
            return error(404, f"no agent, chain or flow with id {ident!r}; GET /v1/models lists them",
                         code="model_not_found")
        return JSONResponse(_model(entry))

    @ctx.guard("execute")
    async def chat(request: Request) -> Response:
        body = parse_chat_request(request.state.body)
        if isinstance(body, Response):
            return body
        ident = body.get("model")
        if not isinstance(ident, str) or not ident:
            return error(400, "'model' must name a served agent, chain or flow (GET /v1/models lists them)")
        entry = served(request, catalog, ident)
        if isinstance(entry, Response):
            return entry
        stream = bool(body.get("stream"))
        if entry.kind != "agent" and (refused := agent_only(body.get("tools"), body.get("tool_choice"),
                                                            body.get("response_format"), entry)):
            return refused
        if entry.kind == "flow":
            text = last_user_text(body)
            if text is None:
                return error(400, "a flow needs a user message: the last 'user' message is sent to it",
                             code="invalid_messages")
            flow = await ctx.flows.served(ident)
            sid = session_key(request, body)
            if taken := await ctx.owners.check(request, flow.session_key(sid), sid, write=True):
                return taken.openai()
            user = flow_user(ctx, request, flow, None)
            frames = flow_frames(flow, sid, text, user, stream=stream, tools=stream and agui(request))
            resp = await respond(request, frames, ident, stream)
            resp.headers["X-Session-Key"] = sid
            return resp
        registry = ctx.runs
        if entry.kind == "agent" and registry is not None:
            return await agent_chat(request, registry, ctx.owners, entry, body, ident, stream)
        if entry.kind == "agent":
            frames = agent_frames(entry.agent, agent_input(body), stream=stream)
        else:
            meta = await chain_session(request, body, registry, catalog.engine, ctx.owners, entry.id)
            if isinstance(meta, Response):
                return meta
            frames = chain_frames(catalog.chains, entry.id, body, stream=stream, metadata=meta,
                                  durable=ctx.durable("chain", entry.id))
        return await respond(request, frames, ident, stream)

    return [Route("/v1/models", models), Route("/v1/models/{id}", model),
            Route("/v1/chat/completions", chat, methods=["POST"])]


def served(request: Request, catalog: Catalog, ident: str) -> Entry | Response:
    """The catalog entry `model` names, or the 403 (the API key may not use it) or 404 to answer."""
    key = getattr(request.state, "key", None)
    if key is not None and not key.allows("execute", ident):
        return deny(403, f"this API key may not use {ident!r}", "permission_denied", True)
    entry = catalog.entries.get(ident)
    if entry is None:
        return error(404, f"no agent, chain or flow with id {ident!r}; GET /v1/models lists them",
                     code="model_not_found")
    return entry


def agent_only(tools: Any, choice: Any, fmt: Any, entry: Entry) -> Response | None:
    """The 400 for client tools or a response format sent to a chain or a flow: only an agent's model can
    be offered them (a chain's or flow's own agents have their documents' tools and formats)."""
    given = (("tools", bool(tools)), ("tool_choice", choice not in (None, "auto", "none")),
             ("response_format", isinstance(fmt, dict) and fmt.get("type") != "text"))
    asked = [name for name, yes in given if yes]
    if not asked:
        return None
    return error(400, f"{' and '.join(asked)} apply to an agent's model; {entry.id!r} is a {entry.kind}, "
                      "whose agents use the tools and formats of their documents",
                 code="unsupported_parameter")


def _model(entry: Entry) -> dict[str, Any]:
    return {"id": entry.id, "object": "model", "created": 0, "owned_by": f"chainreact-{entry.kind}"}
