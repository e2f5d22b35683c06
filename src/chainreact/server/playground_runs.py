"""Past runs of an agent or a rule chain for the playground, from the state store of the runs API.

    GET /playground/api/agents/{id}/runs   {"items": [{"id", "status", "session", "created_at",
    GET /playground/api/chains/{id}/runs                   "updated_at", "answer"}]}
    GET /playground/api/{agents|chains}/{id}/runs/{run_id}/cassette
        the run as a cassette ("export as test": `chainreact replay` it offline; chainreact.replay)

The runs API (runs_routes.py) keeps runs in the server's store (`--state`, else a private in-memory
store) but lists none; this lists a target's most recent ones (at most MAX_RUNS, newest first), read from
the store's run list and each run's view. Their events are `GET /api/v1/runs/{run_id}/events` (a chain
run's include its nodes' IN/OUT and its agent nodes' model calls: chain_trace.py).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .context import ServerContext
from .owners import run_key

MAX_RUNS = 20
# Runs of every agent and chain (and flows' sessions) share the store's run list: look this far back.
SCAN_RUNS = 500
ANSWER_CHARS = 120
_NAMES = {"agent": "agent", "chain": "rule chain"}


def runs_handler(ctx: ServerContext, kind: str = "agent") -> Any:
    """The handler listing the runs of a catalog entry of `kind` (agent or chain)."""
    @ctx.guard("read", "id")
    async def target_runs(request: Request) -> Response:
        ident = request.path_params["id"]
        entry = ctx.catalog.entries.get(ident)
        if entry is None or entry.kind != kind:
            return JSONResponse({"error": {"message": f"no {_NAMES[kind]} with id {ident!r}",
                                           "code": "not_found"}}, status_code=404)
        registry = ctx.runs
        store = ctx.store
        if registry is None or store is None:
            return JSONResponse({"items": []})
        items: list[dict[str, Any]] = []
        for rec in await store.runs(limit=SCAN_RUNS):
            if rec.run_id.startswith(("flow:", "flowmem:")):
                continue
            view = await registry.view(rec.run_id)
            if view is None or view.get("kind") != kind or view.get("target") != ident:
                continue
            if await ctx.owners.check(request, run_key(view), "", write=False):
                continue  # a run in another user's session
            answer = (view.get("result") or {}).get("content") or view.get("error") or ""
            items.append({"id": view["id"], "status": view["status"], "session": view.get("session"),
                          "created_at": view.get("created_at"), "updated_at": view.get("updated_at"),
                          "answer": answer[:ANSWER_CHARS]})
            if len(items) >= MAX_RUNS:
                break
        return JSONResponse({"items": items})

    return target_runs


def cassette_handler(ctx: ServerContext, kind: str = "agent") -> Any:
    """The handler answering a past run of a catalog entry as a cassette file (a download)."""
    @ctx.guard("read", "id")
    async def cassette(request: Request) -> Response:
        from ..replay import export_run
        from ..state import StateError

        ident, run_id = request.path_params["id"], request.path_params["run_id"]
        store = ctx.store
        view = await ctx.runs.view(run_id) if ctx.runs is not None and store is not None else None
        if store is None or view is None or view.get("kind") != kind or view.get("target") != ident:
            return JSONResponse({"error": {"message": f"no run {run_id!r} of the {_NAMES[kind]} {ident!r}",
                                           "code": "not_found"}}, status_code=404)
        if refused := await ctx.owners.check(request, run_key(view), f"{view['session']}", write=False):
            return refused.plain()
        try:
            data = await export_run(store, run_id)
        except StateError as e:
            return JSONResponse({"error": {"message": str(e), "code": "not_recorded"}}, status_code=409)
        name = f"{ident}-{run_id}.cassette.json"
        return JSONResponse(data, headers={"Content-Disposition": f'attachment; filename="{name}"'})

    return cassette
