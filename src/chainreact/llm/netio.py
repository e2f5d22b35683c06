"""The model client's own HTTP/1.1 connections for plain-http endpoints (pool.py hands one to each request
to a plain-http endpoint without a proxy; https endpoints and proxies go through httpx).

Why: on that path httpx, httpcore and h11 cost about half the serving process's CPU per streamed run under
2,000 SSE clients (a py-spy profile, docs/performance.md "Scale"): h11 parses every chunk of the model's
stream in pure Python through a dozen calls, httpcore sets up locks, events and cancellation shields per
request (each asking sniffio which library runs: an import attempt that walks sys.path when sniffio is not
installed), and httpx wraps each request and response in objects of its own. Here one connection is an
asyncio protocol with a byte buffer: the request is one write of a head built from bytes, the response
head is split once, and a chunked body is cut out of the buffer with `find`; a read that finds data
returns everything buffered at once (many chunks of a stream per read) without waiting, one that waits
sets one timer (its timeout) on the loop. A kept connection is reused only while the server has neither
closed it nor written to it, and not past KEEPALIVE_EXPIRY idle seconds.

Errors are httpx's own exception classes (ConnectError with the OSError as cause, ConnectTimeout,
ReadTimeout, WriteTimeout, ReadError, RemoteProtocolError, LocalProtocolError), so http.py names them as
it names httpx's (and finds a process out of file descriptors from the cause). A response whose body is
encoded in a way the bounded decoder does not read (decode.py: not identity/gzip/deflate) is decoded by
httpx's own decoders (`aiter_bytes`).
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Mapping
from typing import cast

import httpx

_HIGH_WATER = 256 * 1024  # bytes received and not yet read before the socket is paused
_MAX_HEAD = 64 * 1024  # a response head (status line and headers) larger than this is refused
_MAX_LINE = 64 * 1024  # a chunk-size or trailer line
KEEPALIVE_EXPIRY = 30.0  # seconds a kept connection may stay idle and still be reused
_CRLF = b"\r\n"
_BAD_HEADER = frozenset(b"\r\n\x00")
Timeouts = Mapping[str, "float | None"]  # connect, read, write (and pool, unused here): seconds or None


class _Protocol(asyncio.Protocol):
    __slots__ = ("buf", "closed", "drained", "eof", "error", "paused", "transport", "waiter")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.eof = False
        self.closed = False
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None  # a read waiting for data
        self.drained: asyncio.Future[None] | None = None  # a write waiting for the buffer to drain
        self.paused = False  # reading paused (too much unread)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass of asyncio's

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self._wake()
        if len(self.buf) > _HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.eof = True
        self.error = exc
        self._wake()
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    def pause_writing(self) -> None:
        if self.drained is None or self.drained.done():
            self.drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    def _wake(self) -> None:
        w = self.waiter
        if w is not None:
            self.waiter = None
            if not w.done():
                w.set_result(None)

    def consumed(self) -> None:
        """Some of the buffer was read: resume a paused socket once most of it is gone."""
        if self.paused and len(self.buf) <= _HIGH_WATER // 4 and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()

    async def more(self, timeout: float | None) -> None:
        """Wait until more data (or the end) arrives; httpx.ReadTimeout after `timeout` seconds of silence,
        httpx.ReadError when the connection was reset."""
        if self.eof:
            if self.error is not None:
                raise httpx.ReadError(str(self.error) or type(self.error).__name__) from self.error
            raise httpx.RemoteProtocolError("the server closed the connection before the response ended")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self.waiter = fut
        timer = loop.call_later(timeout, _expire, fut) if timeout is not None else None
        try:
            await fut
        except TimeoutError as e:
            raise httpx.ReadTimeout("timed out while reading") from e
        finally:
            self.waiter = None
            if timer is not None:
                timer.cancel()


def _expire(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


def _head_fields(headers: httpx.Headers) -> bytes:
    """The request's header lines (after Host), checked: a value with CR, LF or NUL would split the head."""
    out = bytearray()
    for name, value in headers.raw:
        if not _BAD_HEADER.isdisjoint(value) or not _BAD_HEADER.isdisjoint(name):
            raise httpx.LocalProtocolError(f"illegal header {name.decode(errors='replace')!r}: it holds a "
                                           "line break or NUL")
        out += name + b": " + value + _CRLF
    return bytes(out)


