"""Fault suite, model endpoint: what a broken, hostile or unlucky endpoint does to the model client.

Every case runs over real sockets on 127.0.0.1 (FakeLLM, or a raw HTTP server where FakeLLM cannot send
the bytes, e.g. a compressed body) and checks the outcome a user sees: a typed ModelError, a retry, a
failover to a healthy backup, memory and time that stay bounded. Issue 9 item 3, issue 10 items 4, 5, 8.
"""

from __future__ import annotations

import asyncio
import base64
import tracemalloc
import zlib
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from chainreact.config import AgentConfig
from chainreact.errors import MalformedResponseError, ModelError
from chainreact.llm import ModelClient, RetryPolicy, reset_breakers
from chainreact.llm.sse import SSEDecoder
from chainreact.testing import FakeLLM
from chainreact.types import ClientEvent, Message, ModelResponse, RetryEvent, StreamItem


@pytest.fixture(autouse=True)
def fresh_breakers() -> Iterator[None]:
    reset_breakers()
    yield
    reset_breakers()


class Sleeps:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        self.waits.append(s)
        self.now += s


def client(url: str, *backups: str, real_clock: bool = False, **cfg: Any) -> tuple[ModelClient, Sleeps]:
    t = Sleeps()
    doc: dict[str, Any] = {"url": url, "model": "m", "maxRetries": 1, **cfg}
    doc["failover"] = [{"url": b} for b in backups]
    kw: dict[str, Any] = {} if real_clock else {"clock": t.clock, "sleep": t.sleep}
    kw.setdefault("max_response_bytes", cfg.pop("max_response_bytes", None) or 64 * 1024 * 1024)
    doc.pop("max_response_bytes", None)
    c = ModelClient.from_config(AgentConfig.model_validate(doc), rng=lambda: 0.0,
                                retry_policy=RetryPolicy(base_delay=0.01), **kw)
    return c, t


async def call(c: ModelClient, *, stream: bool, events: list[ClientEvent] | None = None
               ) -> tuple[list[StreamItem], ModelResponse]:
    items: list[StreamItem] = []
    try:
        async for item in c.call([Message("user", "hi")], stream=stream,
                                 on_event=None if events is None else events.append):
            items.append(item)
    finally:
        await c.aclose()
    last = items.pop()
    assert isinstance(last, ModelResponse)
    return items, last


def sse(*objs: Any) -> str:
    return "".join(f"data: {orjson.dumps(o).decode()}\n\n" for o in objs) + "data: [DONE]\n\n"


def chunk(**choice: Any) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, **choice}]}


def completion(message: Any = None, **top: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"object": "chat.completion", "model": "m",
                            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    body.update(top)
    return body


GOOD_MSG = {"role": "assistant", "content": "hi"}
CALL = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}

# Wrong-shaped answers (issue 10 item 4): each must be a retryable MalformedResponseError.
STREAM_SHAPES = {
    "choices-object": sse({"object": "chat.completion.chunk", "choices": {"0": {"delta": {}}}}),
    "choice-string": sse({"choices": ["hello"]}),
    "delta-string": sse(chunk(delta="hello")),
    "message-string": sse(chunk(message="hello", finish_reason="stop")),
    # (before any text: once text reached the caller, streamRetryMode "off" does not retry)
    "usage-number": sse({"choices": [], "usage": 12}, chunk(delta={"content": "a"}, finish_reason="stop")),
    "usage-field-junk": sse(chunk(delta={}, finish_reason="stop"),
                            {"choices": [], "usage": {"prompt_tokens": "many"}}),
    "content-number": sse(chunk(delta={"content": 5})),
    "tool_calls-object": sse(chunk(delta={"tool_calls": {"0": CALL}})),
    "tool_call-string": sse(chunk(delta={"tool_calls": ["f()"]})),
    "function-string": sse(chunk(delta={"tool_calls": [{**CALL, "function": "f"}]})),
    "function-name-list": sse(chunk(delta={"tool_calls": [{**CALL, "function": {"name": ["f"]}}]})),
    "tool-id-number": sse(chunk(delta={"tool_calls": [{**CALL, "id": 7}]})),
    "finish_reason-number": sse(chunk(delta={"content": "a"}, finish_reason=1)),
    "event-a-list": sse([1, 2]),
}
JSON_SHAPES = {
    "choices-object": {"object": "chat.completion", "choices": {"message": GOOD_MSG}},
    "choices-strings": {"object": "chat.completion", "choices": ["hi"]},
    "message-string": completion("hi"),
    "usage-number": completion(GOOD_MSG, usage=3),
    "usage-field-list": completion(GOOD_MSG, usage={"completion_tokens": [1]}),
    "content-object": completion({"role": "assistant", "content": {"text": "hi"}}),
    "tool_calls-object": completion({"role": "assistant", "tool_calls": {"0": CALL}}),
    "tool_call-string": completion({"role": "assistant", "tool_calls": ["f()"]}),
    "function-name-list": completion({"role": "assistant",
                                      "tool_calls": [{**CALL, "function": {"name": [1]}}]}),
    "function-number": completion({"role": "assistant", "tool_calls": [{**CALL, "function": 3}]}),
    "finish_reason-object": {"choices": [{"index": 0, "message": GOOD_MSG, "finish_reason": {}}]},
}
SHAPES = [(k, v, True) for k, v in STREAM_SHAPES.items()] + [(k, orjson.dumps(v).decode(), False)
                                                              for k, v in JSON_SHAPES.items()]


