"""One stream shape for everything served: an agent run or a chain run becomes a sequence of frames,
which the routes turn into OpenAI chunks (SSE) or one completion.

    Text(text)            answer text
    Reasoning(text)       the model's reasoning
    Tool(event)           a TOOL_CALL_START / TOOL_CALL_RESULT object (sent only to agui clients)
    Done(content, usage, model)   the end, with the full answer
    Calls(calls, usage, content)  the end of a run that waits for the client's own tools (client_tools.py):
                          the calls the model made to them (ids as the client must answer them), its text
    Failed(message, ...)  the run failed (or stopped to ask: an interrupted run, HTTP 409); nothing follows
    Trace(event)          a chain run's node or agent-node event, only when asked for (`chain_frames(trace=)`)
    Warn(code, message)   the answer that follows is not a normal one ("max_steps": the run reached maxStep);
                          the chat completion carries it as `warning` (openai_api.py)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import orjson

from ..types import Event, ToolCall, Usage

if TYPE_CHECKING:
    from ..agent import Agent
    from ..chains import End, RuleEngine, RuleMsg
    from ..durable import DurableChainRun
    from ..state import Store
    from ..types import (
        Final,
        Interrupted,
        ReasoningDelta,
        RunWarning,
        TextDelta,
        ToolCallEvent,
        ToolResultEvent,
    )

log = logging.getLogger("chainreact.server")


@dataclass(slots=True)
class Text:
    text: str


@dataclass(slots=True)
class Reasoning:
    text: str


@dataclass(slots=True)
class Tool:
    event: dict[str, Any]


@dataclass(slots=True)
class Done:
    content: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""


@dataclass(slots=True)
class Calls:
    calls: list[ToolCall]
    usage: Usage = field(default_factory=Usage)
    content: str = ""  # what the model wrote beside the calls


@dataclass(slots=True)
class Failed:
    message: str
    # Not streamed, the answer is HTTP `status` in OpenAI's error shape with this type and code, and
    # `details` beside them (streamed: a stream_error event with the code and details).
    status: int = 500
    type: str = "server_error"
    code: str | None = None
    details: dict[str, Any] | None = None


@dataclass(slots=True)
class Trace:
    event: dict[str, Any]


@dataclass(slots=True)
class Warn:
    code: str
    message: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


Frame = Text | Reasoning | Tool | Done | Calls | Failed | Trace | Warn


async def agent_frames(agent: Agent, data: Any, *, stream: bool) -> AsyncIterator[Frame]:
    """An agent's run as frames. Closing the iterator early (a client went away) cancels the run."""
    model = agent.config.model
    if not stream:
        try:
            result = await agent.run(data)
        except Exception as exc:
            yield Failed(_error_text(exc))
            return
        if (warn := result_warning(result.metadata)) is not None:
            yield warn
        yield Done(result.content, result.usage, model)
        return
    gen = agent.stream(data)
    try:
        async for e in gen:
            frame = event_frame(e, model)
            if frame is not None:
                yield frame
    except Exception as e:
        yield Failed(_error_text(e))
    finally:
        await gen.aclose()  # type: ignore[attr-defined]  # Agent.stream gives an async generator


def event_frame(e: Event, model: str) -> Frame | None:
    """The frame of one agent event (None: the event has no frame)."""
    kind = _KINDS.get(type(e))
    if kind is None:
        kind = _KINDS[type(e)] = _kind(e)
    if kind == _NO_FRAME:
        return None
    # A sub-agent's own text, reasoning and end (agent-as-tool with emit_internal_events) are not
    # the answer: its result reaches the caller as the tool's result. Its tool calls are shown.
    if len(e.path) > 1 and kind != _TOOL_CALL and kind != _TOOL_RESULT:
        return None
    # `kind` says which event class `e` is (the casts only tell mypy; they cost a call, no check).
    if kind == _TEXT:
        return Text(cast("TextDelta", e).text)
    if kind == _REASONING:
        return Reasoning(cast("ReasoningDelta", e).text)
    if kind == _TOOL_CALL:
        call = cast("ToolCallEvent", e).call
        return Tool({"type": "TOOL_CALL_START", "toolCallId": call.id, "toolName": call.name,
                     "arguments": _args(call.arguments), "path": list(e.path)})
    if kind == _TOOL_RESULT:
        r = cast("ToolResultEvent", e)
        return Tool({"type": "TOOL_CALL_RESULT", "toolCallId": r.call_id, "toolName": r.name,
                     "content": r.content, "isError": r.is_error, "durationMs": r.duration_ms,
                     "path": list(e.path)})
    if kind == _FINAL:
        final = cast("Final", e)
        return Done(final.content, final.usage, model)
    if kind == _WARNING:
        warning = cast("RunWarning", e)
        return Warn(warning.code, warning.message)
    if kind == _CANCELLED:
        return Failed("the run was cancelled")
    return interrupted(e.run_id, cast("Interrupted", e).questions)


