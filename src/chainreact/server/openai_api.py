"""OpenAI-compatible chat completions over frames: one completion object, or SSE chunks.

SSE framing (RuleGo's and OpenAI's): one `chat.completion.chunk` per text frame (`delta.content`, or
`delta.reasoning_content`), tool frames only for `X-Stream-Protocol: agui` clients (as
`delta.tool_calls: [event]`), then a chunk with `finish_reason: "stop"` and the usage, then
`data: [DONE]`. A run that waits for the client's own tools (Calls) ends with one chunk per call
(`delta.tool_calls: [{index, id, type, function}]`) and `finish_reason: "tool_calls"`. A failure inside
the stream is `data: {"error": {"message", "type": "stream_error"}}`.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from ..types import ToolCall
from .chat_messages import message_problem
from .frames import Calls, Done, Failed, Frame, Reasoning, Text, Tool, Warn
from .sse import DONE, SSE_HEADERS, sse


def error(status: int, message: str, type_: str = "invalid_request_error", code: str | None = None,
          headers: dict[str, str] | None = None, extra: dict[str, Any] | None = None) -> JSONResponse:
    """OpenAI's error shape; `extra` fields go beside message/type/param/code (clients ignore others)."""
    body = {"error": {"message": message, "type": type_, "param": None, "code": code, **(extra or {})}}
    return JSONResponse(body, status_code=status, headers=headers)


def json_object(raw: bytes) -> dict[str, Any] | JSONResponse:
    """The request body as a JSON object, or the 400 that says it is not one."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        return error(400, f"the request body is not valid JSON: {e}")
    if not isinstance(body, dict):
        return error(400, "the request body must be a JSON object")
    return body


def parse_chat_request(raw: bytes) -> dict[str, Any] | JSONResponse:
    """The request body as a dict, or the 400 that says what is wrong with it."""
    body = json_object(raw)
    if isinstance(body, JSONResponse):
        return body
    bad = message_problem(body.get("messages"))
    if bad is not None:
        return error(400, bad[1], code="invalid_messages", extra={"param": bad[0]})
    if "stream" in body and not isinstance(body["stream"], bool):
        return error(400, "'stream' must be true or false")
    return body


def agent_input(body: dict[str, Any]) -> dict[str, Any]:
    """What the agent's input contract reads from an OpenAI request: the messages."""
    msgs = [{**m, "role": "system"} if m.get("role") == "developer" else m for m in body["messages"]]
    return {"messages": msgs}


async def respond(request: Request, frames: AsyncIterator[Frame], model: str, stream: bool) -> Response:
    cid = "chatcmpl-" + secrets.token_hex(12)
    created = int(time.time())
    if not stream:
        return await _completion(frames, cid, created, model)
    return _streaming(coalesce(_sse(frames, SseEncoder(cid, created, model, agui(request)))))


def respond_batches(request: Request, batches: AsyncIterator[list[Frame]], model: str) -> Response:
    """A streamed answer from batches of frames that were ready together (a run registry's listener
    queue, drained): one write per batch, in the task that sends, so unlike `coalesce` it needs no
    producer task and no queue of its own: the first text reaches the socket one task switch after the
    run produced it."""
    enc = SseEncoder("chatcmpl-" + secrets.token_hex(12), int(time.time()), model, agui(request))
    return _streaming(encode_batches(batches, enc))


def agui(request: Request) -> bool:
    """Whether the client asked for tool frames too (X-Stream-Protocol: agui)."""
    return request.headers.get("x-stream-protocol", "").lower() == "agui"


def _streaming(body: AsyncIterator[bytes]) -> StreamingResponse:
    return SseResponse(body, media_type="text/event-stream", headers=SSE_HEADERS)


