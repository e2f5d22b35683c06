"""What the playground's flow view draws: a flow's nodes and transitions, and where its sessions stand.

    GET /playground/api/flows/{id}   {"id", "name", "description", "start", "nodes", "transitions",
                                      "collaborators", "sessions"}

`nodes`: name, type, and a one-line summary (a message node's text, an agent node's user message, a chain
node's chain). `transitions`: one per way a node moves on (`from`, `to` (null = the flow ends), `label`:
"next" for a node's own transition, else the outcome's condition). `collaborators`: one per collaborator
an agent node may delegate to (`from`: the node; `node`: a node of the flow, or `file`: an agent document;
`name`: the tool the node calls; `description`). `sessions`: the flow's most recently active sessions in
the server's store (at most MAX_SESSIONS; chainreact.flows.list_sessions), each with the node its next
message goes to, when its last turn was saved and how many messages its agent nodes keep; with logins,
only those the caller may read (server/owners.py: its user's, no one's; all for an admin key).

    GET /playground/api/flows/{id}/sessions/{sid}   {"flow", "session", "node", "ended", "updated_at",
                                                     "user", "memory": [{"key", "messages"}],
                                                     "messages": [{"role", "content", "text", "key"}]}

One session: its last turn's `user` and its conversation so far: the last MAX_MESSAGES messages its agent
nodes keep (each turn's user message and answer), under the session's key and under each node's own
`memoryId` rendered for the session (chainreact.flows.memory_keys: `memory` lists them with their sizes;
message nodes' texts are not kept). 404 when the store has no such session, or it is another user's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .context import ServerContext

if TYPE_CHECKING:
    from ..flows import Flow
    from ..state.base import Store
    from .flows_runtime import DurableServedFlow

MAX_SESSIONS = 50
MAX_MESSAGES = 200  # of a session's conversation, the last ones


def _summary(node: Any) -> str:
    for field in ("message", "userMessage", "chainId", "chainFile"):
        value = getattr(node, field, None)
        if isinstance(value, str) and value:
            return value
    return ""


def describe(flow: Flow | DurableServedFlow) -> dict[str, Any]:
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
            "nodes": nodes, "transitions": transitions, "collaborators": collaborators(d)}


def collaborators(d: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in d.nodes:
        team = getattr(n, "multiAgentCollaboration", None)
        if team is None or not team.enabled:
            continue
        for c in team.collaborators:
            name = c.name or c.node or (c.agentFile or "").rsplit("/", 1)[-1].rsplit(".", 1)[0]
            out.append({"from": n.name, "node": c.node, "file": c.agentFile, "name": name,
                        "description": c.description})
    return out


async def sessions(flow: Flow | DurableServedFlow, store: Store) -> list[dict[str, Any]]:
    from ..flows import list_sessions

    found = await list_sessions(store, flow.id, flow.definition.start_node.name, limit=MAX_SESSIONS,
                                definition=flow.definition)
    return [s.to_dict() for s in found]


def shown(message: Any, key: str) -> dict[str, Any]:
    """A message of a session's conversation as the page shows it: `text` is an answer's text field
    (response, answer, ...) when the agent answered with a JSON object (a structured output), else the
    content as it is."""
    from ..flows.node_steps import TEXT_FIELDS

    content = message.text
    text = content
    if message.role == "assistant" and content.lstrip().startswith("{"):
        try:
            value = orjson.loads(content)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            text = next((value[k] for k in TEXT_FIELDS if isinstance(value.get(k), str)), content)
    return {"role": message.role, "content": content, "text": text, "key": key}


def session_handler(ctx: ServerContext) -> Any:
    runtime = ctx.flows

    @ctx.guard("read", "id")
    async def flow_session(request: Request) -> Response:
        ident, sid = request.path_params["id"], request.path_params["sid"]
        flow = await runtime.flow(ident)
        if flow is None:
            why = f"no flow with id {ident!r}; GET /api/v1/flows lists them"
            return JSONResponse({"error": {"message": why, "code": "not_found"}}, status_code=404)
        store = await runtime.store()
        key = flow.session_key(sid)
        if refused := await ctx.owners.check(request, key, sid, write=False):
            return refused.plain()
        rec = await store.get_run(key)
        if rec is None:
            why = f"flow {ident!r} has no session {sid!r}; GET /playground/api/flows/{ident} lists them"
            return JSONResponse({"error": {"message": why, "code": "not_found"}}, status_code=404)
        from ..flows import memory_keys

        snap = rec.snapshot if isinstance(rec.snapshot, dict) else {}
        ended = bool(snap.get("ended"))
        memory, messages = [], []
        for where in memory_keys(flow.definition, key, sid, snap):
            info = await store.session_info(where)
            memory.append({"key": where, "messages": info.messages if info is not None else 0})
            messages += [shown(m, where) for m in await store.history(where, last=MAX_MESSAGES)]
        return JSONResponse({"flow": flow.id, "session": sid, "ended": ended, "updated_at": rec.updated_at,
                             "node": flow.definition.start_node.name if ended else snap.get("node"),
                             "user": snap.get("user") or {}, "memory": memory,
                             "messages": messages[-MAX_MESSAGES:]})

    return flow_session


def flow_handler(ctx: ServerContext) -> Any:
    runtime = ctx.flows

    @ctx.guard("read", "id")
    async def flow_view(request: Request) -> Response:
        ident = request.path_params["id"]
        flow = await runtime.flow(ident)
        if flow is None:
            why = f"no flow with id {ident!r}; GET /api/v1/flows lists them"
            return JSONResponse({"error": {"message": why, "code": "not_found"}}, status_code=404)
        found = await sessions(flow, await runtime.store())
        # Only the sessions this caller may read: its user's and no one's (all for an admin key).
        shown = await ctx.owners.visible(request, [flow.session_key(s["session"]) for s in found])
        found = [s for s in found if flow.session_key(s["session"]) in shown]
        return JSONResponse({**describe(flow), "sessions": found})

    return flow_view