def answer_event(e: Event) -> bool:
    """Whether event `e` can make a frame other than Tool (the frames a client gets unless it asked for
    tool frames: X-Stream-Protocol: agui)."""
    kind = _KINDS.get(type(e))
    if kind is None:
        kind = _KINDS[type(e)] = _kind(e)
    return kind != _NO_FRAME and kind != _TOOL_CALL and kind != _TOOL_RESULT


def tool_frame(e: Event) -> Tool | None:
    """The Tool frame of agent event `e` when it is a tool call or result (as `event_frame` makes it for an
    agent's agui stream), else None: for streams whose text comes from elsewhere (a flow's agent nodes,
    whose model text is their JSON answer)."""
    if answer_event(e):
        return None
    frame = event_frame(e, "")
    return frame if isinstance(frame, Tool) else None


# What each event class becomes, looked up by the event's exact type (a run streams ~40 events per request,
# most of which have no frame): filled on first sight of a class, so subclasses are classified too.
_NO_FRAME, _TEXT, _REASONING, _TOOL_CALL, _TOOL_RESULT, _FINAL, _CANCELLED, _INTERRUPTED, _WARNING = range(9)
_KINDS: dict[type, int] = {}


def _kind(e: Event) -> int:
    from ..types import events as ev

    for cls, kind in ((ev.TextDelta, _TEXT), (ev.ReasoningDelta, _REASONING), (ev.ToolCallEvent, _TOOL_CALL),
                      (ev.ToolResultEvent, _TOOL_RESULT), (ev.Final, _FINAL), (ev.Cancelled, _CANCELLED),
                      (ev.Interrupted, _INTERRUPTED), (ev.RunWarning, _WARNING)):
        if isinstance(e, cls):
            return kind
    return _NO_FRAME


def result_warning(metadata: dict[str, Any]) -> Warn | None:
    """The Warn frame of a RunResult's metadata (the loop keeps its RunWarning there), or None."""
    w = metadata.get("warning")
    return Warn(str(w.get("code", "")), str(w.get("message", ""))) if isinstance(w, dict) else None


def interrupted(run_id: str, questions: list[dict[str, Any]]) -> Failed:
    """What a chat completion answers for a run that stopped to ask (ask_user, an approval): 409 with the
    run id, its questions and where to answer them (the runs API)."""
    asked = "; ".join(str(q.get("question") or q.get("kind") or q.get("id")) for q in questions)
    resume = f"/api/v1/runs/{run_id}/resume"
    return Failed(f"the run {run_id} is interrupted: it waits for answers ({asked}). Answer with POST "
                  f'{resume} and a body {{"answers": {{question id: answer}}}}; GET /api/v1/runs/{run_id} '
                  "shows the questions", 409, "run_interrupted", "run_interrupted",
                  {"run_id": run_id, "resume": resume, "questions": questions})


