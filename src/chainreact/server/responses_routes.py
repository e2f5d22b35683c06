"""OpenAI's Responses API for everything served (what the OpenAI Agents SDK speaks by default).

    POST /v1/responses     model = an agent, chain or flow id; `input` (text or items), `instructions`,
                           `tools` (function tools the client runs), `tool_choice`, `text.format`,
                           `previous_response_id`, `user`, `stream`

An agent runs through the run registry as a chat completion does (agent_chat.py): its `function_call`
outputs are calls of the client's own tools, answered by `function_call_output` items in a later request,
which go on with the same run (client_tools.py). `previous_response_id` continues an agent's
conversation from the stored run (needs `--state`: without it only runs that wait for tool results are
kept), a chain's or a flow's from its session. The request side is responses_api.py, the answer side
(the response object, the event stream) responses_out.py.
"""

from __future__ import annotations

import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .agent_chat import agent_batches, answer_or_leave, run_options, start_agent_run
from .catalog import Entry
from .client_tools import tool_results
from .context import ServerContext
from .flows_runtime import flow_frames
from .flows_runtime import session_key as flow_session
from .frames import chain_frames
from .login import flow_user
from .openai_api import SseResponse, error
from .openai_routes import agent_only, served
from .owners import chain_key, run_key
from .responses_api import (
    input_messages,
    parse_request,
    previous_of,
    run_response_id,
    session_response_id,
    text_format,
)
from .responses_out import ResponsesEncoder, ResponseShell, completion, events, flat, singles
from .runs_registry import RunRegistry
from .sessions import chain_session_metadata, session_key, wire_chain_sessions
from .sse import SSE_HEADERS


