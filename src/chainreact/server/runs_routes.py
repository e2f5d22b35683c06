"""The runs API: agent runs started, followed over SSE (resumable with Last-Event-ID), cancelled, resumed.

    POST /api/v1/agents/{id}/runs       start: body {input | messages, session?, stream?, detached?}
    POST /api/v1/rules/{id}/runs        a rule chain run (runs_chains.py): body {input | messages, session?,
                                        stream?, detached?}; cancel is immediate, no resume
    GET  /api/v1/runs/{run_id}          status, result, error, the questions of an interrupted run
    GET  /api/v1/runs/{run_id}/events   SSE of the run's stored events (`id:` lines; Last-Event-ID)
    POST /api/v1/runs/{run_id}/cancel   body {mode?: immediate | after_model | after_tools (| combined),
                                        timeout?: seconds before a safe-point cancel turns immediate}
    POST /api/v1/runs/{run_id}/resume   body {answers: {question id: answer}, stream?, detached?}

Options read from `ctx.config`: `state` (a store URL; None: a private in-memory SQLite store, whose
stopped runs are pruned, and there are no sessions), `runs_ttl` and `runs_max` (that pruning: seconds a
stopped run is kept, and how many at most; runs_registry.Pruning), `grace` (seconds in-flight runs get
at shutdown) and `temporal` (an address: agent runs go to Temporal workers, server/durable_dispatch.py).
This module sets `ctx.runs` (the RunRegistry: the chat routes run agents through it) and, with `temporal`,
`ctx.dispatch`.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .chat_messages import message_problem
from .context import ServerContext
from .owners import chain_key, run_key
from .runs_registry import (
    FINAL_STATUSES,
    RUN_ID,
    LiveRun,
    Pruning,
    RegistryClosed,
    RunRegistry,
    agent_session,
)
from .sessions import (
    MAX_KEY,
    chain_session_metadata,
    session_input,
    unavailable,
    until_end_or_disconnect,
    wire_chain_sessions,
)
from .sse import SSE_HEADERS, sse

MEMORY_STORE = "sqlite:///:memory:"
_EVENT_ID = re.compile(r"[0-9]{1,18}\Z")


def _err(status: int, message: str, code: str) -> Response:
    return JSONResponse({"error": {"message": message, "code": code}}, status_code=status)


def _json_body(raw: bytes) -> dict[str, Any] | Response:
    if not raw.strip():
        return {}
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        return _err(400, f"the request body is not valid JSON: {e}", "invalid_json")
    if not isinstance(body, dict):
        return _err(400, "the request body must be a JSON object", "invalid_body")
    return body


def _flags(body: dict[str, Any]) -> tuple[bool, bool] | Response:
    for name in ("stream", "detached"):
        if name in body and not isinstance(body[name], bool):
            return _err(400, f"'{name}' must be true or false", "invalid_body")
    return bool(body.get("stream")), bool(body.get("detached"))


def _messages(body: dict[str, Any]) -> list[dict[str, Any]] | Response:
    """The new messages of a start request: `messages` as given, or `input` as one user message."""
    if "messages" in body:
        msgs = body["messages"]
        bad = message_problem(msgs)
        if bad is not None:
            return _err(400, bad[1], "invalid_messages")
        return [{**m, "role": "system"} if m.get("role") == "developer" else m for m in msgs]
    if "input" not in body:
        return _err(400, "give 'input' (text or JSON) or 'messages' (OpenAI chat messages)", "invalid_body")
    value = body["input"]
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return [{"role": "user", "content": text}]


def _allowed(request: Request, permission: str, target: str | None) -> bool:
    key = getattr(request.state, "key", None)
    return key is None or key.allows(permission, target)


_Start = tuple[tuple[bool, bool], list[dict[str, Any]], str | None]


def _start_request(raw: bytes, sessions: bool) -> _Start | Response:
    """A start request's (stream, detached) flags, its new messages and its session (`sessions`: whether
    the server keeps them), or the 400 to answer."""
    body = _json_body(raw)
    if isinstance(body, Response):
        return body
    flags = _flags(body)
    if isinstance(flags, Response):
        return flags
    msgs = _messages(body)
    if isinstance(msgs, Response):
        return msgs
    session = body.get("session")
    if session is not None and (not isinstance(session, str) or not session or len(session) > MAX_KEY
                                or not session.isprintable()):
        return _err(400, f"'session' must be printable text of 1 to {MAX_KEY} characters", "invalid_body")
    if session is not None and not sessions:
        return _err(400, "sessions need a state store: start the server with --state URL",
                    "sessions_disabled")
    return flags, msgs, session


def routes(ctx: ServerContext) -> list[Route]:
    catalog = ctx.catalog
    config = ctx.config
    url = config.state
    prune = None if url else Pruning(float(config.runs_ttl or Pruning.ttl),
                                     int(Pruning.max_runs if config.runs_max is None else config.runs_max))
    registry = RunRegistry(grace=float(config.grace), sessions=bool(url), persist_chats=bool(url),
                           prune=prune)
    ctx.runs = registry
    if config.temporal:  # `serve --temporal`: agent runs go to Temporal workers
        from .durable_dispatch import install

        ctx.dispatch = install(config, catalog, registry, ctx.spawn)
        if ctx.dispatch is not None:
            ctx.on_startup.append(ctx.dispatch.connect)

    async def open_store() -> None:
        from ..state import open_store

        registry.store = await open_store(url or MEMORY_STORE)
        wire_chain_sessions(registry, catalog.engine)
        if registry.prune is not None:
            ctx.spawn(registry.prune_forever())

    async def close() -> None:
        await registry.shutdown()
        if registry.store is not None:
            await registry.store.close()

    ctx.on_startup.append(open_store)
    ctx.on_shutdown.append(close)

    async def stream_run(live: LiveRun, after: int = 0) -> AsyncIterator[bytes]:
        # The client attached to this stream owns the run unless it is detached: leaving cancels it.
        try:
            async for ev in registry.follow(live.run_id, after):
                yield sse(ev.data, event=ev.type, id=ev.id)
            yield await end_frame(live.run_id)
        finally:
            await registry.release(live)

    async def end_frame(run_id: str) -> bytes:
        view = await registry.view(run_id)
        status = view["status"] if view else "unknown"
        return sse({"id": run_id, "status": status}, event="end")

    async def answer(request: Request, live: LiveRun, stream: bool, detached: bool) -> Response:
        headers = {"X-Run-Id": live.run_id}
        if stream:
            return StreamingResponse(stream_run(live), media_type="text/event-stream",
                                     headers={**SSE_HEADERS, **headers})
        if detached:
            return JSONResponse({"id": live.run_id, "object": "run", "status": "running",
                                 "agent": live.target, "events": f"/api/v1/runs/{live.run_id}/events"},
                                status_code=202,
                                headers={**headers, "Location": f"/api/v1/runs/{live.run_id}"})
        # Synchronous: wait for the end, or for the client to go away (then the run is cancelled).
        if not await until_end_or_disconnect(request, registry, live, live.ended.wait()):
            return Response(status_code=499)
        return JSONResponse(await registry.view(live.run_id), headers=headers)

    @ctx.guard("execute", "id")
    async def start(request: Request) -> Response:
        ident = request.path_params["id"]
        entry = catalog.entries.get(ident)
        if entry is None or entry.kind != "agent":
            return _err(404, f"no agent with id {ident!r}; GET /v1/models lists what is served", "not_found")
        parsed = _start_request(request.state.body, registry.sessions)
        if isinstance(parsed, Response):
            return parsed
        flags, msgs, session = parsed
        shown, session = session, agent_session(ident, session)
        if refused := await ctx.owners.check(request, session, f"{shown}", write=True):
            return refused.plain()
        data = await session_input(registry, session, msgs)
        try:
            live = registry.start_agent(entry.agent, ident, data, session=session, detached=flags[1])
        except RegistryClosed:
            return unavailable()
        return await answer(request, live, *flags)

    @ctx.guard("execute", "id")
    async def start_chain(request: Request) -> Response:
        ident = request.path_params["id"]
        entry = catalog.entries.get(ident)
        if entry is None or entry.kind != "chain" or catalog.engine is None:
            return _err(404, f"no rule chain with id {ident!r}; GET /api/v1/rules lists them", "not_found")
        parsed = _start_request(request.state.body, registry.sessions)
        if isinstance(parsed, Response):
            return parsed
        flags, msgs, session = parsed
        if session is not None and registry.dispatcher is not None \
                and registry.dispatcher.serves("chain", ident):
            return _err(400, "durable chain runs (serve --temporal) keep no sessions", "sessions_disabled")
        meta: dict[str, str] = {}
        if session is not None:
            if refused := await ctx.owners.check(request, chain_key(ident, session), session, write=True):
                return refused.plain()
            wire_chain_sessions(registry, catalog.engine)
            meta = chain_session_metadata(session)
        try:
            live = registry.start_chain(catalog.engine, ident, {"model": ident, "messages": msgs},
                                        detached=flags[1], session=session, metadata=meta)
        except RegistryClosed:
            return unavailable()
        return await answer(request, live, *flags)

    async def find(request: Request, permission: str) -> dict[str, Any] | Response:
        run_id = request.path_params["run_id"]
        if not RUN_ID.match(run_id):
            return _err(400, "a run id is 1 to 64 letters, digits, '-' or '_'", "invalid_run_id")
        view = await registry.view(run_id)
        if view is None:
            return _err(404, f"no run {run_id!r}", "not_found")
        if not _allowed(request, permission, view["target"]):
            return _err(403, f"this API key lacks the {permission!r} permission on {view['target']!r}",
                        "permission_denied")
        # A run in another user's session is not found (an admin key may read it).
        if refused := await ctx.owners.check(request, run_key(view), f"{view['session']}",
                                             write=permission != "read"):
            return refused.plain()
        return view

    @ctx.guard("read")
    async def get_run(request: Request) -> Response:
        view = await find(request, "read")
        return view if isinstance(view, Response) else JSONResponse(view)

    @ctx.guard("read")
    async def events(request: Request) -> Response:
        view = await find(request, "read")
        if isinstance(view, Response):
            return view
        raw = request.headers.get("last-event-id", request.query_params.get("after", "0")).strip() or "0"
        if not _EVENT_ID.match(raw):  # ASCII digits only: str.isdigit() also takes '²', which int() refuses
            return _err(400, f"Last-Event-ID (or ?after=) must be a non-negative event id, got {raw[:40]!r}",
                        "invalid_event_id")

        async def gen() -> AsyncIterator[bytes]:
            # A watcher, not the run's owner: leaving does not cancel the run.
            async for ev in registry.follow(view["id"], int(raw)):
                yield sse(ev.data, event=ev.type, id=ev.id)
            yield await end_frame(view["id"])

        return StreamingResponse(gen(), media_type="text/event-stream", headers=SSE_HEADERS)

    @ctx.guard("execute")
    async def cancel(request: Request) -> Response:
        view = await find(request, "execute")
        if isinstance(view, Response):
            return view
        body = _json_body(request.state.body)
        if isinstance(body, Response):
            return body
        mode, timeout = body.get("mode", "immediate"), body.get("timeout")
        if not isinstance(mode, str):
            return _err(400, "'mode' must be immediate, after_model or after_tools (or combined with |)",
                        "invalid_mode")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                    or not math.isfinite(timeout) or timeout < 0):
            return _err(400, "'timeout' must be a non-negative number of seconds", "invalid_body")
        if view["kind"] == "chain" and mode != "immediate" and (view["live"] or view.get("durable")):
            return _err(400, "a chain run has no safe points: it cancels immediately only", "invalid_mode")
        if view.get("durable") and view["status"] in ("running", "interrupted"):
            return await cancel_durable(view, mode, timeout)
        if not view["live"]:
            return _err(409, f"run {view['id']!r} is not running in this server (status {view['status']})",
                        "not_running")
        try:
            live = registry.cancel(view["id"], mode, timeout)
        except ValueError as e:
            return _err(400, str(e), "invalid_mode")
        if live is None:  # ended meanwhile
            return _err(409, f"run {view['id']!r} already ended", "not_running")
        return JSONResponse({"id": view["id"], "status": "cancelling", "mode": mode}, status_code=202)

    async def cancel_durable(view: dict[str, Any], mode: str, timeout: float | None) -> Response:
        # A durable run: its workflow gets the cancel before the answer, also when no one here follows the
        # run (started by another server, or before a restart).
        assert registry.dispatcher is not None
        try:
            await registry.dispatcher.cancel(view["id"], mode, timeout)
        except ValueError as e:
            return _err(400, str(e), "invalid_mode")
        return JSONResponse({"id": view["id"], "status": "cancelling", "mode": mode}, status_code=202)

    @ctx.guard("execute")
    async def resume(request: Request) -> Response:
        from ..state import RunConflictError, RunNotFoundError, StateError

        view = await find(request, "execute")
        if isinstance(view, Response):
            return view
        body = _json_body(request.state.body)
        if isinstance(body, Response):
            return body
        flags = _flags(body)
        if isinstance(flags, Response):
            return flags
        answers = body.get("answers", {})
        if not isinstance(answers, dict):
            return _err(400, "'answers' must be an object keyed by question id", "invalid_answers")
        if view["status"] in FINAL_STATUSES or view["live"]:
            return _err(409, f"run {view['id']!r} is {'running' if view['live'] else view['status']}: only "
                             "an interrupted run can be resumed", "not_resumable")
        entry = catalog.entries.get(view["agent"] or "")
        if entry is None or entry.kind != "agent":
            return _err(409, f"run {view['id']!r} belongs to {view['kind']} {view['target']!r}, which this "
                             "server does not serve as an agent", "agent_not_served")
        try:
            live = await registry.resume_agent(entry.agent, entry.id, view["id"], answers, detached=flags[1])
        except RegistryClosed:
            return unavailable()
        except RunNotFoundError as e:
            return _err(404, str(e), "not_found")
        except RunConflictError as e:
            return _err(409, str(e), "conflict")
        except StateError as e:  # refused answers: nothing was changed
            return _err(400, str(e), "invalid_answers")
        return await answer(request, live, *flags)

    return [
        Route("/api/v1/agents/{id}/runs", start, methods=["POST"]),
        Route("/api/v1/rules/{id}/runs", start_chain, methods=["POST"]),
        Route("/api/v1/runs/{run_id}", get_run, methods=["GET"]),
        Route("/api/v1/runs/{run_id}/events", events, methods=["GET"]),
        Route("/api/v1/runs/{run_id}/cancel", cancel, methods=["POST"]),
        Route("/api/v1/runs/{run_id}/resume", resume, methods=["POST"]),
    ]

