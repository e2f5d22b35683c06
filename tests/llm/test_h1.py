"""The model client's HTTP/1.1 connection (llm/netio.py) against a raw socket server that answers exactly the
bytes a test gives it, split where the test says: chunked bodies cut at every byte, trailers, a
Content-Length body, a body that ends when the server closes, an interim 100 response, which connections
are kept and which are not, and malformed responses named as transport errors."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from chainreact.config import AgentConfig
from chainreact.errors import ModelError
from chainreact.llm import ModelClient, netio
from chainreact.types import Message

TIMEOUT = {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}
HEADERS = httpx.Headers({"Content-Type": "application/json", "Authorization": "Bearer k"})
COMPLETION = b'{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}'


class RawServer:
    """Each request (head and Content-Length body read) is answered by `answer(n)` (n: the request's number
    on the server): a list of byte pieces written one by one with a pause between them, then the
    connection is closed when `close` is true. Records each request's raw head and the connection it
    came on."""

    def __init__(self, answer: Callable[[int], tuple[list[bytes], bool]]) -> None:
        self.answer = answer
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []
        self.conns: list[int] = []
        self._conn = 0
        self.server: asyncio.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._conn += 1
        me = self._conn
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                self.bodies.append(await reader.readexactly(length))
                self.heads.append(head)
                self.conns.append(me)
                pieces, close = self.answer(len(self.heads))
                for piece in pieces:
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.002)
                if close:
                    return
        except (asyncio.CancelledError, ConnectionError):
            return  # the test is over
        finally:
            writer.close()

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> httpx.URL:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return httpx.URL(f"http://127.0.0.1:{port}/v1/chat/completions")


async def body(resp: Any) -> bytes:
    out = b"".join([c async for c in resp.aiter_raw()])
    await resp.aclose()
    return out


def chunked(data: bytes, size: int = 7) -> bytes:
    parts = [b"%x\r\n%s\r\n" % (len(data[i:i + size]), data[i:i + size]) for i in range(0, len(data), size)]
    return b"".join(parts) + b"0\r\n\r\n"


def split_every(data: bytes, cut: int) -> list[bytes]:
    return [data[:cut], data[cut:]] if 0 < cut < len(data) else [data]


async def test_a_chunked_body_arrives_whole_wherever_the_reads_split_it() -> None:
    payload = b"data: " + b"x" * 40 + b"\n\ndata: [DONE]\n\n"
    raw = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
           + chunked(payload) + b"")
    async with RawServer(lambda n: (split_every(raw, n - 1), False)) as srv:
        conn = netio.Connection("127.0.0.1", srv.url.port or 80)
        for _ in range(len(raw)):  # request n is answered in two writes cut at byte n - 1
            resp = await conn.send(srv.url, b"{}", HEADERS, TIMEOUT)
            assert resp.status_code == 200 and resp.headers["content-type"] == "text/event-stream"
            assert await body(resp) == payload
        assert set(srv.conns) == {1}  # every response read to its end: one connection for all
        await conn.aclose()


async def test_the_request_on_the_wire() -> None:
    async with RawServer(lambda n: ([b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"], False)) as srv:
        conn = netio.Connection("127.0.0.1", srv.url.port or 80)
        assert await body(await conn.send(srv.url, b'{"a":1}', HEADERS, TIMEOUT)) == b"{}"
        assert srv.heads[0] == (b"POST /v1/chat/completions HTTP/1.1\r\n"
                                b"Host: 127.0.0.1:%d\r\n" % srv.url.port
                                + b"Content-Type: application/json\r\nAuthorization: Bearer k\r\n"
                                b"Content-Length: 7\r\n\r\n")
        assert srv.bodies == [b'{"a":1}']
        await conn.aclose()


async def test_trailers_interim_responses_and_length_bodies() -> None:
    answers = {
        1: [b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3;ext=1\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n"],
        2: [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe", b"llo"],
        3: [b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"],
    }
    async with RawServer(lambda n: (answers[n], False)) as srv:
        conn = netio.Connection("127.0.0.1", srv.url.port or 80)
        assert [await body(await conn.send(srv.url, b"{}", HEADERS, TIMEOUT)) for _ in range(3)] == \
            [b"abc", b"hello", b""]
        assert srv.conns == [1, 1, 1]
        await conn.aclose()


async def test_which_connections_are_kept() -> None:
    answers = {
        1: ([b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"], True),
        2: ([b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"], True),  # 1.0: closed unless keep-alive
        3: ([b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"], False),
        4: ([b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"], False),
        5: ([b"HTTP/1.1 200 OK\r\n\r\nuntil the end"], True),  # no length: the body ends with the connection
        6: ([b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nunread"], False),
        7: ([b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"], True),
        8: ([b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"], False),
    }
    async with RawServer(lambda n: answers[n]) as srv:
        conn = netio.Connection("127.0.0.1", srv.url.port or 80)
        for _ in range(5):
            assert await body(await conn.send(srv.url, b"{}", HEADERS, TIMEOUT))
        resp = await conn.send(srv.url, b"{}", HEADERS, TIMEOUT)
        await resp.aclose()  # closed before its body was read: that connection cannot carry another
        assert not conn.connected
        assert await body(await conn.send(srv.url, b"{}", HEADERS, TIMEOUT)) == b"ok"
        await asyncio.sleep(0.05)  # the server closed that kept connection while it was idle
        assert await body(await conn.send(srv.url, b"{}", HEADERS, TIMEOUT)) == b"ok"
        assert srv.conns == [1, 2, 3, 3, 3, 4, 5, 6]
        await conn.aclose()


@pytest.mark.parametrize("raw, message", [
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY", "no CRLF after a chunk"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "closed the connection before the response"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + b"X: y\r\n" * 20000, "trailers larger"),
    (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 20000, "head larger"),
    (b"SSH-2.0-OpenSSH\r\n\r\n", "malformed status line"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line"),
    (b"", "disconnected without sending a response"),
])
async def test_a_malformed_response_is_a_transport_error(raw: bytes, message: str) -> None:
    async with RawServer(lambda n: ([raw] if raw else [], True)) as srv:
        conn = netio.Connection("127.0.0.1", srv.url.port or 80)
        with pytest.raises(httpx.TransportError, match=message):
            await body(await conn.send(srv.url, b"{}", HEADERS, TIMEOUT))
        await conn.aclose()


async def test_a_line_break_in_a_header_value_is_refused_before_anything_is_sent() -> None:
    async with RawServer(lambda n: ([], True)) as srv:
        conn = netio.Connection("127.0.0.1", srv.url.port or 80)
        bad = httpx.Headers({"Authorization": "Bearer k\r\nX-Injected: 1"})
        with pytest.raises(httpx.LocalProtocolError, match="line break"):
            await conn.send(srv.url, b"{}", bad, TIMEOUT)
        assert not srv.heads
        await conn.aclose()


async def test_a_model_call_over_it_streams_and_names_errors() -> None:
    events = [b'data: {"choices":[{"index":0,"delta":{"content":"he"}}]}\n\n',
              b'data: {"choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":"stop"}]}\n\n',
              b"data: [DONE]\n\n"]
    stream = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
    answers = {
        1: [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
            *[stream[i:i + 13] for i in range(0, len(stream), 13)]],
        2: [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (len(COMPLETION), COMPLETION)],
        3: [b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: 28\r\n\r\n"
            b'{"error":{"message":"slow"}}'],
    }
    async with RawServer(lambda n: (answers[n], False)) as srv:
        client = ModelClient.from_config(AgentConfig(url=str(srv.url).removesuffix("/chat/completions"),
                                                     model="m", maxRetries=-1))
        items = [i async for i in client.call([Message("user", "x")], stream=True)]
        assert "".join(getattr(i, "text", "") for i in items[:-1]) == "hello"
        assert (await client.complete([Message("user", "y")])).message.text == "hi"
        with pytest.raises(ModelError) as ei:
            await client.complete([Message("user", "z")])
        assert ei.value.status == 429 and ei.value.retry_after == 7
        assert srv.conns == [1, 1, 1]
        await client.aclose()