def routes(ctx: ServerContext) -> list[Route]:
    catalog = ctx.catalog

    @ctx.guard("execute")
    async def create(request: Request) -> Response:
        body = parse_request(request.state.body)
        if isinstance(body, Response):
            return body
        entry = served(request, catalog, body["model"])
        if isinstance(entry, Response):
            return entry
        messages = input_messages(body)
        if isinstance(messages, Response):
            return messages
        registry = ctx.runs
        if registry is None:  # the runs API is part of every app create_app makes
            return error(500, "this app has no run registry (server/runs_routes.py)", "server_error")
        if entry.kind == "agent":
            return await agent_response(request, registry, entry, body, messages)
        refused = agent_only(body.get("tools"), body.get("tool_choice"), text_format(body), entry)
        if refused is not None:
            return refused
        prev = body.get("previous_response_id")
        session = None
        if prev is not None:
            named = previous_of(prev)
            if named is None or named[0] != "session":
                return error(400, f"previous_response_id {prev!r} is not a response of a chain or flow of "
                                  "this server", code="previous_response_not_found")
            session = named[1]
        shell, frames = await other_run(request, registry, entry, body, messages, session)
        if isinstance(frames, Response):
            return frames
        if body.get("stream"):
            return SseResponse(events(singles(frames), ResponsesEncoder(shell)),
                               media_type="text/event-stream", headers=SSE_HEADERS)
        return await completion(frames, shell)

    async def agent_response(request: Request, registry: RunRegistry, entry: Entry, body: dict[str, Any],
                             messages: list[dict[str, Any]]) -> Response:
        stream = bool(body.get("stream"))
        options = await run_options(request, registry, entry, body.get("tools"), body.get("tool_choice"),
                                    text_format(body), "text.format")
        if isinstance(options, Response):
            return options
        key = session_key(request, body)
        if isinstance(key, Response):
            return key
        results = tool_results(messages)
        if isinstance(results, Response):
            return results
        prev = body.get("previous_response_id")
        if prev is not None and results is None:  # (tool results name their run themselves)
            if key is not None:
                return error(400, "give either previous_response_id or a session (user, X-Session-Key): both "
                                  "name the conversation to continue")
            history = await previous_messages(request, registry, prev)
            if isinstance(history, Response):
                return history
            system = [m for m in messages if m["role"] == "system"]
            messages = [*system, *history, *(m for m in messages if m["role"] != "system")]
        live = await start_agent_run(request, registry, ctx.owners, entry, messages, key, options, stream,
                                     results)
        if isinstance(live, Response):
            return live
        shell = ResponseShell(run_response_id(live.run_id), entry.id, body)
        batches = agent_batches(registry, live, entry.agent.config.model,
                                texts=options is None or options.answer is None)
        if stream:
            return SseResponse(events(batches, ResponsesEncoder(shell)), media_type="text/event-stream",
                               headers=SSE_HEADERS)
        return await answer_or_leave(request, registry, live, completion(flat(batches), shell))

    async def previous_messages(request: Request, registry: RunRegistry, prev: str
                                ) -> list[dict[str, Any]] | Response:
        """The conversation of the agent response `prev` (its run's messages, system ones aside)."""
        from ..state.checkpoint import RunSnapshot

        named = previous_of(prev)
        view = await registry.view(named[1]) if named is not None and named[0] == "run" else None
        rec = await registry.db.get_run(view["id"]) if view is not None else None
        key = getattr(request.state, "key", None)
        if view is None or rec is None or rec.snapshot is None or \
                (key is not None and not key.allows("read", view["target"])):
            hint = "" if registry.persist_chats else " (responses are kept when the server has --state)"
            return error(404, f"no response {prev!r} of an agent here{hint}",
                         code="previous_response_not_found")
        if refused := await ctx.owners.check(request, run_key(view), f"{view['session']}", write=False):
            return refused.openai()
        if view["status"] == "interrupted":
            return error(400, f"response {prev!r} waits for the results of its function calls: send them as "
                              "function_call_output items", code="invalid_input")
        if view["status"] != "done":
            return error(409, f"response {prev!r} has no answer to continue from (its run is "
                              f"{view['status']})", "invalid_request_error", "previous_response_not_done")
        return [m.to_openai() for m in RunSnapshot.from_dict(rec.snapshot).messages if m.role != "system"]

    async def other_run(request: Request, registry: RunRegistry, entry: Entry, body: dict[str, Any],
                        messages: list[dict[str, Any]], session: str | None) -> tuple[ResponseShell, Any]:
        """A chain's or a flow's run on the request, as (the response's shell, its frames or a 400)."""
        stream = bool(body.get("stream"))
        if entry.kind == "flow":
            text = next((m["content"] for m in reversed(messages) if m["role"] == "user"
                         and isinstance(m["content"], str)), None)
            sid = session or flow_session(request, body)
            shell = ResponseShell(session_response_id(sid), entry.id, body)
            if text is None:
                return shell, error(400, "a flow needs a user message: the last one in 'input' is sent to it",
                                    code="invalid_input")
            flow = await ctx.flows.served(entry.id)
            if refused := await ctx.owners.check(request, flow.session_key(sid), sid, write=True):
                return shell, refused.openai()
            return shell, flow_frames(flow, sid, text, flow_user(ctx, request, flow, None), stream=stream)
        meta: dict[str, str] = {}
        rid = "resp_" + secrets.token_hex(8)
        durable = ctx.durable("chain", entry.id)
        if registry.sessions and durable is None:
            named = session or session_key(request, body)
            if isinstance(named, Response):
                return ResponseShell(rid, entry.id, body), named
            named = named or "s-" + secrets.token_hex(8)
            if refused := await ctx.owners.check(request, chain_key(entry.id, named), named, write=True):
                return ResponseShell(rid, entry.id, body), refused.openai()
            wire_chain_sessions(registry, catalog.engine)
            meta, rid = chain_session_metadata(named), session_response_id(named)
        elif session is not None:
            return ResponseShell(rid, entry.id, body), error(
                400, "previous_response_id continues a chain's session: the server needs --state (and no "
                     "--temporal for this chain)", code="sessions_disabled")
        frames = chain_frames(catalog.chains, entry.id, {"model": entry.id, "messages": messages,
                                                         "stream": stream},
                              stream=stream, metadata=meta, durable=durable)
        return ResponseShell(rid, entry.id, body), frames

    return [Route("/v1/responses", create, methods=["POST"])]
