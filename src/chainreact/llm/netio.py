"""The model client's sockets for plain-http endpoints: an httpcore network backend on asyncio's
protocols (pool.py gives it to each transport of a plain-http pool without a proxy).

Why: httpcore's default backend on asyncio is anyio's, which wraps every read and write of a response in
a cancel scope with a deadline (`anyio.fail_after`), asks sniffio which library runs, and checks a kept
connection's socket with a `poll` syscall before each reuse. Per model request that was a measurable share
of the client's CPU, paid again for every one of thousands of runs in flight (docs/performance.md,
"Scale"). Here a stream is an asyncio protocol with a byte buffer: a read that finds data returns it
without waiting; one that waits sets one timer (its timeout) on the loop; a write goes to the transport
and waits only when its buffer is full; whether a kept connection was closed by the server is known from
the protocol (no syscall). Errors are httpcore's (ConnectError, ReadTimeout, ...), so httpx maps them as
before; the OSError of a failed connect is kept as the cause (pool.py/http.py name a process out of file
descriptors from it).

TLS endpoints (https) and proxies keep httpcore's default backend.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterable
from typing import Any, cast

import httpcore

_HIGH_WATER = 256 * 1024  # bytes received and not yet read before the socket is paused


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


def _expire(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One TCP connection (see the module's doc)."""

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._p = protocol

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        p = self._p
        while not p.buf:
            if p.eof:
                if p.error is not None:
                    raise httpcore.ReadError(str(p.error) or type(p.error).__name__) from p.error
                return b""
            loop = asyncio.get_running_loop()
            fut: asyncio.Future[None] = loop.create_future()
            p.waiter = fut
            timer = loop.call_later(timeout, _expire, fut) if timeout is not None else None
            try:
                await fut
            except TimeoutError as e:
                raise httpcore.ReadTimeout("timed out while reading") from e
            finally:
                p.waiter = None
                if timer is not None:
                    timer.cancel()
        buf = p.buf
        if len(buf) <= max_bytes:
            data = bytes(buf)
            buf.clear()
        else:
            data = bytes(buf[:max_bytes])
            del buf[:max_bytes]
        if p.paused and len(buf) <= _HIGH_WATER // 4:
            p.paused = False
            self._transport.resume_reading()
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        p = self._p
        if p.closed:
            raise httpcore.WriteError("the connection was closed")
        self._transport.write(buffer)
        drained = p.drained
        if drained is None or drained.done():
            return
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(drained)
        except TimeoutError as e:
            raise httpcore.WriteTimeout("timed out while writing") from e
        if p.closed and p.error is not None:
            raise httpcore.WriteError(str(p.error)) from p.error

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("chainreact's plain-http backend does not do TLS (pool.py uses "
                                    "httpcore's default backend for https endpoints)")

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # a kept connection the server closed (or wrote to) is not reused
            return self._p.eof or bool(self._p.buf)
        if info == "socket":
            return self._transport.get_extra_info("socket")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[tuple[Any, ...]] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = (local_address, 0) if local_address else None
        try:
            async with asyncio.timeout(timeout):
                transport, protocol = await loop.create_connection(_Protocol, host, port, local_addr=local)
        except TimeoutError as e:
            raise httpcore.ConnectTimeout(f"connect to {host}:{port} timed out") from e
        except OSError as e:
            raise httpcore.ConnectError(str(e) or type(e).__name__) from e
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for option in socket_options or ():
                sock.setsockopt(*option)
        return AsyncioStream(transport, protocol)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[tuple[Any, ...]] | None = None
                                  ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not used by the model client")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


BACKEND = AsyncioBackend()  # stateless: one for every pool
