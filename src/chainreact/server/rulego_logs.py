"""RuleGo's log routes (rulego-server internal/controller/run_log.go, internal/router/websocket.go), read
from the run logs server/rulego_runlog.py keeps in the state store.

    GET    /api/v1/logs/runs      ?chainId= &page=1 &size=20: {"page", "size", "total", "items": [snapshot]}
                                  ?id= (&chainId=): one RuleChainRunSnapshot {"ruleChain", "metadata", "id",
                                  "startTs", "endTs", "logs": [{"nodeId", "inMsg", "outMsg", "relationType",
                                  "err", "logItems", "startTs", "endTs"}], "additionalInfo"}; 404 without it
    DELETE /api/v1/logs/runs      ?id= one log, ?chainId= every log of a chain (one of them is required)
    GET    /api/v1/logs/debug     ?chainId= &nodeId= &page=1 &size=20: a node's debug items, newest first:
                                  {"pageSize", "current", "total", "items": [{"ts", "nodeId", "flowType",
                                  "msg", "relationType", "err", "chainId"}]}
    WS     /api/v1/logs/ws/{chainId}/{clientId}   every debug event of the chain's messages while open:
                                  {"chainId", "flowType", "nodeId", "relationType", "err", "msg", "ts"}

The websocket takes its key (or a logged-in user's token) from `Authorization: Bearer` or `?token=` (a
browser's WebSocket cannot send headers); it needs `read` on the chain.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import quote

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from .context import ServerContext, bad_ident
from .rulego_http import ok, page_of, paged, query_int
from .rulego_runlog import chain_prefix, debug_items, run_logs, snapshot


def routes(ctx: ServerContext) -> list[BaseRoute]:
    state = ctx.rulego

    async def find(run: str, chain_id: str) -> str | None:
        """The store id of run log `run` (RuleGo's snapshot id), of chain `chain_id` when given."""
        if chain_id:
            rid = chain_prefix(chain_id) + quote(run, safe="")
            return rid if await state.store.get_run(rid) is not None else None
        tail = ":" + quote(run, safe="")
        return next((r for r in await run_logs(state.store, None) if r.endswith(tail)), None)

    async def asked(request: Request) -> tuple[str, str, str | None]:
        """The query's chainId and run log id, and that log's store id (None: none, or not asked)."""
        chain_id, run = request.query_params.get("chainId", ""), request.query_params.get("id", "")
        return chain_id, run, await find(run, chain_id) if run else None

    @ctx.guard("read", users=True)
    async def list_runs(request: Request) -> Response:
        chain_id, run, rid = await asked(request)
        if run:
            snap = await snapshot(state.store, rid) if rid is not None else None
            if snap is None:
                return JSONResponse({"error": {"message": f"no run log {run!r}", "code": "not_found"}},
                                    status_code=404)
            return JSONResponse(snap)
        page, size = page_of(request)
        ids = await run_logs(state.store, chain_id or None)
        items = [s for rid in paged(ids, page, size) if (s := await snapshot(state.store, rid)) is not None]
        return JSONResponse({"page": page, "size": size, "total": len(ids), "items": items})

    @ctx.guard("write", users=True)
    async def delete_runs(request: Request) -> Response:
        chain_id, run, rid = await asked(request)
        if run:
            if rid is not None:
                await state.store.delete_run(rid)
        elif chain_id:
            for rid in await run_logs(state.store, chain_id):
                await state.store.delete_run(rid)
        else:
            what = "give the run log's id or a chainId: ?id=... or ?chainId=..."
            return JSONResponse({"error": {"message": what, "code": "bad_request"}}, status_code=400)
        return ok()

    @ctx.guard("read", users=True)
    async def debug_logs(request: Request) -> Response:
        q = request.query_params
        chain_id, node_id = q.get("chainId", ""), q.get("nodeId", "")
        current, size = max(query_int(request, "page", 1), 1), query_int(request, "size", 20)
        items = await debug_items(state.store, chain_id, node_id) if chain_id and node_id else []
        size = size if size > 0 else len(items)  # RuleGo: no page size reads every item
        return JSONResponse({"pageSize": size, "current": current, "total": len(items),
                             "items": items[(current - 1) * size:current * size]})

    async def debug_socket(ws: WebSocket) -> None:
        chain_id = ws.path_params["chainId"]
        if bad_ident(chain_id) or bad_ident(ws.path_params["clientId"]):
            await ws.close(code=1008, reason="invalid chain or client id")
            return
        if ctx.keys is not None:
            auth = ws.headers.get("authorization", "")
            token = auth[7:].strip() if auth[:7].lower() == "bearer " else ws.query_params.get("token", "")
            key = ctx.authenticate(token, users=True)
            if key is None or not key.allows("read", chain_id):
                await ws.close(code=1008, reason="a key or login token with read on the chain is required")
                return
        await ws.accept()
        queue = state.hub.subscribe(chain_id)

        async def until_closed() -> None:
            with contextlib.suppress(WebSocketDisconnect):
                while True:
                    await ws.receive_text()  # the UI sends nothing; this notices the client leaving

        reader = asyncio.ensure_future(until_closed())
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, reader}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    return  # the client left
                event = getter.result()
                if event is None:  # the server is stopping
                    await ws.close(code=1001)
                    return
                await ws.send_text(orjson.dumps(event).decode())
        except (WebSocketDisconnect, RuntimeError):
            return  # gone while we were sending
        finally:
            state.hub.unsubscribe(chain_id, queue)
            reader.cancel()

    return [
        Route("/api/v1/logs/runs", list_runs, methods=["GET"]),
        Route("/api/v1/logs/runs", delete_runs, methods=["DELETE"]),
        Route("/api/v1/logs/debug", debug_logs, methods=["GET"]),
        WebSocketRoute("/api/v1/logs/ws/{chainId}/{clientId}", debug_socket),
    ]


__all__ = ["routes"]
