"""OpenAI's Responses API, the answer side: a run's frames (frames.py) as one `response` object, or as the
Responses event stream.

Output items: a `reasoning` item (the model's reasoning, as `reasoning_text` content), a `message` item
(the answer, one `output_text` part), and a `function_call` item per call of the client's own tools that
the run waits on (`call_id`: the id to answer with a `function_call_output` item). Streamed, in order:

    response.created, response.in_progress
    per item: response.output_item.added
        message:   response.content_part.added, response.output_text.delta..., response.output_text.done,
                   response.content_part.done
        reasoning: response.reasoning_text.delta..., response.reasoning_text.done
        function_call: response.function_call_arguments.delta, response.function_call_arguments.done
    response.output_item.done
    response.completed (the whole response, usage included)  |  response.failed (its `error`)

Every event has `type` and a `sequence_number`, and goes out as `event: <type>` / `data: <json>`.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import JSONResponse, Response

from ..types import ToolCall, Usage
from .frames import Calls, Done, Failed, Frame, Reasoning, Text
from .openai_api import encode_batches, error
from .sse import sse


def usage_of(u: Usage) -> dict[str, Any]:
    return {"input_tokens": u.prompt_tokens,
            "input_tokens_details": {"cached_tokens": u.cached_tokens, "cache_write_tokens": 0},
            "output_tokens": u.completion_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": u.total_tokens}


class ResponseShell:
    """The fields of one response that every event repeats (id, model, the request's echoes)."""

    def __init__(self, rid: str, model: str, body: dict[str, Any]):
        self.rid, self.model, self.created = rid, model, int(time.time())
        self.echo = {"instructions": body.get("instructions"), "metadata": body.get("metadata") or {},
                     "parallel_tool_calls": body.get("parallel_tool_calls", True),
                     "previous_response_id": body.get("previous_response_id"),
                     "temperature": body.get("temperature"), "top_p": body.get("top_p"),
                     "tool_choice": body.get("tool_choice") or "auto", "tools": body.get("tools") or [],
                     "text": body.get("text") or {"format": {"type": "text"}}, "user": body.get("user")}

    def object(self, status: str, output: list[dict[str, Any]], usage: Usage | None = None,
               error: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"id": self.rid, "object": "response", "created_at": self.created, "status": status,
                "model": self.model, "output": output, "error": error, "incomplete_details": None,
                "usage": usage_of(usage) if usage is not None else None, **self.echo}


def message_item(text: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "message", "id": "msg_" + secrets.token_hex(12), "status": status, "role": "assistant",
            "content": [_text_part(text)] if status == "completed" else []}


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def reasoning_item(text: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "reasoning", "id": "rs_" + secrets.token_hex(12), "status": status, "summary": [],
            "content": [{"type": "reasoning_text", "text": text}] if status == "completed" else []}


def call_item(c: ToolCall, status: str = "completed") -> dict[str, Any]:
    return {"type": "function_call", "id": "fc_" + secrets.token_hex(12), "call_id": c.id, "name": c.name,
            "arguments": c.arguments if status == "completed" else "", "status": status}


def failure(f: Failed) -> dict[str, Any]:
    return {"code": f.code or f.type, "message": f.message, **(f.details or {})}


async def completion(frames: AsyncIterator[Frame], shell: ResponseShell) -> Response:
    """A response that is not streamed: the `response` object, or the run's failure as an HTTP error."""
    text: list[str] = []
    reasoning: list[str] = []
    async for f in frames:
        if isinstance(f, Text):
            text.append(f.text)
        elif isinstance(f, Reasoning):
            reasoning.append(f.text)
        elif isinstance(f, Failed):
            return error(f.status, f.message, f.type, f.code, extra=f.details)
        elif isinstance(f, Done | Calls):
            output = [reasoning_item("".join(reasoning))] if reasoning else []
            if f.content:
                output.append(message_item(f.content))
            if isinstance(f, Calls):
                output.extend(call_item(c) for c in f.calls)
            return JSONResponse(shell.object("completed", output, f.usage))
    return error(500, "the run ended without an answer", "server_error")


class ResponsesEncoder:
    """A run's frames as Responses events (module doc), one frame at a time; `done` after the last."""

    def __init__(self, shell: ResponseShell):
        self.shell = shell
        self.seq = 0
        self.output: list[dict[str, Any]] = []  # the items completed so far
        self.open: dict[str, Any] | None = None  # the item being streamed
        self.pieces: list[str] = []  # its text so far
        self.texts = False  # answer text was streamed
        self.done = False

    def _ev(self, kind: str, **fields: Any) -> bytes:
        body = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return sse(body, event=kind)

    def start(self) -> bytes:
        created = self.shell.object("in_progress", [])
        return self._ev("response.created", response=created) + \
            self._ev("response.in_progress", response=created)

    def _index(self) -> int:
        return len(self.output)

    def _open(self, item: dict[str, Any]) -> bytes:
        self.open, self.pieces = item, []
        out = self._ev("response.output_item.added", output_index=self._index(), item=item)
        if item["type"] == "message":
            out += self._ev("response.content_part.added", item_id=item["id"], output_index=self._index(),
                            content_index=0, part=_text_part(""))
        return out

    def _close(self) -> bytes:
        item = self.open
        if item is None:
            return b""
        text, at = "".join(self.pieces), {"item_id": item["id"], "output_index": self._index()}
        if item["type"] == "message":
            part = _text_part(text)
            out = self._ev("response.output_text.done", **at, content_index=0, text=text, logprobs=[]) + \
                self._ev("response.content_part.done", **at, content_index=0, part=part)
            item = {**item, "status": "completed", "content": [part]}
        else:
            out = self._ev("response.reasoning_text.done", **at, content_index=0, text=text)
            item = {**item, "status": "completed", "content": [{"type": "reasoning_text", "text": text}]}
        out += self._ev("response.output_item.done", output_index=self._index(), item=item)
        self.output.append(item)
        self.open = None
        return out

    def _piece(self, kind: str, text: str) -> bytes:
        out = b""
        if self.open is None or self.open["type"] != kind:
            out = self._close() + self._open(message_item("", "in_progress") if kind == "message"
                                              else reasoning_item("", "in_progress"))
        assert self.open is not None
        self.pieces.append(text)
        at = {"item_id": self.open["id"], "output_index": self._index(), "content_index": 0, "delta": text}
        if kind == "message":
            return out + self._ev("response.output_text.delta", **at, logprobs=[])
        return out + self._ev("response.reasoning_text.delta", **at)

    def encode(self, f: Frame) -> bytes:
        if isinstance(f, Text):
            self.texts = True
            return self._piece("message", f.text)
        if isinstance(f, Reasoning):
            return self._piece("reasoning", f.text)
        if isinstance(f, Done | Calls):
            self.done = True
            out = b""
            if f.content and not self.texts:  # the answer came whole (not streamed, or checked first)
                out += self._piece("message", f.content)
            out += self._close()
            if isinstance(f, Calls):
                for c in f.calls:
                    out += self._call(c)
            return out + self._ev("response.completed",
                                  response=self.shell.object("completed", self.output, f.usage))
        if isinstance(f, Failed):
            self.done = True
            out = self._close()
            return out + self._ev("response.failed",
                                  response=self.shell.object("failed", self.output, error=failure(f)))
        return b""  # tool and trace frames are not part of this API

    def _call(self, c: ToolCall) -> bytes:
        item = call_item(c, "in_progress")
        at = {"item_id": item["id"], "output_index": self._index()}
        out = self._ev("response.output_item.added", output_index=self._index(), item=item) + \
            self._ev("response.function_call_arguments.delta", **at, delta=c.arguments) + \
            self._ev("response.function_call_arguments.done", **at, arguments=c.arguments, name=c.name)
        done = {**item, "arguments": c.arguments, "status": "completed"}
        out += self._ev("response.output_item.done", output_index=self._index(), item=done)
        self.output.append(done)
        return out


async def events(batches: AsyncIterator[list[Frame]], enc: ResponsesEncoder) -> AsyncIterator[bytes]:
    """The stream's bytes: the opening events, then each batch of frames' (one write per batch), until
    the last frame. The opening events go out with the first batch: the batches are being read from
    the first write on, so a client that leaves at any point closes them (and so cancels the run)."""
    opening = enc.start()
    async for data in encode_batches(batches, enc):
        yield opening + data
        opening = b""
    if not enc.done:
        yield opening + enc.encode(Failed("the run ended without an answer"))


async def singles(frames: AsyncIterator[Frame]) -> AsyncIterator[list[Frame]]:
    """Frames one by one as batches (a chain's or a flow's)."""
    try:
        async for f in frames:
            yield [f]
    finally:
        await frames.aclose()  # type: ignore[attr-defined]


async def flat(batches: AsyncIterator[list[Frame]]) -> AsyncIterator[Frame]:
    """Batches of frames as frames."""
    try:
        async for batch in batches:
            for f in batch:
                yield f
    finally:
        await batches.aclose()  # type: ignore[attr-defined]
