"""The pooled connections of the model client: one pool per (event loop, endpoint, settings), capped.

Pools: one set of transports, each carrying one connection, per (event loop, base URL, connection cap),
shared by every ModelClient in the process and reference-counted, so agents created per request still
reuse warm keep-alive connections. A transport is chainreact's own HTTP/1.1 connection for a plain-http
endpoint without a proxy (netio.py), else an `httpx.AsyncHTTPTransport` with a one-connection httpcore
pool (https, proxies). Transports are bound to the loop they first ran on, hence the loop in the key.

Each request borrows one transport of the set for itself (a free list, last returned first out) and gives
it back when its response is closed, so every transport carries one request and one kept-alive
connection at a time. Why not one transport with a big pool: httpcore does work on every request start and
end that grows with the pool's connections (it checks each idle one for expiry, with a syscall, and
counts the idle ones once per idle one), which made the CPU per request grow with concurrency (bench,
docs/performance.md). With one connection per transport that work is constant. Sequential calls get the
same transport back, so they reuse its warm connection.

Why transports and not `httpx.AsyncClient`s: a request sent through a client leaves a reference cycle
behind (the response and its bound stream point at each other), ~43 objects per request that only the
cyclic garbage collector frees; with thousands of requests in flight they are promoted to the oldest
generation and make every full collection longer (docs/performance.md, "Scale"). A transport's response
is freed by reference counting as soon as it is closed, and the client's layers (auth flow, redirects,
cookies, event hooks: none of which a model request uses) are not run at all.

The cap (`maxConnections`): at most that many requests (so connections) to one endpoint at once; the
others wait in line, first come first served, and a returned client goes straight to the next in line
(its connection stays warm). Without a cap, thousands of runs in flight open thousands of sockets at
once: the server's listen queue overflows (connects retried after 1, 3, 7 s: connect timeouts) and the
process runs out of file descriptors.
"""

from __future__ import annotations

import asyncio
import resource
import weakref
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

import httpx

from chainreact.errors import ModelError

from . import netio

# Idle clients (one kept-alive connection each) kept for the next request, at most; more are closed.
MAX_KEEPALIVE = 1000
KEEPALIVE_EXPIRY = netio.KEEPALIVE_EXPIRY
# Connections to one endpoint at once when the configuration leaves it open (maxConnections 0): this,
# or half the process's open-file limit when that is lower (sockets are file descriptors; the other half
# is left to the rest of the process: its files, its own server's clients, other endpoints).
DEFAULT_MAX_CONNECTIONS = 1000