class Connection:
    """One kept-alive HTTP/1.1 connection to a plain-http endpoint, opened (again) as needed; one request
    at a time (pool.py). `send` POSTs and returns the Response once its head arrived."""

    __slots__ = ("_fields", "_headers", "_idle_since", "_p", "host", "port")

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._p: _Protocol | None = None
        self._idle_since = 0.0
        self._headers: httpx.Headers | None = None  # the headers `_fields` was made from
        self._fields = b""

    @property
    def connected(self) -> bool:
        return self._p is not None and not self._p.closed

    def _reusable(self) -> bool:
        p = self._p
        # Closed by the server, or it wrote something unasked (a 408 before closing): not reused.
        return p is not None and not p.eof and not p.buf and \
            time.monotonic() - self._idle_since < KEEPALIVE_EXPIRY

    def _drop(self) -> None:
        p, self._p = self._p, None
        if p is not None and p.transport is not None:
            p.transport.close()

    async def _connect(self, timeout: float | None) -> _Protocol:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport, protocol = await loop.create_connection(_Protocol, self.host, self.port)
        except TimeoutError as e:
            raise httpx.ConnectTimeout(f"connect to {self.host}:{self.port} timed out") from e
        except OSError as e:
            raise httpx.ConnectError(str(e) or type(e).__name__) from e
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return protocol

    async def send(self, url: httpx.URL, payload: bytes, headers: httpx.Headers,
                   timeout: Timeouts) -> Response:
        if headers is not self._headers:
            self._fields = _head_fields(headers)
            self._headers = headers
        head = b"POST %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\n\r\n" % (
            url.raw_path, url.netloc, self._fields, len(payload))
        if not self._reusable():
            self._drop()
            self._p = await self._connect(timeout.get("connect"))
        p = self._p
        assert p is not None and p.transport is not None
        try:
            p.transport.write(head + payload)
            if p.drained is not None and not p.drained.done():
                try:
                    async with asyncio.timeout(timeout.get("write")):
                        await asyncio.shield(p.drained)
                except TimeoutError as e:
                    raise httpx.WriteTimeout("timed out while writing") from e
            return await self._response(p, timeout.get("read"))
        except BaseException:
            self._drop()  # mid-request: the connection's state is unknown
            raise

    async def _response(self, p: _Protocol, read: float | None) -> Response:
        buf = p.buf
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _MAX_HEAD:
                    raise httpx.RemoteProtocolError(f"response head larger than {_MAX_HEAD} bytes")
                if p.eof and not buf and p.error is None:
                    raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
                await p.more(read)
                continue
            head = bytes(buf[:end])
            del buf[:end + 4]
            lines = head.split(_CRLF)
            status_line = lines[0].split(b" ", 2)
            try:
                version, status = status_line[0], int(status_line[1])
            except (IndexError, ValueError):
                raise httpx.RemoteProtocolError(f"malformed status line {lines[0][:100]!r}") from None
            if not version.startswith(b"HTTP/1."):
                raise httpx.RemoteProtocolError(f"not an HTTP/1.x response: {lines[0][:100]!r}")
            fields: dict[str, str] = {}
            raw: list[tuple[bytes, bytes]] = []
            for line in lines[1:]:
                name, sep, value = line.partition(b":")
                if not sep or not name or name != name.strip():
                    raise httpx.RemoteProtocolError(f"malformed header line {line[:100]!r}")
                value = value.strip()
                raw.append((name, value))
                key, text = name.decode("latin-1").lower(), value.decode("latin-1")
                fields[key] = f"{fields[key]}, {text}" if key in fields else text
            if 100 <= status < 200:
                continue  # an interim response (100 Continue): the real one follows
            p.consumed()
            return Response(self, p, status, fields, raw, version == b"HTTP/1.0", read)

    def release(self, p: _Protocol, keep: bool) -> None:
        """The response on `p` ended: keep the connection for the next request, or close it."""
        if keep and p is self._p and not p.eof:
            self._idle_since = time.monotonic()
        elif p is self._p:
            self._drop()

    async def aclose(self) -> None:
        self._drop()


# Body framings
_CHUNKED, _LENGTH, _UNTIL_CLOSE, _NONE = range(4)


