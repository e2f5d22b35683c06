"""The A2A face: every served agent, chain and flow is an A2A agent (protocol 1.0, JSON-RPC binding).

    GET  /a2a/{id}/.well-known/agent-card.json    its agent card (skills from its description and tools)
    POST /a2a/{id}                                JSON-RPC 2.0: SendMessage, SendStreamingMessage (SSE),
                                                  GetTask, CancelTask, SubscribeToTask (SSE)

A task is a chainreact run of the runs API (its record and event log; `GET /api/v1/runs/{task id}` shows it
too): an agent run, a chain run, or a flow turn (runs_flows.py). contextId is the session (an agent's and
a chain's conversation with --state, a flow's session always; a new one when the message names none).
An agent that stops to ask is a task in `TASK_STATE_INPUT_REQUIRED` (the questions in its status
message); the next message naming the task (`taskId`) answers them and the run goes on. Streaming sends
the Task, a WORKING status update, the answer as artifact updates as it is written, then the final status
update. Shapes: a2a_tasks.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import secrets
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .a2a_tasks import (
    FINAL_STATES,
    A2AError,
    answer_artifact,
    invalid_params,
    message_answers,
    message_of,
    message_text,
    not_cancelable,
    rpc_error,
    rpc_result,
    status_of,
    task_not_found,
    task_of,
    unsupported,
)
from .catalog import Entry
from .context import ServerContext
from .login import flow_user
from .owners import run_key, session_of
from .runs_flows import FlowRun
from .runs_registry import RUN_ID, LiveRun, RegistryClosed, RunRegistry, agent_session
from .sessions import chain_session_metadata, session_input, until_end_or_disconnect, wire_chain_sessions
from .sse import SSE_HEADERS, sse

PROTOCOL = "1.0"
STREAMING = ("SendStreamingMessage", "SubscribeToTask")
NOT_OFFERED = ("ListTasks", "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
               "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard")


def routes(ctx: ServerContext) -> list[Route]:
    catalog = ctx.catalog

    @ctx.guard("read", "id")
    async def card(request: Request) -> Response:
        entry = catalog.entries.get(request.path_params["id"])
        if entry is None:
            what = f"no agent, chain or flow {request.path_params['id']!r}"
            return JSONResponse({"error": {"message": what, "code": "not_found"}}, status_code=404)
        return JSONResponse(await agent_card(ctx, entry, str(request.base_url).rstrip("/")))

    @ctx.guard("execute", "id")
    async def rpc(request: Request) -> Response:
        entry = catalog.entries.get(request.path_params["id"])
        try:
            body = orjson.loads(request.state.body or b"")
        except orjson.JSONDecodeError as e:
            return JSONResponse(rpc_error(None, A2AError(-32700, f"the body is not JSON: {e}")))
        rid = body.get("id") if isinstance(body, dict) else None
        if isinstance(rid, bool) or not isinstance(rid, str | int | None):
            rid = None
        try:
            if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" \
                    or not isinstance(body.get("method"), str):
                raise A2AError(-32600, "a JSON-RPC 2.0 request object {jsonrpc: '2.0', id, method, params}")
            if entry is None:
                raise A2AError(-32601, f"no agent, chain or flow {request.path_params['id']!r} is served "
                                       "here")
            version = request.headers.get("a2a-version", PROTOCOL)
            if version.split(".")[0] != PROTOCOL.split(".")[0]:
                raise A2AError(-32009, f"A2A version {version!r} is not supported: this server speaks "
                                       f"{PROTOCOL}")
            registry = ctx.runs
            assert registry is not None  # runs_routes makes it for every app
            method, params = body["method"], body.get("params") or {}
            if method in STREAMING:
                events = await (stream_send(request, registry, entry, params) if method == STREAMING[0]
                                else subscribe(request, registry, entry, params))
                return StreamingResponse(_sse(rid, events), media_type="text/event-stream",
                                         headers=SSE_HEADERS)
            if method == "SendMessage":
                result = await send(request, registry, entry, params)
            elif method == "GetTask":
                result = await get_task(request, registry, entry, params)
            elif method == "CancelTask":
                result = await cancel_task(request, registry, entry, params)
            elif method in NOT_OFFERED:
                raise A2AError(-32003 if "Push" in method else -32004,
                               f"{method} is not offered by this server")
            else:
                raise A2AError(-32601, f"unknown method {method!r}")
        except A2AError as e:
            return JSONResponse(rpc_error(rid, e))
        if isinstance(result, Response):
            return result
        return JSONResponse(rpc_result(rid, result))

    # ------------------------------------------------------------------ sending

    async def start(request: Request, registry: RunRegistry, entry: Entry, params: dict[str, Any],
                    detached: bool) -> LiveRun:
        """The run a SendMessage starts, or the interrupted run its message answers, going on."""
        msg = message_of(params)
        if msg.get("taskId"):
            return await answer(request, registry, entry, msg, detached)
        text = message_text(msg)
        context = msg.get("contextId") or "ctx-" + secrets.token_hex(8)
        # The context is a session where one is kept: a flow's always, an agent's or a chain's with --state.
        kept = entry.kind == "flow" or (registry.sessions and not ctx.durable("chain", entry.id))
        owned = session_of(entry.kind, entry.id, context) if kept else None
        if refused := await ctx.owners.check(request, owned, context, write=True):
            raise invalid_params(refused.message)
        try:
            if entry.kind == "agent":
                key = agent_session(entry.id, context)
                data = await session_input(registry, key, [{"role": "user", "content": text}])
                return registry.start_agent(entry.agent, entry.id, data, session=key, detached=detached)
            if entry.kind == "chain":
                durable = ctx.durable("chain", entry.id)
                meta: dict[str, str] = {}
                if registry.sessions and durable is None:
                    wire_chain_sessions(registry, catalog.engine)
                    meta = chain_session_metadata(context)
                return registry.start_chain(catalog.chains, entry.id, {"model": entry.id, "messages": [
                    {"role": "user", "content": text}]}, detached=detached, session=context, metadata=meta)
            if registry.closing:
                raise RegistryClosed
            flow = await ctx.flows.served(entry.id)
            handle = FlowRun(flow, context, text, flow_user(ctx, request, flow, None))
            live = LiveRun(handle.run_id, entry.id, context, detached, True, handle, kind="flow")
            return registry.launch(live, functools.partial(registry.save_chain_end, live))
        except RegistryClosed:
            raise A2AError(-32603, "the server is shutting down: send the message again later") from None

    async def answer(request: Request, registry: RunRegistry, entry: Entry, msg: dict[str, Any],
                     detached: bool) -> LiveRun:
        from ..state import RunConflictError, RunNotFoundError, StateError

        view = await find(request, registry, entry, msg["taskId"], write=True)
        if msg.get("contextId") and msg["contextId"] != task_of(view)["contextId"]:
            raise invalid_params(f"contextId {msg['contextId']!r} is not the context of task {view['id']!r}")
        if view["live"]:
            raise unsupported(f"task {view['id']} is still working: wait for it, or cancel it")
        if view["status"] != "interrupted":
            raise unsupported(f"task {view['id']} is in a final state ({status_of(view, '')['state']}): "
                              "send a new message without taskId")
        answers = message_answers(msg, view["questions"])
        try:
            return await registry.resume_agent(entry.agent, entry.id, view["id"], answers, detached=detached)
        except RegistryClosed:
            raise A2AError(-32603, "the server is shutting down: send the message again later") from None
        except (RunNotFoundError, RunConflictError) as e:
            raise unsupported(str(e)) from None
        except StateError as e:  # refused answers: nothing changed, the task still waits
            raise invalid_params(f"the answer does not fit the question: {e}") from None

    async def send(request: Request, registry: RunRegistry, entry: Entry, params: dict[str, Any]) -> Any:
        config = params.get("configuration") or {}
        at_once = bool(config.get("returnImmediately"))
        live = await start(request, registry, entry, params, detached=at_once)
        if not at_once and not await until_end_or_disconnect(request, registry, live, live.ended.wait()):
            return Response(status_code=499)
        return {"task": await task_view(registry, live.run_id, config.get("historyLength"))}

    async def stream_send(request: Request, registry: RunRegistry, entry: Entry, params: dict[str, Any]
                          ) -> AsyncIterator[dict[str, Any]]:
        live = await start(request, registry, entry, params, detached=False)
        return _follow(registry, live, live.last_id, own=True)

    async def subscribe(request: Request, registry: RunRegistry, entry: Entry, params: Any
                        ) -> AsyncIterator[dict[str, Any]]:
        view = await find(request, registry, entry, params.get("id") if isinstance(params, dict) else None)
        live = registry.live.get(view["id"])
        if live is None:
            raise unsupported(f"task {view['id']} is not working here ({status_of(view, '')['state']}): "
                              "GetTask shows it")
        return _follow(registry, live, 0, own=False)

    async def _follow(registry: RunRegistry, live: LiveRun, after: int, own: bool
                      ) -> AsyncIterator[dict[str, Any]]:
        """The task, then its status and artifact updates from the run's event log, then its last status. A
        client that leaves a stream it started cancels the run."""
        tid = live.run_id
        try:
            task = await task_view(registry, tid)
            ctx_id = task["contextId"]
            yield {"task": task}
            yield {"statusUpdate": {"taskId": tid, "contextId": ctx_id, "status": {
                "state": "TASK_STATE_WORKING", "timestamp": task["status"]["timestamp"]}}}
            sent = False
            async for ev in registry.follow(tid, after):
                data = ev.data if isinstance(ev.data, dict) else {}
                if ev.type == "text_delta" and len(data.get("path") or ()) <= 1 and data.get("text"):
                    yield {"artifactUpdate": {"taskId": tid, "contextId": ctx_id, "append": sent,
                                              "artifact": answer_artifact(tid, str(data["text"]))}}
                    sent = True
            await live.ended.wait()
            final = await task_view(registry, tid)
            if final["status"]["state"] == "TASK_STATE_COMPLETED":
                text = "" if sent else final["artifacts"][0]["parts"][0]["text"]
                yield {"artifactUpdate": {"taskId": tid, "contextId": ctx_id, "append": sent,
                                          "lastChunk": True, "artifact": answer_artifact(tid, text)}}
            yield {"statusUpdate": {"taskId": tid, "contextId": ctx_id, "status": final["status"]}}
        finally:
            if own:
                await registry.release(live)

    # ------------------------------------------------------------------ tasks

    async def find(request: Request, registry: RunRegistry, entry: Entry, task_id: Any, write: bool = False
                   ) -> dict[str, Any]:
        if not isinstance(task_id, str) or not RUN_ID.match(task_id):
            raise task_not_found(str(task_id))
        view = await registry.view(task_id)
        if view is None or view["target"] != entry.id:
            raise task_not_found(task_id)
        if await ctx.owners.check(request, run_key(view), task_id, write=write):
            raise task_not_found(task_id)  # a task in another user's context
        return view

    async def task_view(registry: RunRegistry, task_id: str, history_length: Any = None) -> dict[str, Any]:
        view = await registry.view(task_id)
        if view is None:
            raise task_not_found(task_id)
        rec = await registry.store.get_run(task_id) if registry.store is not None else None
        length = history_length if isinstance(history_length, int) and not isinstance(history_length, bool) \
            else None
        return task_of(view, rec.snapshot if rec is not None else None, length)

    async def get_task(request: Request, registry: RunRegistry, entry: Entry, params: Any) -> dict[str, Any]:
        view = await find(request, registry, entry, params.get("id") if isinstance(params, dict) else None)
        return await task_view(registry, view["id"], params.get("historyLength"))

    async def cancel_task(request: Request, registry: RunRegistry, entry: Entry,
                          params: Any) -> dict[str, Any]:
        view = await find(request, registry, entry, params.get("id") if isinstance(params, dict) else None,
                          write=True)
        if status_of(view, "")["state"] in FINAL_STATES:
            raise not_cancelable(f"task {view['id']} is in a final state ({status_of(view, '')['state']})")
        live = registry.live.get(view["id"])
        if live is not None:
            live.handle.cancel("immediate")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(live.ended.wait()), 30)
        elif view.get("durable") and registry.dispatcher is not None:
            await registry.dispatcher.cancel(view["id"], "immediate", None)
        elif view["status"] == "interrupted":
            await _cancel_waiting(registry, view["id"])
        else:
            raise not_cancelable(f"task {view['id']} is not running in this server")
        return await task_view(registry, view["id"])

    return [
        Route("/a2a/{id}/.well-known/agent-card.json", card, methods=["GET"]),
        Route("/a2a/{id}", rpc, methods=["POST"]),
    ]


async def _cancel_waiting(registry: RunRegistry, run_id: str) -> None:
    """An input-required task cancelled: its stored run ends `cancelled` (it waited; nothing runs)."""
    from ..state.checkpoint import RunSnapshot, save_snapshot

    rec = await registry.db.load_run(run_id)  # RunNotFoundError naming it, if it went meanwhile
    snap = RunSnapshot.from_dict(rec.snapshot)
    snap.status, snap.questions = "cancelled", []
    await save_snapshot(registry.db, snap, expect_version=rec.version)


async def _sse(rid: Any, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    try:
        async for result in events:
            yield sse(rpc_result(rid, result))
    except A2AError as e:
        yield sse(rpc_error(rid, e))
    finally:
        await events.aclose()  # type: ignore[attr-defined]


async def agent_card(ctx: ServerContext, entry: Entry, base: str) -> dict[str, Any]:
    """The agent card of a served agent, chain or flow: its skills are the document itself (its
    description) and, for an agent, each of its tools; the security scheme when the server has API keys."""
    from ..version import __version__

    name = entry.id
    description = entry.description or f"The {entry.kind} {entry.id!r} served by chainreact."
    skills = [{"id": entry.id, "name": name, "description": description, "tags": [entry.kind],
               "inputModes": ["text/plain", "application/json"], "outputModes": ["text/plain"]}]
    if entry.kind == "agent":
        for t in await entry.agent.tools():
            skills.append({"id": f"{entry.id}.{t.name}", "name": t.name,
                           "description": t.description or f"the {t.name} tool", "tags": ["tool"]})
    card: dict[str, Any] = {
        "name": name, "description": description, "version": __version__,
        "supportedInterfaces": [{"url": f"{base}/a2a/{entry.id}", "protocolBinding": "JSONRPC",
                                 "protocolVersion": PROTOCOL}],
        "provider": {"organization": "chainreact", "url": base},
        "capabilities": {"streaming": True, "pushNotifications": False},
        "defaultInputModes": ["text/plain", "application/json"], "defaultOutputModes": ["text/plain"],
        "skills": skills,
    }
    if ctx.keys is not None:
        card["securitySchemes"] = {"apiKey": {"httpAuthSecurityScheme": {
            "scheme": "Bearer", "description": "a chainreact API key: Authorization: Bearer <key>"}}}
        card["securityRequirements"] = [{"schemes": {"apiKey": {"list": []}}}]
    return card


__all__ = ["agent_card", "routes"]
