"""What the playground's flow view draws: a flow's nodes and transitions, and where its sessions stand.

    GET /playground/api/flows/{id}   {"id", "name", "description", "start", "nodes", "transitions",
                                      "sessions"}

`nodes`: name, type, and a one-line summary (a message node's text, an agent node's user message, a chain
node's chain). `transitions`: one per way a node moves on (`from`, `to` (null = the flow ends), `label`:
"next" for a node's own transition, else the outcome's condition). `sessions`: the flow's most recently
active sessions in the server's store (at most MAX_SESSIONS), each with the node its next message goes to.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .context import ServerContext
from .flows_runtime import FlowRuntime

MAX_SESSIONS = 50
# Runs of every kind share the store's run list: look this far back for the flow's sessions.
SCAN_RUNS = 1000


def _summary(node: Any) -> str:
    for field in ("message", "userMessage", "chainId", "chainFile"):
        value = getattr(node, field, None)
        if isinstance(value, str) and value:
            return value
    return ""


def describe(flow: Any) -> dict[str, Any]:
    d = flow.definition
    nodes = [{"name": n.name, "type": n.type, "start": n is d.start_node, "summary": _summary(n)}
             for n in d.nodes]
    transitions: list[dict[str, Any]] = []
    for n in d.nodes:
        t = n.transition
        if t is not None and (t.end or t.targetId):
            transitions.append({"from": n.name, "to": None if t.end else t.targetId, "label": "next"})
        for outcome in getattr(n, "agentOutcomes", None) or []:
            ot = outcome.transition
            if ot is not None and (ot.end or ot.targetId):
                transitions.append({"from": n.name, "to": None if ot.end else ot.targetId,
                                    "label": outcome.condition})
    return {"id": flow.id, "name": d.name, "description": d.description, "start": d.start_node.name,
            "nodes": nodes, "transitions": transitions}


async def sessions(flow: Any, store: Any) -> list[dict[str, Any]]:
    prefix = flow.session_key("")
    out: list[dict[str, Any]] = []
    for rec in await store.runs(limit=SCAN_RUNS):
        if not rec.run_id.startswith(prefix):
            continue
        full = await store.get_run(rec.run_id)
        snap = full.snapshot if full is not None and isinstance(full.snapshot, dict) else {}
        ended = bool(snap.get("ended"))
        out.append({"session": rec.run_id[len(prefix):], "updated_at": rec.updated_at, "ended": ended,
                    # as GET /api/v1/flows/{id}/sessions/{sid}: an ended session starts again at the start
                    "node": snap.get("node") if snap and not ended else flow.definition.start_node.name})
        if len(out) >= MAX_SESSIONS:
            break
    return out


def flow_handler(ctx: ServerContext) -> Any:
    runtime = FlowRuntime.of(ctx)

    @ctx.guard("read", "id")
    async def flow_view(request: Request) -> Response:
        ident = request.path_params["id"]
        flow = await runtime.flow(ident)
        if flow is None:
            why = f"no flow with id {ident!r}; GET /api/v1/flows lists them"
            return JSONResponse({"error": {"message": why, "code": "not_found"}}, status_code=404)
        return JSONResponse({**describe(flow), "sessions": await sessions(flow, await runtime.store())})

    return flow_view