async def chain_frames(engine: RuleEngine, chain_id: str, body: dict[str, Any], *, stream: bool,
                       metadata: dict[str, str] | None = None, durable: ChainDispatcher | None = None,
                       run_id: str | None = None, trace: bool = False) -> AsyncIterator[Frame]:
    """A chain run on an OpenAI chat request (message type `chat.completions`, JSON data = the body);
    with `stream`, metadata stream=true and the chain's Stream frames become frames as they come.
    With `durable` (a TemporalDispatcher: ServerContext.durable) the run is a workflow on its workers
    (`run_id`: its id); streamed, the workers log its Stream frames in the shared store as they come, read
    from there.
    A durable run cancelled by someone else (another server) ends with Failed(code RUN_CANCELLED); one
    left while the server shuts down (after the grace period, or its client went away meanwhile) is not
    cancelled: its workflow goes on in the workers (durable/chain_end.py records its end).
    With `trace`, every node's IN/OUT and the agent nodes' model calls, retries, failovers, breaker
    changes and tool results come as Trace frames too, in order (chain_trace.py; a durable run streamed:
    as its workers log them, chains/trace.py)."""
    from ..chains import FAILURE, SUCCESS, RuleMsg

    meta = dict(metadata or {})
    if stream:
        meta["stream"] = "true"
    msg = RuleMsg(type="chat.completions", data=orjson.dumps(body).decode(), metadata=meta)
    queue: asyncio.Queue[Frame | None] = asyncio.Queue()

    def on_stream(m: RuleMsg) -> None:
        md = m.metadata
        if md.get("error") == "true" or md.get("stream_completed") == "true" or md.get("warning"):
            return  # the error arrives as a Failure end; completion and a warning with the Success end
        if md.get("tool_call") == "true":
            try:
                queue.put_nowait(Tool(orjson.loads(m.data)))
            except orjson.JSONDecodeError:
                return
        elif md.get("reasoning_content"):
            queue.put_nowait(Reasoning(md["reasoning_content"]))
        elif m.data:
            queue.put_nowait(Text(m.data))

    async def run() -> None:
        try:
            if durable is None and trace:
                from .chain_trace import traced_run

                ends = await traced_run(engine, chain_id, msg, on_stream if stream else None,
                                        lambda ev: queue.put_nowait(Trace(ev)))
            elif durable is None:
                ends = await engine.run(chain_id, msg, on_stream=on_stream if stream else None)
            else:
                ends = await _durable_chain(durable, chain_id, msg, run_id, on_stream if stream else None,
                                            (lambda ev: queue.put_nowait(Trace(ev))) if trace else None)
            ok = next((e for e in ends if e.relation == SUCCESS and not e.error), None)
            if ok is not None:
                md = ok.msg.metadata
                if md.get("warning"):  # an agent node's run reached maxStep
                    queue.put_nowait(Warn(md["warning"], md.get("warning_message", "")))
                queue.put_nowait(Done(ok.msg.data, _usage(md), md.get("model", "")))
            else:
                bad = next((e for e in ends if e.relation == FAILURE or e.error), None)
                why = (bad.error or bad.msg.data) if bad else "the chain ended without a Success message"
                queue.put_nowait(Failed(why or "the chain failed"))
        except Exception as e:
            queue.put_nowait(_cancelled_frame(e) or Failed(_error_text(e)))
        finally:
            queue.put_nowait(None)

    task = asyncio.ensure_future(run())
    try:
        while (frame := await queue.get()) is not None:
            yield frame
    finally:
        if not task.done():
            task.cancel()  # the client went away: every branch of the chain is cancelled
            await asyncio.gather(task, return_exceptions=True)


RUN_CANCELLED = "run_cancelled"  # Failed.code of a durable chain run cancelled by someone else


class ChainDispatcher(Protocol):
    """What a chain run on Temporal workers needs of the server's dispatcher
    (durable_dispatch.TemporalDispatcher, `serve --temporal`)."""

    @property
    def store(self) -> Store: ...

    @property
    def closing(self) -> bool: ...

    async def start_chain(self, chain_id: str, msg: RuleMsg, *, run_id: str | None = None,
                          stream: bool = False, trace: bool = False) -> DurableChainRun: ...


async def _durable_chain(durable: ChainDispatcher, chain_id: str, msg: RuleMsg, run_id: str | None,
                         on_stream: Callable[[RuleMsg], None] | None,
                         on_trace: Callable[[Any], None] | None = None) -> list[End]:
    run = await durable.start_chain(chain_id, msg, run_id=run_id, stream=on_stream is not None,
                                    trace=on_trace is not None)
    try:
        if on_stream is not None:  # the frames as the workers log them (the store they share with us)
            async for f in run.stream(durable.store, on_trace=on_trace):
                on_stream(f)
        ends = await run.result()
    except asyncio.CancelledError:  # the client went away, or the run was cancelled: so is the workflow
        if durable.closing:  # ... unless the server is shutting down: the run is the workers' to finish
            log.info("chain run %s: left to the workers (the server is shutting down)", run.run_id)
            raise
        try:
            await run.cancel()
        except Exception as e:  # ended meanwhile, or Temporal unreachable: nothing more to stop here
            log.warning("chain run %s: cannot cancel its workflow: %s", run.run_id, e)
        raise
    return list(ends)


def _cancelled_frame(e: BaseException) -> Failed | None:
    """The end of a durable chain run whose workflow someone else cancelled (DurableRunError)."""
    if getattr(e, "error_type", None) != "CancelledError":  # durable.chain_client.CANCELLED
        return None
    return Failed("the run was cancelled", code=RUN_CANCELLED)


def _usage(md: dict[str, str]) -> Usage:
    def num(k: str) -> int:
        try:
            return int(md.get(k, "0"))
        except ValueError:
            return 0

    return Usage(num("prompt_tokens"), num("completion_tokens"), num("total_tokens"))


def _args(text: str) -> Any:
    try:
        return orjson.loads(text or "{}")
    except orjson.JSONDecodeError:
        return text


def _error_text(e: BaseException) -> str:
    return str(e) or type(e).__name__