@pytest.mark.parametrize("name,body,stream", SHAPES,
                         ids=[f"{'sse' if s else 'json'}-{k}" for k, _, s in SHAPES])
async def test_wrong_shape_is_a_typed_retried_error_and_the_backup_answers(name: str, body: str,
                                                                          stream: bool) -> None:
    turn = {"raw_body": body, "content_type": "text/event-stream" if stream else "application/json"}
    async with FakeLLM([turn, turn]) as bad, FakeLLM([{"text": "from backup"}] * 2) as good:
        c, _ = client(bad.url)
        with pytest.raises(MalformedResponseError, match="not a valid chat completion") as ei:
            await call(c, stream=stream)
        assert ei.value.retryable and len(bad.chat_requests) == 2  # retried once (maxRetries 1)
        bad.add_turns([turn, turn])
        c, _ = client(bad.url, good.url)
        _, resp = await call(c, stream=stream)
        assert resp.message.content == "from backup" and resp.endpoint == good.url
        assert len(bad.chat_requests) == 4 and len(good.chat_requests) == 1


@pytest.mark.parametrize("status", [408, 429, 500, 501, 502, 503, 504, 505, 507, 520, 522, 524, 529, 599])
async def test_every_5xx_408_429_is_retried_then_failed_over(status: int) -> None:
    async with FakeLLM([{"status": status}] * 2) as bad, FakeLLM([{"text": "ok"}]) as good:
        events: list[ClientEvent] = []
        c, _ = client(bad.url, good.url)
        _, resp = await call(c, stream=False, events=events)
        assert resp.endpoint == good.url and len(bad.chat_requests) == 2
        assert [e.type for e in events] == ["retry", "breaker", "failover"]


async def test_keep_alive_comments_forever_end_at_the_deadline_and_the_backup_answers() -> None:
    # 60 s of keep-alive comments, never an answer; timeouts.total is 1 s.
    endless = {"raw_body": ": keep-alive\n\n" * 600, "chunk_delay": 0.1}
    async with FakeLLM([endless, endless]) as bad, FakeLLM([{"text": "ok"}]) as good:
        c, _ = client(bad.url, real_clock=True, timeouts={"total": 1})
        with pytest.raises(ModelError, match=r"timeouts\.total") as ei:
            await call(c, stream=True)
        assert ei.value.retryable and len(bad.chat_requests) == 1  # no time left for a retry
        c, _ = client(bad.url, good.url, real_clock=True, timeouts={"total": 1})
        _, resp = await call(c, stream=True)
        assert resp.endpoint == good.url and resp.message.content == "ok"


async def test_slow_first_byte_is_bounded_by_the_deadline_too() -> None:
    async with FakeLLM([{"text": "late", "first_byte_delay": 30}]) as bad:
        c, _ = client(bad.url, real_clock=True, maxRetries=1, timeouts={"total": 0.5, "read": 60})
        with pytest.raises(ModelError, match=r"timeouts\.total"):
            await call(c, stream=False)


