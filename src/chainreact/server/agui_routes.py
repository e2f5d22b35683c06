"""The AG-UI face: every served agent, chain and flow runs as an AG-UI agent.

    POST /agui/{id}      body: an AG-UI RunAgentInput (agui_input.py); answer: the run's AG-UI events as SSE
                         (agui_events.py), RUN_STARTED first and RUN_FINISHED or RUN_ERROR last

An agent runs through the run registry as a chat completion does (tracked for shutdown, cancelled when the
client leaves, checkpointed with --state; its id in RUN_STARTED's metadata `chainreactRunId`): its text,
reasoning, tool calls and results are the stream. The input's `tools` are the client's own (RunOptions
external tools): a call to one ends the run with RUN_FINISHED `outcome: {"type": "success",
"pendingToolCallIds"}`, and the next run, whose messages end with the tool results, goes on with the same
run (the call ids name it: client_tools.exposed_id; every tool call id the stream shows has that form). A
run that stops to ask (`ask_user`, `requireApproval`) ends with `outcome: {"type": "interrupt",
"interrupts"}`; the next run's `resume` entries answer them by interrupt id, and the run goes on.

A chain runs its nodes as STEP_STARTED/STEP_FINISHED (node ids) around its agent nodes' text and tool
calls. A flow turn: each node a step, each message a text message, the agent nodes' tool calls, and the
session's state (node, ended, variables; secrets masked) as STATE_SNAPSHOT before the turn and STATE_DELTA
after it. threadId is the session: an agent's or a chain's with --state, a flow's always.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .agent_chat import run_options
from .agui_events import AguiStream, json_patch, token_usage
from .agui_input import AguiInput, BadInput, chat_messages, parse_input
from .catalog import Entry
from .client_tools import exposed_id, parse_exposed, result_text
from .context import ServerContext
from .flows_routes import _SESSION_ID, mask_secrets
from .frames import Done, Failed, Reasoning, Text, Tool, Trace, chain_frames
from .login import flow_user
from .owners import SessionOwners, chain_key, run_key
from .runs_registry import LiveRun, RegistryClosed, RunRegistry, agent_session
from .sessions import chain_session_metadata, session_input, unavailable, wire_chain_sessions
from .sse import SSE_HEADERS, sse

if TYPE_CHECKING:
    from ..agent.result import RunResult
    from ..flows import Flow
    from ..state.base import Store
    from .flows_runtime import DurableServedFlow

Batches = AsyncIterator[list[dict[str, Any]]]
APPROVAL_SCHEMA = {"type": "object", "required": ["approve"],
                   "properties": {"approve": {"type": "boolean"}, "reason": {"type": "string"},
                                  "arguments": {"type": "object"}}}


def _err(status: int, message: str, code: str) -> Response:
    return JSONResponse({"error": {"message": message, "code": code}}, status_code=status)


def routes(ctx: ServerContext) -> list[Route]:
    catalog = ctx.catalog

    @ctx.guard("execute", "id")
    async def run(request: Request) -> Response:
        ident = request.path_params["id"]
        entry = catalog.entries.get(ident)
        if entry is None:
            return _err(404, f"no agent, chain or flow with id {ident!r}; GET /v1/models lists them",
                        "not_found")
        try:
            inp = parse_input(request.state.body)
        except BadInput as e:
            return _err(400, str(e), "invalid_input")
        registry = ctx.runs
        if registry is None:
            return _err(500, "this app has no run registry (server/runs_routes.py)", "server_error")
        s = AguiStream(inp.thread_id, inp.run_id)
        batches: Batches | Response
        if entry.kind == "agent":
            batches = await agent_batches(request, registry, ctx.owners, entry, inp, s)
        elif entry.kind == "chain":
            durable = ctx.durable("chain", entry.id)
            owned = chain_key(entry.id, inp.thread_id) if registry.sessions and durable is None else None
            if refused := await ctx.owners.check(request, owned, inp.thread_id, write=True):
                return refused.plain()
            batches = chain_batches(registry, entry, inp, s)
        else:
            batches = await flow_batches(request, entry, inp, s)
        if isinstance(batches, Response):
            return batches
        return StreamingResponse(_sse(batches, s), media_type="text/event-stream", headers=SSE_HEADERS)

    async def chain_batches(registry: RunRegistry, entry: Entry, inp: AguiInput, s: AguiStream) -> Batches:
        durable = ctx.durable("chain", entry.id)
        meta: dict[str, str] = {}
        if registry.sessions and durable is None:
            wire_chain_sessions(registry, catalog.engine)
            meta = chain_session_metadata(inp.thread_id)
        body = {"model": entry.id, "messages": chat_messages(inp.messages), "stream": True}
        yield s.started()
        frames = chain_frames(catalog.chains, entry.id, body, stream=True, metadata=meta, durable=durable,
                              trace=True)
        async with contextlib.aclosing(frames):  # type: ignore[type-var]
            async for f in frames:
                if isinstance(f, Text):
                    out = s.text(f.text)
                elif isinstance(f, Reasoning):
                    out = s.reasoning(f.text)
                elif isinstance(f, Tool):
                    out = _tool_frame(s, f.event)
                elif isinstance(f, Trace):
                    out = _node_step(s, entry.id, f.event)
                elif isinstance(f, Done):
                    out = s.finished(usage=token_usage(f.usage, f.model or None))
                elif isinstance(f, Failed):
                    out = s.error(f.message, f.code or "chain_failed")
                else:
                    out = []
                if out:
                    yield out

    async def flow_batches(request: Request, entry: Entry, inp: AguiInput,
                           s: AguiStream) -> Batches | Response:
        flow = await ctx.flows.served(entry.id)
        sid = inp.thread_id
        if not _SESSION_ID.match(sid):
            return _err(400, "a flow's threadId is its session id: 1-200 letters, digits and ._:@~+=-",
                        "invalid_input")
        text = inp.last_user_text()
        if text is None:
            return _err(400, "a flow needs a user message: the last one in messages is sent to it",
                        "invalid_input")
        if refused := await ctx.owners.check(request, flow.session_key(sid), sid, write=True):
            return refused.plain()
        user = flow_user(ctx, request, flow, None)
        return _flow_turn(flow, await ctx.flows.store(), sid, text, user, s)

    return [Route("/agui/{id}", run, methods=["POST"])]


async def _sse(batches: Batches, s: AguiStream) -> AsyncIterator[bytes]:
    """The batches as SSE (one write each); a failure that escaped them still ends the run with RUN_ERROR."""
    try:
        async for batch in batches:
            yield b"".join(sse(e) for e in batch)
    except Exception as e:
        if not s.ended:
            yield b"".join(sse(e) for e in s.error(str(e) or type(e).__name__, "server_error"))
    finally:
        await batches.aclose()  # type: ignore[attr-defined]


def _tool_frame(s: AguiStream, event: dict[str, Any]) -> list[dict[str, Any]]:
    if event.get("type") == "TOOL_CALL_START":
        return s.tool_call(str(event.get("toolCallId")), str(event.get("toolName")), event.get("arguments"))
    if event.get("type") == "TOOL_CALL_RESULT":
        return s.tool_result(str(event.get("toolCallId")), event.get("content", ""),
                             bool(event.get("isError")))
    return []


def _node_step(s: AguiStream, chain_id: str, event: dict[str, Any]) -> list[dict[str, Any]]:
    if event.get("type") != "node" or event.get("flow") not in ("IN", "OUT"):
        return []
    node = str(event.get("nodeId"))
    name = node if event.get("chainId") in (None, chain_id) else f"{event.get('chainId')}:{node}"
    return s.step(name, event["flow"] == "IN")


# ---------------------------------------------------------------------------------------------- agents

async def agent_batches(request: Request, registry: RunRegistry, owners: SessionOwners, entry: Entry,
                        inp: AguiInput, s: AguiStream) -> Batches | Response:
    from ..state import RunConflictError, RunNotFoundError, StateError

    options = await run_options(request, registry, entry, inp.tools, None, None, "response_format")
    if isinstance(options, Response):
        return options
    try:
        answered = await _answers(registry, entry, inp)
    except BadInput as e:
        return _err(400, str(e), "invalid_resume")
    if isinstance(answered, Response):
        return answered
    # The session (threadId, with --state) and a run it answers: another user's are not found.
    owned = [(agent_session(entry.id, inp.thread_id), inp.thread_id)] if registry.sessions else []
    if answered is not None and (view := await registry.view(answered[0])) is not None:
        owned.append((run_key(view), f"{view['session']}"))
    for key, shown in owned:
        if refused := await owners.check(request, key, shown, write=True):
            return refused.plain()
    live: LiveRun | None = None
    try:
        if answered is not None:
            try:
                live = await registry.resume_agent(entry.agent, entry.id, answered[0], answered[1],
                                                   listen=True, events=False, options=options)
            except RunNotFoundError:
                live = None  # pruned meanwhile: a plain conversation then
            except RunConflictError as e:
                return _err(409, str(e), "run_not_waiting")
            except StateError as e:  # refused answers: nothing changed
                return _err(400, f"resume: {e}", "invalid_resume")
        if live is None:
            key = agent_session(entry.id, inp.thread_id) if registry.sessions else None
            data = await session_input(registry, key, chat_messages(inp.messages))
            live = registry.start_agent(entry.agent, entry.id, data, session=key,
                                        persist=registry.persist_chats, stream=True, listen=True,
                                        events=False, resumable=True, options=options)
    except RegistryClosed:
        return unavailable()
    answered_ids = frozenset(answered[1]) if answered is not None else frozenset()
    return _agent_stream(registry, live, s, entry.agent.config.model, answered_ids)


async def _answers(registry: RunRegistry, entry: Entry, inp: AguiInput
                   ) -> tuple[str, dict[str, Any]] | Response | None:
    """The waiting run this input answers and the answers by question id (resume entries and the trailing
    tool results for its client tools), or None: a new run."""
    named: dict[str, dict[str, Any]] = {}
    for i, r in enumerate(inp.resume):
        parsed = parse_exposed(r["interruptId"])
        if parsed is None:
            raise BadInput(f"resume[{i}].interruptId {r['interruptId']!r} names no interrupt of this server")
        named.setdefault(parsed[0], {})[parsed[1]] = ("cancelled", None) if r["status"] == "cancelled" \
            else ("resolved", r.get("payload"))
    results: dict[str, dict[str, Any]] = {}
    for call_id, content in inp.trailing_results():
        parsed = parse_exposed(call_id)
        if parsed is not None:
            results.setdefault(parsed[0], {})[parsed[1]] = result_text(content)
    runs = set(named) | set(results)
    if not runs:
        return None
    if len(runs) > 1:
        raise BadInput(f"this input answers several runs ({', '.join(sorted(runs))}); answer one at a time")
    run_id = runs.pop()
    view = await registry.view(run_id)
    if view is None:
        if named:
            return _err(404, f"the interrupted run {run_id} is not known here (expired, or a restart without "
                             "--state); start a new run", "run_not_found")
        return None  # tool results of a run that is gone: a plain conversation
    if view["target"] != entry.id:
        raise BadInput(f"these answers are for a run of {view['target']!r}; send them to "
                       f"/agui/{view['target']}")
    if view["status"] != "interrupted" or view["live"]:
        return _err(409, f"run {run_id} no longer waits for answers (it is "
                         f"{'running' if view['live'] else view['status']})", "run_not_waiting")
    answers: dict[str, Any] = {}
    for q in view["questions"]:
        qid, kind = q["id"], q.get("kind")
        if qid in named.get(run_id, {}):
            status, payload = named[run_id][qid]
            if status == "cancelled":
                if kind != "approval":
                    raise BadInput(f"interrupt {exposed_id(run_id, qid)} ({kind}) cannot be cancelled: "
                                   "answer "
                                   "it, or start a new run without resume")
                payload = {"approve": False, "reason": "cancelled by the user"}
            elif payload is None and kind == "approval":
                payload = True
            answers[qid] = payload
        elif qid in results.get(run_id, {}):
            answers[qid] = results[run_id][qid]
    return run_id, answers


async def _agent_stream(registry: RunRegistry, live: LiveRun, s: AguiStream, model: str,
                        answered: frozenset[str]) -> Batches:
    """The run's events as AG-UI events. `answered`: the calls this run was resumed with the answers of
    (their start was in the run before, their result is the client's own): not shown again."""
    from ..agent import EXTERNAL, pending_external
    from ..types.events import ModelCallEnd, ReasoningDelta, TextDelta, ToolCallEvent, ToolResultEvent

    rid = live.run_id
    yield s.started({"chainreactRunId": rid})
    said = False  # text of the current model call was streamed
    async with contextlib.aclosing(registry.listen_batches(live)) as listened:
        async for events in listened:
            out: list[dict[str, Any]] = []
            for ev in events:
                if isinstance(ev, TextDelta) and len(ev.path) <= 1:
                    out += s.text(ev.text)
                    said = True
                elif isinstance(ev, ModelCallEnd) and len(ev.path) <= 1:
                    # The text a model wrote beside its tool calls is not answer text (not streamed as
                    # such): the page shows it before the calls.
                    if not said and ev.message.tool_calls and isinstance(ev.message.content, str):
                        out += s.text(ev.message.content)
                    said = False
                elif isinstance(ev, ReasoningDelta) and len(ev.path) <= 1:
                    out += s.reasoning(ev.text)
                elif isinstance(ev, ToolCallEvent) and not (ev.call.id in answered and len(ev.path) <= 1):
                    out += s.tool_call(exposed_id(rid, ev.call.id), ev.call.name, ev.call.arguments)
                elif isinstance(ev, ToolResultEvent):
                    out += s.tool_result(exposed_id(rid, ev.call_id), ev.content, ev.is_error)
            if out:
                yield out
    await live.ended.wait()
    result = cast("RunResult | None", live.result)  # an agent run's
    if result is None:
        yield s.error(live.error or "the run failed", "run_failed")
        return
    usage = token_usage(result.usage, model)
    if result.stop_reason == "cancelled":
        yield s.finished(outcome={"type": "cancelled"}, usage=usage)
        return
    if result.stop_reason != "interrupted" or result.interruption is None:
        yield s.finished(usage=usage)
        return
    pending = pending_external(result)
    if pending:
        ids = [s.sent_id(exposed_id(rid, c.id)) or exposed_id(rid, c.id) for c in pending]
        yield s.finished(outcome={"type": "success", "pendingToolCallIds": ids}, usage=usage)
        return
    interrupts = []
    for q in result.interruption.questions:
        if q.kind == EXTERNAL:
            continue  # the client's own tool, asked beside a question: its result comes as a tool message
        item: dict[str, Any] = {"id": exposed_id(rid, q.id), "reason": q.kind, "message": q.question}
        if (sent := s.sent_id(exposed_id(rid, q.id))) is not None:
            item["toolCallId"] = sent
        schema = APPROVAL_SCHEMA if q.kind == "approval" else q.schema
        if isinstance(schema, dict):
            item["responseSchema"] = schema
        interrupts.append(item)
    yield s.finished(outcome={"type": "interrupt", "interrupts": interrupts}, usage=usage)


# ---------------------------------------------------------------------------------------------- flows

async def _flow_state(flow: Flow | DurableServedFlow, store: Store, sid: str) -> dict[str, Any]:
    rec = await store.get_run(flow.session_key(sid))
    snap = rec.snapshot if rec is not None and isinstance(rec.snapshot, dict) else {}
    ended = bool(snap.get("ended"))
    return {"node": snap.get("node") if snap and not ended else flow.definition.start_node.name,
            "ended": ended, "variables": mask_secrets(snap.get("vars") or {})}


async def _flow_turn(flow: Flow | DurableServedFlow, store: Store, sid: str, text: str, user: Any,
                     s: AguiStream) -> Batches:
    from ..flows.answer_stream import text_deltas
    from ..state import RunConflictError

    before = await _flow_state(flow, store, sid)
    yield s.started() + s.state_snapshot(before)
    events = text_deltas(flow.definition, flow.stream(sid, text, user=user, agent_events=True),
                         keep_agent=True)
    node: str | None = None
    streamed: tuple[str | None, str] | None = None  # (node, its text sent so far)
    try:
        async for ev in events:
            out: list[dict[str, Any]] = []
            if ev.type == "node":
                if node is not None:
                    out += s.step(node, False)
                node = ev.node or ev.data.get("node")
                out += s.step(str(node), True)
            elif ev.type == "agent":
                out += _agent_tool_event(s, ev.data["agent_event"])
            elif ev.type == "text_delta":
                if streamed is None or streamed[0] != ev.node:
                    out += s.end_text()
                    streamed = (ev.node, "")
                streamed = (ev.node, streamed[1] + str(ev.data["text"]))
                out += s.text(str(ev.data["text"]))
            elif ev.type == "message":
                content = str(ev.data.get("content", ""))
                if streamed is not None and streamed[0] == ev.node and content.startswith(streamed[1]):
                    out += s.text(content[len(streamed[1]):])
                else:
                    out += s.end_text() + s.text(content)
                out += s.end_text()
                streamed = None
            elif ev.type == "turn_end" and node is not None:
                out += s.step(node, False)
                node = None
            if out:
                yield out
    except Exception as e:  # the turn saved nothing; the session did not move
        code = "session_conflict" if isinstance(e, RunConflictError) else "turn_failed"
        yield s.error(str(e) or type(e).__name__, code)
        return
    finally:
        await events.aclose()  # type: ignore[attr-defined]
    after = await _flow_state(flow, store, sid)
    yield s.state_delta(json_patch(before, after)) + s.finished()


def _agent_tool_event(s: AguiStream, e: Any) -> list[dict[str, Any]]:
    from ..types.events import ToolCallEvent, ToolResultEvent

    if isinstance(e, ToolCallEvent):
        return s.tool_call(e.call.id, e.call.name, e.call.arguments)
    if isinstance(e, ToolResultEvent):
        return s.tool_result(e.call_id, e.content, e.is_error)
    return []


__all__ = ["routes"]
