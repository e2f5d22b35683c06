"""Server-sent events: the one encoder of every SSE stream the server sends (OpenAI chunks, the runs API's
events, a flow turn's events), and the headers those responses carry.

    sse(data)                       data: <JSON>\\n\\n
    sse(data, event="end")          event: end\\ndata: <JSON>\\n\\n
    sse(data, event=t, id=n)        id: <n>\\nevent: <t>\\ndata: <JSON>\\n\\n   (resumable with Last-Event-ID)
"""

from __future__ import annotations

from typing import Any

import orjson

SSE_HEADERS = {
    "Cache-Control": "no-cache, no-transform",
    "Connection": "keep-alive",
    "X-Accel-Buffering": "no",
}
DONE = b"data: [DONE]\n\n"  # OpenAI's end of a stream


def sse(data: Any, *, event: str | None = None, id: int | str | None = None) -> bytes:
    """One event: `data` as one line of JSON (orjson: never a raw newline), after its `id` and `event`
    lines when given (neither may hold a newline: they are the server's own names and counters)."""
    body = b"data: " + orjson.dumps(data) + b"\n\n"
    if event is None and id is None:
        return body
    head = "" if id is None else f"id: {id}\n"
    if event is not None:
        head += f"event: {event}\n"
    return head.encode() + body


__all__ = ["DONE", "SSE_HEADERS", "sse"]