async def test_retry_after_beyond_the_deadline_fails_at_once_and_fails_over() -> None:
    turn = {"status": 429, "headers": {"Retry-After": "86400"}, "message": "quota"}
    async with FakeLLM([turn, turn]) as bad, FakeLLM([{"text": "ok"}]) as good:
        c, t = client(bad.url, maxRetries=3)
        with pytest.raises(ModelError, match="Retry-After 86400s is beyond") as ei:
            await call(c, stream=False)
        assert t.waits == [] and len(bad.chat_requests) == 1 and ei.value.status == 429
        c, t = client(bad.url, good.url, maxRetries=3)
        _, resp = await call(c, stream=False)
        assert t.waits == [] and resp.endpoint == good.url


@pytest.mark.parametrize("value", ["nan", "-3", "-inf", "inf", "NaN"])
async def test_unusable_retry_after_is_ignored(value: str) -> None:
    async with FakeLLM([{"status": 503, "headers": {"Retry-After": value}}, {"text": "ok"}]) as srv:
        c, t = client(srv.url)
        events: list[ClientEvent] = []
        _, resp = await call(c, stream=False, events=events)
        assert resp.message.content == "ok" and t.waits == [0.01]  # the normal backoff
        (ev,) = events
        assert isinstance(ev, RetryEvent) and ev.attempt == 1 and ev.error_type == "ModelError"


async def test_redirect_to_another_origin_is_refused() -> None:
    async with FakeLLM([{"text": "stolen"}]) as evil, FakeLLM([{"text": "ok"}]) as good:
        to_evil = {"status": 307, "headers": {"Location": evil.url + "/chat/completions"}, "body": ""}
        async with FakeLLM([to_evil]) as primary:
            c, _ = client(primary.url, key="sk-secret")
            with pytest.raises(ModelError, match=r"redirect .* refused: another origin") as ei:
                await call(c, stream=False)
            assert ei.value.status == 307 and not ei.value.retryable
            assert evil.requests == []  # neither the key nor the conversation went there
        async with FakeLLM([to_evil]) as primary:
            c, _ = client(primary.url, good.url, key="sk-secret")
            _, resp = await call(c, stream=False)
            assert resp.endpoint == good.url and evil.requests == []


async def test_redirect_within_the_origin_is_followed_with_the_post() -> None:
    async with FakeLLM() as srv:
        srv.add_turns([{"status": 308, "headers": {"Location": "/v1/chat/completions?region=eu"}, "body": ""},
                       {"text": "moved"}])
        c, _ = client(srv.url)
        _, resp = await call(c, stream=False)
        assert resp.message.content == "moved"
        assert [r.query for r in srv.requests] == ["", "region=eu"]
        assert srv.requests[1].method == "POST" and srv.requests[1].messages[-1]["content"] == "hi"


async def test_method_changing_redirect_is_refused() -> None:
    async with FakeLLM([{"status": 302, "headers": {"Location": "/login"}, "body": ""}]) as srv:
        c, _ = client(srv.url, maxRetries=1)
        with pytest.raises(ModelError, match="method-changing redirect"):
            await call(c, stream=False)
        assert len(srv.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("body,ctype,shown", [
    ("<!DOCTYPE html><html><body>Please log in to the Wi-Fi</body></html>", "text/html", "Please log in"),
    ('{"object": "list", "data": [{"id": "m"}]}', "application/json", '"object": "list"'),
    ("Service is up", "text/plain", "Service is up"),
])
async def test_200_that_is_not_a_completion_reports_status_and_excerpt(stream: bool, body: str, ctype: str,
                                                                        shown: str) -> None:
    async with FakeLLM([{"raw_body": body, "content_type": ctype}] * 2) as srv:
        c, _ = client(srv.url)
        with pytest.raises(MalformedResponseError) as ei:
            await call(c, stream=stream)
        msg = str(ei.value)
        assert f"HTTP 200 ({ctype})" in msg and "not a chat completion" in msg and shown in msg


# -- sizes ------------------------------------------------------------------------------------------


def gzip_bomb(inflated: int) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1 << 20)
    parts = [z.compress(block) for _ in range(inflated >> 20)]
    parts.append(z.flush())
    return b"".join(parts)


