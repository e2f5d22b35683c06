"""An agent run for an OpenAI request (chat completions, and the Responses API: responses_routes.py), through
the run registry: tracked for shutdown, cancelled when the client goes away, checkpointed (header
`X-Run-Id`) and kept in its session when the server has a state store.

`start_agent_run` starts the run, or goes on with the run that the request's trailing tool results
answer (client_tools.py); `agent_batches` is the run as frames, in the batches they were ready in. A run
that stops to ask (`ask_user`, an approval) is saved in any case and ends with the 409 `run_interrupted`
frame (frames.interrupted): it goes on through the runs API's resume route. A run that stops for the
client's own tools ends with a Calls frame instead.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from ..agent import RunOptions
from .client_tools import client_calls, request_options, tool_results
from .frames import Done, Failed, Frame, Text, answer_event, event_frame
from .openai_api import agent_input, agui, error, respond, respond_batches
from .owners import SessionOwners, run_key
from .runs_registry import RegistryClosed, RunRegistry, agent_session
from .sessions import session_input, session_key, until_end_or_disconnect

if TYPE_CHECKING:
    from ..types import Event
    from .catalog import Entry
    from .runs_registry import LiveRun


async def run_options(request: Request, registry: RunRegistry, entry: Entry, tools: Any, choice: Any,
                      fmt: Any, fmt_field: str) -> RunOptions | Response | None:
    """The request's client tools, tool choice and response format as RunOptions (None: none asked for),
    or the 400 that says what is wrong."""
    if tools is None and choice is None and fmt is None:
        return None
    own = [t.name for t in await entry.agent.tools()]
    options = request_options(tools, choice, fmt, own, fmt_field=fmt_field)
    durable = registry.dispatcher is not None and registry.dispatcher.serves("agent", entry.id)
    if options is not None and durable:
        return error(400, "tools, tool_choice and a response format are not supported for durable agent "
                          "runs (serve --temporal) yet", code="unsupported_parameter")
    return options


async def start_agent_run(request: Request, registry: RunRegistry, owners: SessionOwners, entry: Entry,
                          messages: list[dict[str, Any]], key: str | None, options: RunOptions | None,
                          stream: bool, results: Any = None) -> LiveRun | Response:
    """The LiveRun answering this request (listened to), or the Response that refuses it. `results`: the
    request's trailing tool results (client_tools.tool_results / output_results); when they answer a
    waiting run of this agent, that run goes on with them, else a new run starts on `messages` (after
    the session `key`'s history). Another user's session, or run in one, is refused (`owners`)."""
    # The answer's listener wakes only for events that make frames for this client: not for tool calls
    # and results unless it asked for them (agui), nor for step and model-call ends.
    keep = None if stream and agui(request) else answer_event
    if results is None:
        results = tool_results(messages)
    if isinstance(results, Response):
        return results
    try:
        if results is not None:
            live = await _continue(request, registry, owners, entry, results, options, keep)
            if live is not None:
                return live
        shown, key = key, agent_session(entry.id, key)
        if registry.sessions and (refused := await owners.check(request, key, shown or "", write=True)):
            return refused.openai()
        data = await session_input(registry, key, messages)
        # Checkpointed (status, messages) but without an event log: a token stream per chat is not worth
        # keeping; runs started through the runs API have one.
        return registry.start_agent(entry.agent, entry.id, data, session=key if registry.sessions else None,
                                    persist=registry.persist_chats, stream=stream, listen=True, events=False,
                                    resumable=True, keep=keep, options=options)
    except RegistryClosed:
        return error(503, "the server is shutting down", "server_error", "shutting_down",
                     headers={"Retry-After": "5"})
    except _Refused as e:
        return e.response


class _Refused(Exception):
    def __init__(self, response: Response):
        self.response = response


async def _continue(request: Request, registry: RunRegistry, owners: SessionOwners, entry: Entry,
                    results: tuple[str, dict[str, Any]], options: RunOptions | None,
                    keep: Callable[[Event], bool] | None) -> LiveRun | None:
    """The waiting run `results` names resumed with the client's tool results (its answers), or None when
    no such run is known here (a plain conversation then)."""
    from ..state import RunConflictError, RunNotFoundError, StateError

    run_id, answers = results
    view = await registry.view(run_id)
    if view is None:
        return None
    if refused := await owners.check(request, run_key(view), f"{view['session']}", write=True):
        raise _Refused(refused.openai())
    if view["target"] != entry.id:
        raise _Refused(error(400, f"these tool results answer a run of {view['target']!r}; send them with "
                                  f"model {view['target']!r}", code="invalid_tool_results"))
    if view["status"] != "interrupted" or view["live"]:
        state = "running" if view["live"] else view["status"]
        raise _Refused(error(409, f"run {run_id} no longer waits for these tool results (it is {state})",
                             "invalid_request_error", "run_not_waiting"))
    try:
        return await registry.resume_agent(entry.agent, entry.id, run_id, answers, listen=True, events=False,
                                           keep=keep, options=options)
    except RunNotFoundError:
        return None
    except RunConflictError as e:
        raise _Refused(error(409, str(e), "invalid_request_error", "run_not_waiting")) from None
    except StateError as e:  # results missing or for calls the run did not make: nothing changed
        raise _Refused(error(400, f"tool results: {e}", code="invalid_tool_results")) from None


async def agent_batches(registry: RunRegistry, live: LiveRun, model: str, *, texts: bool = True
                        ) -> AsyncIterator[list[Frame]]:
    """The run's events as frames, in the batches they were ready in (one write each). `texts=False`
    leaves the text deltas out (the answer comes whole in Done: a response format's answer is sent once
    it passed its check)."""
    async with contextlib.aclosing(registry.listen_batches(live)) as listened:
        async for events in listened:
            frames: list[Frame] = []
            for ev in events:
                frame = event_frame(ev, model)
                if frame is None or (not texts and isinstance(frame, Text)):
                    continue
                if isinstance(frame, Done | Failed):
                    if frames:
                        yield frames
                        frames = []
                    # The last frame goes out once the run's end is saved (status, session): a client's
                    # next request then sees this exchange in its history.
                    await live.ended.wait()
                    if isinstance(frame, Failed) and frame.code == "run_interrupted":
                        frame = client_calls(live) or frame
                frames.append(frame)
            if frames:
                yield frames
    if live.error is not None:
        yield [Failed(live.error)]


async def answer_or_leave(request: Request, registry: RunRegistry, live: LiveRun, work: Any) -> Response:
    """A response that is not streamed: Starlette does not notice a client that leaves, so watch for it
    and cancel the run then (499)."""
    answering = asyncio.ensure_future(work)
    if not await until_end_or_disconnect(request, registry, live, answering):
        return Response(status_code=499)
    resp: Response = answering.result()
    return resp


async def agent_chat(request: Request, registry: RunRegistry, owners: SessionOwners, entry: Entry,
                     body: dict[str, Any], model: str, stream: bool) -> Response:
    """A chat completion of agent `entry` (see the module doc): `tools`, `tool_choice` and
    `response_format` apply to the run."""
    key = session_key(request, body)
    if isinstance(key, Response):
        return key
    options = await run_options(request, registry, entry, body.get("tools"), body.get("tool_choice"),
                                body.get("response_format"), "response_format")
    if isinstance(options, Response):
        return options
    messages = agent_input(body)["messages"]
    live = await start_agent_run(request, registry, owners, entry, messages, key, options, stream)
    if isinstance(live, Response):
        return live
    batches = agent_batches(registry, live, entry.agent.config.model,
                            texts=options is None or options.answer is None)
    if stream:
        resp = respond_batches(request, batches, model)
    else:
        async def frames() -> AsyncIterator[Frame]:
            async for batch in batches:
                for frame in batch:
                    yield frame

        resp = await answer_or_leave(request, registry, live, respond(request, frames(), model, stream))
    if registry.persist_chats:
        resp.headers["X-Run-Id"] = live.run_id
    return resp