class Response:
    """A response whose head arrived: `status_code`, `headers` (lower-case names, repeated ones joined
    with ", "), the body from `aiter_raw()` (as sent, de-chunked) or `aiter_bytes()` (decoded), `aclose()`
    (the connection is kept only when the body was read to its end)."""

    __slots__ = ("_conn", "_framing", "_keep", "_left", "_p", "_raw", "_read", "_state", "headers",
                 "status_code")

    def __init__(self, conn: Connection, p: _Protocol, status: int, headers: dict[str, str],
                 raw: list[tuple[bytes, bytes]], http10: bool, read: float | None) -> None:
        self._conn, self._p, self.status_code, self.headers, self._raw = conn, p, status, headers, raw
        self._read = read
        tokens = headers.get("connection", "").lower()
        self._keep = ("keep-alive" in tokens) if http10 else ("close" not in tokens)
        self._left = 0
        self._state = 0  # chunked: 0 size line, 1 data, 2 CRLF after data, 3 trailers; 4: body ended
        if status in (204, 304):
            self._framing = _NONE
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            self._framing = _CHUNKED
        elif "content-length" in headers:
            try:
                self._left = int(headers["content-length"].split(",")[0])
            except ValueError:
                raise httpx.RemoteProtocolError("malformed Content-Length") from None
            self._framing = _LENGTH
        else:
            self._framing = _UNTIL_CLOSE
            self._keep = False
        if self._framing == _NONE or (self._framing == _LENGTH and self._left == 0):
            self._state = 4

    def aiter_raw(self) -> AsyncIterator[bytes]:
        return self

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        """What of the body is here (everything buffered, so many chunks of a stream at once), waiting
        for it only when nothing is."""
        if self._state == 4:
            raise StopAsyncIteration
        p = self._p
        while True:
            if self._framing == _CHUNKED:
                data = self._dechunk(p.buf)
            elif self._framing == _LENGTH:
                n = min(self._left, len(p.buf))
                data = bytes(p.buf[:n])
                del p.buf[:n]
                self._left -= n
                if not self._left:
                    self._state = 4
            else:  # until the server closes
                data = bytes(p.buf)
                p.buf.clear()
                if not data and p.eof:
                    if p.error is not None:
                        raise httpx.ReadError(str(p.error) or type(p.error).__name__) from p.error
                    self._state = 4
            p.consumed()
            if self._state == 4:
                self._conn.release(p, self._keep)
                if not data:
                    raise StopAsyncIteration
            if data:
                return data
            await p.more(self._read)

    def _dechunk(self, buf: bytearray) -> bytes:
        """The data of the chunks complete or partly in `buf`, consumed from it (the parser's state kept
        between calls)."""
        out: list[bytes] = []
        while True:
            state = self._state
            if state == 1:
                if not buf:
                    break
                n = min(self._left, len(buf))
                out.append(bytes(buf[:n]))
                del buf[:n]
                self._left -= n
                if not self._left:
                    self._state = 2
                continue
            if state == 2:
                if len(buf) < 2:
                    break
                if buf[:2] != _CRLF:
                    raise httpx.RemoteProtocolError("malformed chunked body: no CRLF after a chunk")
                del buf[:2]
                self._state = 0
                continue
            if state == 4:
                break
            end = buf.find(_CRLF)
            if end < 0:
                if len(buf) > _MAX_LINE:
                    raise httpx.RemoteProtocolError("malformed chunked body: a line too long")
                break
            line = bytes(buf[:end])
            del buf[:end + 2]
            if state == 3:  # trailers, until an empty line (at most a head's worth)
                if not line:
                    self._state = 4
                self._left += end + 2
                if self._left > _MAX_HEAD:
                    raise httpx.RemoteProtocolError(f"chunked body trailers larger than {_MAX_HEAD} bytes")
                continue
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise httpx.RemoteProtocolError(f"malformed chunk size {line[:40]!r}") from None
            if size < 0:
                raise httpx.RemoteProtocolError(f"malformed chunk size {line[:40]!r}")
            if size:
                self._left, self._state = size, 1
            else:
                self._state = 3
        return out[0] if len(out) == 1 else b"".join(out)

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body decoded by httpx's decoders (Content-Encoding other than those decode.py reads)."""
        resp = httpx.Response(self.status_code, headers=self._raw, stream=_Body(self))
        async for chunk in resp.aiter_bytes():
            yield chunk

    async def aclose(self) -> None:
        if self._state != 4:  # the body was not read to its end: the connection cannot carry another
            self._state = 4
            self._conn.release(self._p, False)


class _Body(httpx.AsyncByteStream):
    def __init__(self, resp: Response) -> None:
        self._resp = resp

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._resp:
            yield chunk


__all__ = ["KEEPALIVE_EXPIRY", "Connection", "Response"]