class RawServer:
    """A loopback HTTP/1.1 server answering every request with the same raw bytes (FakeLLM re-frames
    bodies and drops content-encoding, so it cannot send a compressed bomb)."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.response = (head + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode() + body
        self.requests = 0
        self.url = ""

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            self.requests += 1
            writer.write(self.response)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()


@pytest.fixture
def bomb() -> bytes:
    return gzip_bomb(256 << 20)  # 256 MiB of zeros in ~250 KB


@pytest.mark.parametrize("status", [200, 500])
async def test_gzip_bomb_is_refused_without_inflating(bomb: bytes, status: int) -> None:
    assert len(bomb) < 400_000
    headers = {"content-encoding": "gzip", "content-type": "application/json"}
    async with RawServer(status, headers, bomb) as srv:
        c, _ = client(srv.url, max_response_bytes=4 << 20)
        tracemalloc.start()
        try:
            with pytest.raises(ModelError) as ei:
                await call(c, stream=True)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 32 << 20, f"peak {peak >> 20} MiB while reading a gzip bomb"
        if status == 200:
            assert isinstance(ei.value, MalformedResponseError) and "exceeds 4194304 bytes" in str(ei.value)
        else:
            assert ei.value.status == 500


@pytest.mark.parametrize("stream", [False, True])
async def test_uncompressed_answer_beyond_the_cap_is_refused(stream: bool) -> None:
    big = sse(chunk(delta={"content": "z" * (3 << 20)}, finish_reason="stop")) if stream else \
        orjson.dumps(completion({"role": "assistant", "content": "z" * (3 << 20)})).decode()
    async with FakeLLM([{"raw_body": big}] * 3) as srv:
        c, _ = client(srv.url, max_response_bytes=1 << 20)
        with pytest.raises(MalformedResponseError, match="exceeds 1048576 bytes"):
            await call(c, stream=stream)
        c, _ = client(srv.url, max_response_bytes=4 << 20)  # the same answer under a larger cap
        _, resp = await call(c, stream=stream)
        assert len(resp.message.content or "") == 3 << 20


async def test_compressed_answer_within_the_cap_is_read() -> None:
    body = orjson.dumps(completion(GOOD_MSG))
    for enc, data in (("gzip", zlib.compress(body, wbits=31)), ("deflate", zlib.compress(body)),
                      ("deflate", zlib.compress(body, wbits=-15))):
        async with RawServer(200, {"content-encoding": enc, "content-type": "application/json"}, data) as srv:
            c, _ = client(srv.url, maxRetries=1)
            _, resp = await call(c, stream=False)
            assert resp.message.content == "hi"


async def test_25_mb_sse_line_is_parsed() -> None:
    text = "x" * (25 << 20)
    body = sse(chunk(delta={"content": text}, finish_reason="stop"))
    async with FakeLLM([{"raw_body_b64": base64.b64encode(body.encode()).decode()}]) as srv:
        c, _ = client(srv.url, maxRetries=1)
        _, resp = await call(c, stream=True)
        assert len(resp.message.content or "") == len(text)


class Counted(bytes):
    """A chunk that counts the bytes concatenated in front of it (`buffer + chunk`)."""

    copied = 0

    def __radd__(self, other: bytes) -> bytes:
        Counted.copied += len(other)
        return bytes(other) + bytes(self)


def test_sse_long_line_costs_linear_copying() -> None:
    # 25 MB in 64 KB reads: re-joining the buffer per read copied ~5 GB (3.6 s); now each byte once.
    piece = b"y" * 65536
    d = SSEDecoder()
    Counted.copied = 0
    d.feed(Counted(b"data: "))
    for _ in range(400):
        d.feed(Counted(piece))
    events = d.feed(Counted(b"\n\n"))
    assert events == [(None, piece * 400)]
    assert Counted.copied <= 2 * len(piece) * 400, f"{Counted.copied} bytes copied for a 26 MB line"


