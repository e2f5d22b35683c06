"""Flow routes: sessions of the served flows, one user message per request.

    GET  /api/v1/flows                                  the served flows
    POST /api/v1/flows/{id}/sessions/{sid}/messages     one turn: SSE of its events, or JSON
    GET  /api/v1/flows/{id}/sessions/{sid}              the session: node, ended, variables (secrets masked)

A turn answers as SSE (`event: <type>`, `id: <n>`, `data: <event JSON>`, one per flow event, ending with
`turn_end`; with `"deltas": true` in the body also `text_delta` events, `{"event", "node", "text"}`, the
pieces of an agent node's message while the model writes it, before its `message`) unless the request
sends `Accept: application/json` (without text/event-stream) or `"stream": false`: then one JSON object,
the `chainreact flow send --json` form plus `session` and `events` (no deltas). The turn's tool calls are
always among its events (`tool_call`, `tool_result`, the flow's form): this is not OpenAI's framing, and
X-Stream-Protocol means nothing here (on /v1/chat/completions an agui client gets them as tool frames).
The user: see server/flows_runtime.py (a login token wins over the body's `user`). With logins, a
session belongs to the user who started it: others get 404 (server/owners.py).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .context import ServerContext
from .login import flow_user, needs_login
from .sse import SSE_HEADERS, sse

if TYPE_CHECKING:
    from ..flows import Flow
    from .flows_runtime import DurableServedFlow

_SESSION_ID = re.compile(r"^[A-Za-z0-9._:@~+=-]{1,200}$")
_SECRET_NAME = re.compile(r"pass(word|wd)?|secret|token|api[_-]?key|authorization|credential|private[_-]?key",
                          re.IGNORECASE)


def _fail(status: int, message: str, code: str) -> Response:
    return JSONResponse({"error": {"message": message, "code": code}}, status_code=status)


def mask_secrets(value: Any) -> Any:
    """`value` with every entry whose name looks like a secret (password, token, apiKey, ...) masked."""
    if isinstance(value, dict):
        return {k: "***" if isinstance(k, str) and _SECRET_NAME.search(k) else mask_secrets(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [mask_secrets(v) for v in value]
    return value


def _wants_json(request: Request, body: dict[str, Any]) -> bool:
    if body.get("stream") is False:
        return True
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/event-stream" not in accept


def routes(ctx: ServerContext) -> list[Route]:
    runtime = ctx.flows

    async def _flow_or_404(request: Request) -> Any:
        ident = request.path_params["id"]
        sid = request.path_params["sid"]
        flow = await runtime.flow(ident)
        if flow is None:
            return _fail(404, f"no flow with id {ident!r}; GET /api/v1/flows lists them", "not_found")
        if not _SESSION_ID.match(sid):
            return _fail(400, "the session id must be 1-200 characters of letters, digits and ._:@~+=-",
                         "bad_session_id")
        return flow

    @ctx.guard("read")
    async def list_flows(request: Request) -> Response:
        key = getattr(request.state, "key", None)
        items = []
        for e in ctx.catalog.entries.values():
            if e.kind != "flow" or (key is not None and not key.allows("read", e.id)):
                continue
            d = e.flow.definition
            items.append({"id": e.id, "name": d.name, "description": d.description,
                          "start": d.start_node.name, "nodes": [n.name for n in d.nodes],
                          "loginRequired": needs_login(e.flow)})
        return JSONResponse({"items": items, "total": len(items)})

    @ctx.guard("execute", "id")
    async def send(request: Request) -> Response:
        flow = await _flow_or_404(request)
        if isinstance(flow, Response):
            return flow
        try:
            body = orjson.loads(request.state.body or b"{}")
        except orjson.JSONDecodeError as e:
            return _fail(400, f"the request body is not valid JSON: {e}", "bad_request")
        if not isinstance(body, dict) or not isinstance(body.get("text"), str):
            return _fail(400, 'expected a JSON object {"text": "...", "user": {...}}', "bad_request")
        for name in ("user", "group"):
            if body.get(name) is not None and not isinstance(body[name], dict):
                return _fail(400, f"'{name}' must be an object", "bad_request")
        for name in ("stream", "deltas"):
            if name in body and not isinstance(body[name], bool):
                return _fail(400, f"'{name}' must be true or false", "bad_request")
        sid = request.path_params["sid"]
        if refused := await ctx.owners.check(request, flow.session_key(sid), sid, write=True):
            return refused.plain()
        user = flow_user(ctx, request, flow, body.get("user"))
        text, group = body["text"], body.get("group")
        if _wants_json(request, body):
            return await _as_json(flow, sid, flow.stream(sid, text, user=user, group=group))
        if body.get("deltas"):
            # Opt-in: the agent nodes' model calls stream and their text comes as text_delta events too;
            # the other events are the same as without.
            from ..flows.answer_stream import text_deltas

            events = text_deltas(flow.definition, flow.stream(sid, text, user=user, group=group,
                                                              agent_events=True))
        else:
            events = flow.stream(sid, text, user=user, group=group)
        return StreamingResponse(_as_sse(events), media_type="text/event-stream", headers=SSE_HEADERS)

    @ctx.guard("read", "id")
    async def session(request: Request) -> Response:
        flow = await _flow_or_404(request)
        if isinstance(flow, Response):
            return flow
        sid = request.path_params["sid"]
        if refused := await ctx.owners.check(request, flow.session_key(sid), sid, write=False):
            return refused.plain()
        rec = await (await runtime.store()).get_run(flow.session_key(sid))
        snap = rec.snapshot if rec is not None and isinstance(rec.snapshot, dict) else {}
        ended = bool(snap.get("ended"))
        return JSONResponse({
            "flow": flow.id, "session": sid, "exists": rec is not None,
            # The node the next message goes to: a new or ended session starts again at the start node.
            "node": snap.get("node") if snap and not ended else flow.definition.start_node.name,
            "ended": ended, "variables": mask_secrets(snap.get("vars") or {}),
            "output": mask_secrets(snap.get("output")),
        })

    return [
        Route("/api/v1/flows", list_flows),
        Route("/api/v1/flows/{id}/sessions/{sid}/messages", send, methods=["POST"]),
        Route("/api/v1/flows/{id}/sessions/{sid}", session),
    ]


async def _as_json(flow: Flow | DurableServedFlow, sid: str, events: AsyncIterator[Any]) -> Response:
    from ..flows import FlowMessage, TurnResult

    turn = TurnResult(node=None, ended=False, messages=[])
    seen: list[dict[str, Any]] = []
    try:
        async for ev in events:
            seen.append(ev.to_dict())
            if ev.type == "message":
                turn.messages.append(FlowMessage(ev.node or "", ev.data["content"]))
            elif ev.type == "output":
                turn.output = ev.data["output"]
            elif ev.type == "turn_end":
                turn.node, turn.ended = ev.data["current"], ev.data["ended"]
    except Exception as e:  # the turn failed: nothing was saved, the session did not move
        from ..state import RunConflictError

        if isinstance(e, RunConflictError):  # another turn of this session saved first
            return JSONResponse({"error": {"message": f"session {sid!r} moved on during this turn (two "
                                                      f"messages at once?): {e}; send it again",
                                           "code": "session_conflict"}}, status_code=409)
        return JSONResponse({"error": {"message": str(e) or type(e).__name__, "code": "turn_failed"}},
                            status_code=500)
    return JSONResponse({"session": sid, **turn.to_dict(), "events": seen})


async def _as_sse(events: AsyncIterator[Any]) -> AsyncIterator[bytes]:
    seq = 0
    try:
        async for ev in events:
            seq += 1
            yield sse(ev.to_dict(), event=ev.type, id=seq)
    except Exception as e:
        seq += 1
        yield sse({"event": "error", "message": str(e) or type(e).__name__, "type": "stream_error"},
                  event="error", id=seq)
    finally:
        await events.aclose()  # type: ignore[attr-defined]
