"""The web playground: a page at `/` to chat with, watch and debug what the server loaded.

    GET  /                                      the page (static, from the package: no CDN, works offline)
    GET  /playground/{file}                     its scripts and styles (only the files it ships)
    GET  /playground/api/catalog                everything loaded: id, kind, description (+ model of agents),
                                                its addresses (OpenAI, AG-UI, A2A)
    POST /playground/api/chains/{id}/trace      run a chain once with debug capture: every node's IN/OUT
    GET  /playground/api/flows/{id}             a flow's nodes, transitions and sessions (playground_flows)
    GET  /playground/api/flows/{id}/sessions/{sid}   one session's conversation so far (playground_flows)
    GET  /playground/api/agents/{id}/runs       an agent's recent runs in the store (playground_runs)
    GET  /playground/api/chains/{id}/runs       a rule chain's recent runs in the store (playground_runs)

The page itself carries no data and needs no key; its API calls send the key the user types in (kept in
the tab's sessionStorage) like any other client, so `--keys` protects the playground as it does the rest.
Chat goes through the public runs API (`/api/v1/agents/{id}/runs`, `/api/v1/rules/{id}/runs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from .catalog import Entry
from .context import ServerContext
from .playground_flows import flow_handler, session_handler
from .playground_runs import cassette_handler, runs_handler

if TYPE_CHECKING:
    from ..chains.model import DebugEvent

STATIC_DIR = Path(__file__).parent / "playground"
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".html": "text/html; charset=utf-8", ".svg": "image/svg+xml"}
# A trace is for looking at: a chain that loops for long is cut here rather than filling memory.
MAX_TRACE_EVENTS = 2000
TRACE_TIMEOUT = 60.0
# The page must not be framed by other sites, nor load anything from elsewhere.
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                               "script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


def _error(status: int, message: str, code: str) -> Response:
    return JSONResponse({"error": {"message": message, "code": code}}, status_code=status)


def _static_files() -> dict[str, Path]:
    # Only what ships in the package folder, looked up by exact name: no path from the URL reaches the disk.
    return {p.name: p for p in STATIC_DIR.iterdir() if p.is_file() and p.suffix in _TYPES}


def _entry_info(entry: Entry) -> dict[str, Any]:
    ident = quote(entry.id, safe="")
    # Where other clients reach it (paths on this server): every id is a model of the OpenAI routes, an
    # AG-UI agent (agui_routes) and an A2A agent (a2a_routes).
    addresses = {"openai": "/v1/chat/completions", "agui": f"/agui/{ident}", "a2a": f"/a2a/{ident}",
                 "a2a_card": f"/a2a/{ident}/.well-known/agent-card.json"}
    info: dict[str, Any] = {"id": entry.id, "kind": entry.kind, "description": entry.description or "",
                            "addresses": addresses}
    if entry.kind == "agent":
        model = entry.agent.config.model
        if isinstance(model, str):
            info["model"] = model
    return info


def routes(ctx: ServerContext) -> list[Route]:
    catalog = ctx.catalog
    files = _static_files()

    async def page(request: Request) -> Response:
        return FileResponse(files["index.html"], media_type=_TYPES[".html"], headers=_PAGE_HEADERS)

    async def asset(request: Request) -> Response:
        path = files.get(request.path_params["file"])
        if path is None:
            return _error(404, f"the playground has no file {request.path_params['file']!r}", "not_found")
        return FileResponse(path, media_type=_TYPES[path.suffix], headers=_PAGE_HEADERS)

    @ctx.guard("read")
    async def list_catalog(request: Request) -> Response:
        key = getattr(request.state, "key", None)
        items = [_entry_info(e) for e in catalog.entries.values() if key is None or key.allows("read", e.id)]
        return JSONResponse({"items": items, "problems": len(catalog.problems)})

    @ctx.guard("execute", "id")
    async def trace(request: Request) -> Response:
        from ..chains import RuleMsg

        ident = request.path_params["id"]
        engine = catalog.engine
        if engine is None or engine.get(ident) is None:
            return _error(404, f"no rule chain with id {ident!r}; GET /api/v1/rules lists them", "not_found")
        try:
            body = orjson.loads(request.state.body or b"{}")
        except orjson.JSONDecodeError as e:
            return _error(400, f"the body is not valid JSON: {e}; send "
                               '{"msgType": "...", "data": "...", "metadata": {...}}', "bad_request")
        if not isinstance(body, dict):
            return _error(400, 'the body must be an object: {"msgType", "data", "metadata"}', "bad_request")
        msg_type, data, meta = body.get("msgType", "TEST"), body.get("data", ""), body.get("metadata") or {}
        if not isinstance(msg_type, str) or not msg_type:
            return _error(400, "'msgType' must be a non-empty string", "bad_request")
        if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
            return _error(400, "'metadata' must map names to strings", "bad_request")
        text = data if isinstance(data, str) else orjson.dumps(data).decode()
        try:
            orjson.loads(text)
            data_type = "JSON"
        except orjson.JSONDecodeError:
            data_type = "TEXT"
        events: list[dict[str, Any]] = []
        cut = False

        def on_debug(ev: DebugEvent) -> None:
            nonlocal cut
            if len(events) >= MAX_TRACE_EVENTS:
                cut = True
                return
            events.append({**ev.to_dict(), "ts": ev.ts})

        msg = RuleMsg(type=msg_type, data=text, metadata=dict(meta), data_type=data_type)
        try:
            ends = await engine.run(ident, msg, on_debug=on_debug, debug=True, timeout=TRACE_TIMEOUT)
        except (LookupError, RuntimeError) as e:  # removed or disabled since the check above
            return _error(409, str(e), "not_runnable")
        return JSONResponse({"chainId": ident, "events": events, "truncated": cut,
                             "ends": [{**e.to_dict(), "nodeId": e.node_id} for e in ends]})

    return [
        Route("/", page),
        Route("/playground/api/catalog", list_catalog),
        Route("/playground/api/chains/{id}/trace", trace, methods=["POST"]),
        Route("/playground/api/flows/{id}", flow_handler(ctx)),
        Route("/playground/api/flows/{id}/sessions/{sid}", session_handler(ctx)),
        Route("/playground/api/agents/{id}/runs", runs_handler(ctx, "agent")),
        Route("/playground/api/chains/{id}/runs", runs_handler(ctx, "chain")),
        Route("/playground/api/agents/{id}/runs/{run_id}/cassette", cassette_handler(ctx, "agent")),
        Route("/playground/api/chains/{id}/runs/{run_id}/cassette", cassette_handler(ctx, "chain")),
        Route("/playground/{file}", asset),
    ]