class SseResponse(StreamingResponse):
    """Starlette's StreamingResponse without its anyio task group (under uvicorn's ASGI 2.3 it makes one
    per response: ~100 us of CPU, a fifth of what the server adds to a streamed request). The body is sent
    in the request's own task while a plain asyncio task waits for the client to leave; if it does, the
    sending is cancelled, which closes the body iterator (and so cancels the run), as Starlette does."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        me = asyncio.current_task()
        if scope["type"] != "http" or me is None:
            await super().__call__(scope, receive, send)
            return
        gone = False

        async def watch() -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            gone = True
            me.cancel()

        watcher = asyncio.ensure_future(watch())
        try:
            await self.stream_response(send)
        except asyncio.CancelledError:
            # Our own cancellation (the client left) ends the response quietly; anyone else's goes on.
            if not gone or me.uncancel() > 0:
                raise
        finally:
            watcher.cancel()


async def _completion(frames: AsyncIterator[Frame], cid: str, created: int, model: str) -> Response:
    text: list[str] = []
    reasoning: list[str] = []
    warning: Warn | None = None
    async for f in frames:
        if isinstance(f, Failed):
            return error(f.status, f.message, f.type, f.code, extra=f.details)
        if isinstance(f, Done):
            message: dict[str, Any] = {"role": "assistant", "content": f.content}
            if reasoning:
                message["reasoning_content"] = "".join(reasoning)
            body = {"id": cid, "object": "chat.completion", "created": created, "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": f.usage.to_dict()}
            if warning is not None:  # chainreact's extension: not a normal answer (the run reached maxStep)
                body["warning"] = warning.to_dict()
            return JSONResponse(body)
        if isinstance(f, Warn):
            warning = f
        if isinstance(f, Calls):  # the run waits for the client's own tools
            message = {"role": "assistant", "content": f.content or None,
                       "tool_calls": [_call(c) for c in f.calls]}
            return JSONResponse({
                "id": cid, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": f.usage.to_dict(),
            })
        if isinstance(f, Text):
            text.append(f.text)
        elif isinstance(f, Reasoning):
            reasoning.append(f.text)
    return error(500, "the run ended without an answer", "server_error")


def _call(c: ToolCall, index: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": c.arguments}}
    return out if index is None else {"index": index, **out}


def _chunk(cid: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None,
           usage: dict[str, int] | None = None, warning: Warn | None = None) -> bytes:
    body: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    if warning is not None:  # chainreact's extension, as in the completion object
        body["warning"] = warning.to_dict()
    return sse(body)


class SseEncoder:
    """A stream's frames as SSE bytes, one frame at a time: the first chunk carries the role; `done` once
    the stream's last frame (Done, Failed) was encoded, after which nothing more is sent."""

    __slots__ = ("agui", "cid", "created", "done", "first", "model", "texts", "warning")

    def __init__(self, cid: str, created: int, model: str, agui: bool) -> None:
        self.cid, self.created, self.model, self.agui = cid, created, model, agui
        self.first = True
        self.texts = False
        self.done = False
        self.warning: Warn | None = None

    def encode(self, f: Frame) -> bytes:
        """The bytes of frame `f` (b"" for a frame not sent to this client)."""
        cid, created, model = self.cid, self.created, self.model
        if isinstance(f, Text | Reasoning):
            delta: dict[str, Any] = {"content": f.text} if isinstance(f, Text) else \
                {"reasoning_content": f.text}
            self.texts = self.texts or isinstance(f, Text)
            if self.first:
                delta["role"] = "assistant"
                self.first = False
            return _chunk(cid, created, model, delta)
        if isinstance(f, Tool):
            return _chunk(cid, created, model, {"tool_calls": [f.event]}) if self.agui else b""
        if isinstance(f, Done):
            self.done = True
            out = b""
            if not self.texts and f.content:
                # A chain whose nodes do not stream (no Stream frames) still answers: its Success
                # message, in one chunk.
                delta = {"role": "assistant", "content": f.content} if self.first else {"content": f.content}
                out = _chunk(cid, created, model, delta)
            usage = f.usage.to_dict() if f.usage.total_tokens else None
            end = _chunk(cid, created, model, {}, "stop", usage, self.warning)
            return out + end + DONE
        if isinstance(f, Warn):  # goes out in the last chunk, with the finish_reason
            self.warning = f
            return b""
        if isinstance(f, Calls):  # the run waits for the client's own tools: their calls, then the end
            self.done = True
            parts = []
            if f.content and not self.texts:
                parts.append(_chunk(cid, created, model, {"role": "assistant", "content": f.content}))
                self.first = False
            for i, c in enumerate(f.calls):
                calls: dict[str, Any] = {"tool_calls": [_call(c, i)]}
                if self.first:
                    calls["role"] = "assistant"
                    self.first = False
                parts.append(_chunk(cid, created, model, calls))
            usage = f.usage.to_dict() if f.usage.total_tokens else None
            end = _chunk(cid, created, model, {}, "tool_calls", usage)
            return b"".join(parts) + end + DONE
        if isinstance(f, Failed):
            self.done = True
            return sse({"error": {"message": f.message, "type": "stream_error", "code": f.code,
                                  **(f.details or {})}})
        return b""


async def _sse(frames: AsyncIterator[Frame], enc: SseEncoder) -> AsyncIterator[bytes]:
    try:
        async for f in frames:
            data = enc.encode(f)
            if data:
                yield data
            if enc.done:
                return
    finally:
        await frames.aclose()  # type: ignore[attr-defined]


class FrameEncoder(Protocol):
    done: bool

    def encode(self, f: Frame) -> bytes: ...


async def encode_batches(batches: AsyncIterator[list[Frame]], enc: FrameEncoder) -> AsyncIterator[bytes]:
    """Each batch of frames as one piece of bytes, until the encoder has encoded the stream's last frame
    (SseEncoder here, responses_out.ResponsesEncoder for the Responses API)."""
    try:
        async for batch in batches:
            parts = []
            for f in batch:
                parts.append(enc.encode(f))
                if enc.done:
                    break
            data = b"".join(parts)
            if data:
                yield data
            if enc.done:
                return
    finally:
        await batches.aclose()  # type: ignore[attr-defined]


# Chunks produced ahead of a client that reads slower than the run streams; past this the run waits.
_AHEAD = 256


async def coalesce(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """`chunks`, joined when several are ready at once: one socket write per burst instead of one per chunk.

    A model's stream often arrives many deltas per read (a fast model, a busy server): each chunk alone
    costs a send() and a wake-up of the reader, which was most of the server's own CPU per streamed
    request. The chunks are produced in a task; whatever it produced while this side was sending goes out
    together. Nothing waits for a batch to fill: a chunk that comes alone is sent alone at once, and the
    first chunk goes out before the rest of its burst is produced (time to first token). Closing this
    iterator (the client went away) cancels the task, which closes `chunks` (and so cancels the run).
    """
    queue: asyncio.Queue[bytes | None] = asyncio.Queue(_AHEAD)

    async def pump() -> None:
        try:
            first = True
            async for chunk in chunks:
                await queue.put(chunk)
                if first:
                    first = False
                    await asyncio.sleep(0)  # the consumer sends it now, not after its whole burst
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]
            # Wake the consumer, also after a failure. Never blocks: a full queue means the consumer is
            # not waiting, and it stops once the queue is empty and this task is done.
            if not queue.full():
                queue.put_nowait(None)

    task = asyncio.ensure_future(pump())
    try:
        while not (queue.empty() and task.done()):
            parts = [await queue.get()]
            while not queue.empty():
                parts.append(queue.get_nowait())
            ended = parts[-1] is None
            data = b"".join(p for p in parts if p is not None)
            if data:
                yield data
            if ended:
                break
        await task  # a failure of the producer is this stream's failure
    finally:
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
