"""Writing a rendered turn to the wire: JSON completions, SSE streams, raw replays, and their faults."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping
from typing import Any

import orjson

from ._http import FRAMING_HEADERS, ResponseWriter
from .turns import Pause, RenderContext, error_payload, render_completion, render_stream

JSON = "application/json"
SSE = "text/event-stream; charset=utf-8"


async def send_completion(
    turn: dict[str, Any],
    ctx: RenderContext,
    rw: ResponseWriter,
    status: int,
    base: list[tuple[str, str]],
) -> None:
    fault = turn.get("fault")
    headers = response_headers(turn, JSON, base)
    if fault == "error_event":
        # A 200 whose body is an error object: what some providers send instead of a 4xx/5xx.
        data = orjson.dumps(error_payload(turn, None, "FakeLLM scripted error in a 200 response"))
        await rw.send(status, headers, data)
        return
    data = orjson.dumps(render_completion(turn, ctx))
    if fault == "malformed":
        await rw.send(status, headers, data[: len(data) // 2])
    elif fault == "disconnect":
        await rw.send_partial(status, headers, data, len(data) // 2)
        rw.cut()
    else:
        await rw.send(status, headers, data)


async def send_stream(
    turn: dict[str, Any],
    ctx: RenderContext,
    include_usage: bool,
    rw: ResponseWriter,
    status: int,
    base: list[tuple[str, str]],
) -> None:
    events: list[bytes | Pause] = [
        item if isinstance(item, Pause) else b"data: " + orjson.dumps(item) + b"\n\n"
        for item in render_stream(turn, ctx, include_usage)
    ]
    headers = response_headers(turn, SSE, [*base, ("cache-control", "no-cache")])
    await rw.start_chunked(status, headers)
    fault = turn.get("fault")
    after = int(turn.get("after_chunks", 1))
    delay = float(turn.get("chunk_delay", 0))
    sent = 0
    fault_done = fault not in ("disconnect", "malformed", "error_event")
    for ev in events:
        if isinstance(ev, Pause):
            await asyncio.sleep(ev.seconds)
            continue
        if not fault_done and sent == after:
            fault_done = True
            if not await _stream_fault(turn, rw, ev):
                return
        if sent and delay:
            await asyncio.sleep(delay)
        await rw.chunk(ev)
        sent += 1
    if not fault_done and not await _stream_fault(turn, rw, b"data: {}\n\n"):
        return
    if delay:
        await asyncio.sleep(delay)
    await rw.chunk(b"data: [DONE]\n\n")
    await rw.end_chunked()


async def _stream_fault(turn: dict[str, Any], rw: ResponseWriter, next_event: bytes) -> bool:
    """Inject the turn's stream fault; False when the stream ends here."""
    fault = turn["fault"]
    if fault == "disconnect":
        rw.cut()
        return False
    if fault == "malformed":
        # The next chunk's JSON cut in half: what a proxy that splits an event produces.
        payload = next_event[len(b"data: ") : -2]
        await rw.chunk(b"data: " + payload[: max(1, len(payload) // 2)] + b"\n\n")
        return True
    data = orjson.dumps(error_payload(turn, None, "FakeLLM scripted error event in the stream"))
    await rw.chunk(b"data: " + data + b"\n\n")
    await rw.chunk(b"data: [DONE]\n\n")
    await rw.end_chunked()
    return False


async def send_raw(
    turn: dict[str, Any], rw: ResponseWriter, status: int, base: list[tuple[str, str]]
) -> None:
    if "raw_body_b64" in turn:
        data = base64.b64decode(turn["raw_body_b64"])
    else:
        data = turn["raw_body"].encode("utf-8")
    looks_sse = data.lstrip().startswith((b"data:", b"event:", b":"))
    headers = response_headers(turn, SSE if looks_sse else JSON, base)
    ctype = next(v for k, v in headers if k == "content-type")
    fault = turn.get("fault")
    if fault == "empty":
        await rw.send(status, headers, b"")
        return
    if "event-stream" not in ctype.lower():
        if fault == "disconnect":
            await rw.send_partial(status, headers, data, len(data) // 2)
            rw.cut()
        else:
            await rw.send(status, headers, data)
        return
    # One HTTP chunk per SSE event, so chunk_delay and disconnect act at event boundaries.
    pieces = data.split(b"\n\n")
    events = [p + b"\n\n" for p in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    after = int(turn.get("after_chunks", 1))
    delay = float(turn.get("chunk_delay", 0))
    await rw.start_chunked(status, headers)
    for i, ev in enumerate(events):
        if fault == "disconnect" and i == after:
            rw.cut()
            return
        if i and delay:
            await asyncio.sleep(delay)
        await rw.chunk(ev)
    if fault == "disconnect":
        rw.cut()
        return
    await rw.end_chunked()


def response_headers(
    turn: Mapping[str, Any], default_ctype: str, base: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Scripted headers minus framing ones, plus a content-type: `content_type` key, scripted, or default."""
    ctype = turn.get("content_type")
    scripted: list[tuple[str, str]] = []
    for name, value in (turn.get("headers") or {}).items():
        key = name.lower()
        if key in FRAMING_HEADERS:
            continue
        if key == "content-type":
            ctype = ctype or str(value)
            continue
        scripted.append((key, str(value)))
    names = {k for k, _ in scripted}
    # A scripted header replaces the server's own of the same name (a recorded x-request-id, say).
    out = [(k, v) for k, v in base if k not in names] + scripted
    out.append(("content-type", ctype or default_ctype))
    return out


def error_obj(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def error_json(message: str) -> bytes:
    return orjson.dumps(error_obj(message, "bad_request"))


async def send_json(rw: ResponseWriter, status: int, obj: Any) -> None:
    await rw.send(status, [("content-type", JSON)], orjson.dumps(obj))
