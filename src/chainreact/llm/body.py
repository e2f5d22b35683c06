"""Response bodies to stream items: SSE or a JSON completion, decided by the body, not the headers.

Providers mislabel: recorded streams arrive as `application/json` or with no content type, and some
servers ignore `stream: true` and answer one JSON object. So the first non-blank byte decides: `{` (or
`[`) is a JSON document, anything else is SSE.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

import orjson

from chainreact.errors import EmptyResponseError, MalformedResponseError
from chainreact.types import ModelResponse, ReasoningChunk, StreamItem, TextChunk, ToolCallChunk

from .parse import StreamAssembler, as_malformed, loads, parse_completion, stream_error
from .sse import SSEDecoder

_DONE = b"[DONE]"
_WS = b" \t\r\n\xef\xbb\xbf"  # whitespace and a UTF-8 BOM
_HEAD = 300  # bytes of a body shown when it is not a completion
_SSE_STARTS = (b"data", b"event", b":", b"id", b"retry")


def response_items(resp: ModelResponse) -> list[StreamItem]:
    """A complete response as the stream items a streaming call would have produced, then the response
    itself (used when an endpoint cannot stream a request, so callers keep one code path)."""
    items: list[StreamItem] = []
    m = resp.message
    if m.reasoning:
        items.append(ReasoningChunk(m.reasoning))
    if m.text:
        items.append(TextChunk(m.text))
    for i, tc in enumerate(m.tool_calls or ()):
        items.append(ToolCallChunk(i, tc.id, tc.name, tc.arguments))
    items.append(resp)
    return items


def _event_objects(data: bytes, endpoint: str) -> Iterable[Any]:
    try:
        return (orjson.loads(data),)
    except orjson.JSONDecodeError:
        if b"\n" not in data:
            raise
    # Several `data:` lines without blank lines between them: one JSON object per line.
    return [loads(line, endpoint) for line in data.split(b"\n") if line.strip()]


class BodyParser:
    """Push-style parser for one response body. `feed(bytes, out)` appends stream items to `out`;
    `finish()` returns the ModelResponse. Raises ModelError subclasses for error objects, malformed
    JSON, an empty body or a stream without finish_reason."""

    __slots__ = ("_asm", "_content_type", "_done", "_endpoint", "_head", "_json", "_mode", "_sse", "_status")

    def __init__(self, endpoint: str = "", *, status: int = 200, content_type: str = "") -> None:
        self._endpoint = endpoint
        self._status = status
        self._content_type = content_type
        self._mode = 0  # 0 = undecided, 1 = SSE, 2 = JSON document
        self._sse = SSEDecoder()
        self._asm = StreamAssembler(endpoint)
        self._json: list[bytes] = []
        self._done = False
        self._head = b""  # the body's first bytes, to show when it is not a completion at all

    def feed(self, chunk: bytes, out: list[StreamItem]) -> None:
        """Raises ModelError subclasses only: a shape the parser did not expect is a retryable
        MalformedResponseError, never a raw TypeError/AttributeError."""
        try:
            self._feed(chunk, out)
        except (TypeError, AttributeError, KeyError, IndexError, ValueError) as e:
            raise as_malformed(e, self._endpoint) from e

    def _feed(self, chunk: bytes, out: list[StreamItem]) -> None:
        if self._mode == 1:
            if not self._done:
                self._events(self._sse.feed(chunk), out)
            return
        if self._mode == 2:
            self._json.append(chunk)
            return
        stripped = chunk.lstrip(_WS)
        if not stripped:
            self._json.append(chunk)  # leading blank lines: undecided yet
            return
        head = stripped[:1]
        self._head = stripped[:_HEAD]
        if head in (b"{", b"["):
            self._mode = 2
            self._json.append(chunk)
        else:
            self._mode = 1
            self._json.clear()
            self._events(self._sse.feed(stripped), out)

    def _events(self, events: list[tuple[str | None, bytes]], out: list[StreamItem]) -> None:
        asm = self._asm
        for name, data in events:
            if self._done:
                return
            if data == _DONE:
                self._done = True  # anything after [DONE] is not part of the answer
                return
            if not data:
                continue
            try:
                objs = _event_objects(data, self._endpoint)
            except orjson.JSONDecodeError:
                shown = data[:200].decode("utf-8", "replace")
                raise MalformedResponseError(
                    f"{self._endpoint}: invalid JSON in stream event: {shown!r}",
                    endpoint=self._endpoint, retryable=True, body=data[:4000].decode("utf-8", "replace"),
                ) from None
            for obj in objs:
                if name == "error" and isinstance(obj, dict) and obj.get("error") is None:
                    raise stream_error({"error": obj}, self._endpoint)
                asm.feed(obj, out)

    def finish(self, out: list[StreamItem] | None = None) -> ModelResponse:
        try:
            return self._finish(out)
        except (TypeError, AttributeError, KeyError, IndexError, ValueError) as e:
            raise as_malformed(e, self._endpoint) from e

    def _what(self) -> str:
        ct = self._content_type.split(";")[0].strip()
        return f"HTTP {self._status}" + (f" ({ct})" if ct else " (no content type)")

    def _not_a_completion(self, excerpt: bytes) -> MalformedResponseError:
        shown = excerpt[:_HEAD].decode("utf-8", "replace")
        return MalformedResponseError(
            f"{self._endpoint}: {self._what()} but the body is not a chat completion: {shown!r} (is `url` "
            "the API base, e.g. https://host/v1, and not a web page or proxy?)",
            endpoint=self._endpoint, retryable=True, status=self._status, body=shown,
        )

    def _finish(self, out: list[StreamItem] | None) -> ModelResponse:
        if self._mode == 1:
            if not self._done:
                events = self._sse.close()
                if events:
                    extra: list[StreamItem] = []
                    self._events(events, extra if out is None else out)
            if self._asm.chunks == 0 and not self._done and not self._head.startswith(_SSE_STARTS):
                raise self._not_a_completion(self._head)  # e.g. an HTML page served with 200
            return self._asm.finish()
        body = b"".join(self._json)
        if not body.strip(_WS):
            raise EmptyResponseError(
                f"{self._endpoint}: {self._what()} with an empty body (expected a chat completion)",
                endpoint=self._endpoint, retryable=True,
            )
        obj = loads(body, self._endpoint)
        if isinstance(obj, list) and obj and isinstance(obj[0], dict) and obj[0].get("error") is not None:
            obj = obj[0]  # Gemini wraps errors in a one-element list
        if not isinstance(obj, dict) or ("choices" not in obj and obj.get("error") is None):
            raise self._not_a_completion(body.strip(_WS))
        return parse_completion(obj, self._endpoint)

    @property
    def streamed(self) -> bool:
        """True when the body was SSE (items were produced while reading)."""
        return self._mode == 1


def parse_body(body: bytes, endpoint: str = "") -> tuple[list[StreamItem], ModelResponse]:
    """Parse a whole body at once: (stream items, response). For tests and replay tools."""
    p = BodyParser(endpoint)
    items: list[StreamItem] = []
    p.feed(body, items)
    resp = p.finish(items)
    return items, resp


async def aparse(chunks: AsyncIterator[bytes], endpoint: str = "") -> AsyncIterator[StreamItem]:
    """Items from an async byte stream, then the ModelResponse. A JSON document (no SSE) yields the
    synthesized items of `response_items` so a streaming caller sees the same shape."""
    p = BodyParser(endpoint)
    out: list[StreamItem] = []
    async for chunk in chunks:
        p.feed(chunk, out)
        if out:
            for item in out:
                yield item
            out.clear()
    resp = p.finish(out)
    if p.streamed:
        for item in out:
            yield item
        yield resp
    else:
        for item in response_items(resp):
            yield item