class Response(Protocol):
    """What http.py reads of a response: netio.Response, or httpx's own."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    def aiter_raw(self) -> AsyncIterator[bytes]: ...

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class Transport(Protocol):
    """One connection at a time to one endpoint: `send` POSTs `payload` to `url` and returns the response
    once its head arrived (httpx's exceptions for transport errors)."""

    async def send(self, url: httpx.URL, payload: bytes, headers: httpx.Headers,
                   timeout: dict[str, float]) -> Response: ...

    async def aclose(self) -> None: ...


class HttpxTransport:
    """An httpx transport with a one-connection pool (https endpoints and proxies)."""

    __slots__ = ("transport",)

    def __init__(self, transport: httpx.AsyncHTTPTransport) -> None:
        self.transport = transport

    async def send(self, url: httpx.URL, payload: bytes, headers: httpx.Headers,
                   timeout: dict[str, float]) -> Response:
        return await self.transport.handle_async_request(httpx.Request(
            "POST", url, content=payload, headers=headers, extensions={"timeout": timeout}))

    async def aclose(self) -> None:
        await self.transport.aclose()


def nofile_limit() -> int | None:
    """The process's soft limit on open file descriptors (`ulimit -n`), None when unlimited/unknown."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY or soft <= 0 else soft


def default_max_connections() -> int:
    """DEFAULT_MAX_CONNECTIONS, or half of `ulimit -n` when that is lower (read when a pool is made)."""
    limit = nofile_limit()
    return DEFAULT_MAX_CONNECTIONS if limit is None else max(1, min(DEFAULT_MAX_CONNECTIONS, limit // 2))


class Pool:
    __slots__ = ("__weakref__", "base_url", "busy", "closed", "closing", "free", "limit", "proxy", "refs",
                 "waiters")

    def __init__(self, base_url: str, limit: int) -> None:
        self.base_url = base_url
        self.limit = limit
        self.free: list[Transport] = []  # idle transports, the warmest last
        self.busy: set[Transport] = set()
        self.waiters: deque[asyncio.Future[Transport]] = deque()  # past the cap, in order
        self.closing: set[asyncio.Task[None]] = set()
        self.refs = 0
        self.closed = False
        self.proxy = env_proxy(base_url)

    async def take(self) -> Transport:
        """This request's own transport; past the cap, wait for one to be given back (cancellable; the
        caller bounds the wait with its deadline)."""
        if len(self.busy) < self.limit and not self.waiters:
            client = self.free.pop() if self.free else _new_transport(self.base_url, self.proxy)
            self.busy.add(client)
            return client
        fut: asyncio.Future[Transport] = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        try:
            return await fut
        except BaseException:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self.give(fut.result())  # handed over as we were cancelled: pass it on
            else:
                try:
                    self.waiters.remove(fut)
                except ValueError:
                    pass
            raise

    def give(self, client: Transport) -> None:
        """Give a transport back: to the next request in line (it stays busy), else to the free list."""
        while self.waiters and not self.closed:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(client)
                return
        self.busy.discard(client)
        if not self.closed and len(self.free) < MAX_KEEPALIVE:
            self.free.append(client)
            return
        task = asyncio.get_running_loop().create_task(client.aclose())  # surplus, or the pool closed
        self.closing.add(task)
        task.add_done_callback(self.closing.discard)

    async def aclose(self) -> None:
        self.closed = True
        clients = [*self.free, *self.busy]
        self.free.clear()
        self.busy.clear()
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_exception(ModelError(
                    f"{self.base_url}/chat/completions: the model client was closed while this request "
                    "waited for a connection", endpoint=self.base_url))
        for client in clients:
            await client.aclose()
        if self.closing:
            await asyncio.gather(*self.closing, return_exceptions=True)


_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], Pool]] = (
    weakref.WeakKeyDictionary()
)


def _pool_key(base_url: str, limit: int) -> tuple[Any, ...]:
    return (base_url, limit)


_SSL: Any = None
_PLAIN: Any = None


def _verify(base_url: str) -> Any:
    """One TLS context for every client in the process (loading the CA bundle costs ~50 ms each time);
    for plain-http endpoints such as a local server one that loads nothing (it is never used; passing
    `verify=False` instead would make httpx build a new context, ~150 us, for every client)."""
    global _SSL, _PLAIN
    import ssl

    if base_url.startswith("http://"):
        if _PLAIN is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            _PLAIN = ctx
        return _PLAIN
    if _SSL is None:
        import os

        cafile = os.environ.get("SSL_CERT_FILE")
        if not cafile:
            try:
                import certifi

                cafile = certifi.where()
            except ImportError:
                cafile = None
        _SSL = ssl.create_default_context(cafile=cafile)
    return _SSL


def env_proxy(base_url: str) -> str | None:
    """The proxy the environment names for this endpoint (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, and
    `NO_PROXY` to bypass it, as httpx's `trust_env` reads them), read once per pool (~80 us)."""
    import urllib.request
    from urllib.parse import urlsplit

    proxies = urllib.request.getproxies_environment()
    if not proxies:
        return None
    parts = urlsplit(base_url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return proxies.get(parts.scheme) or proxies.get("all")


def _new_transport(base_url: str, proxy: str | None) -> Transport:
    # One request at a time per transport (see Pool): one connection, kept alive. No retries: the model
    # client retries whole attempts itself.
    if proxy is None and base_url.startswith("http://"):
        url = httpx.URL(base_url)  # plain http: chainreact's own connection (netio.py)
        return netio.Connection(url.host, url.port or 80)
    return HttpxTransport(httpx.AsyncHTTPTransport(
        verify=_verify(base_url), trust_env=False, proxy=proxy,
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=1,
                            keepalive_expiry=KEEPALIVE_EXPIRY)))


def acquire_http(base_url: str, limit: int = 0) -> Pool:
    """The shared pool for this loop, endpoint and settings (reference-counted; pair with
    `release_http`). `limit` 0: default_max_connections()."""
    loop = asyncio.get_running_loop()
    pools = _POOLS.setdefault(loop, {})
    key = _pool_key(base_url, limit)
    pool = pools.get(key)
    if pool is None or pool.closed:
        pool = pools[key] = Pool(base_url, limit or default_max_connections())
    pool.refs += 1
    return pool


async def release_http(base_url: str, loop: asyncio.AbstractEventLoop, limit: int = 0) -> None:
    pools = _POOLS.get(loop)
    if not pools:
        return
    key = _pool_key(base_url, limit)
    pool = pools.get(key)
    if pool is None:
        return
    pool.refs -= 1
    if pool.refs <= 0:
        del pools[key]
        await pool.aclose()
