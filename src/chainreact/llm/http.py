"""One HTTP attempt against one endpoint, and the pooled httpx clients it uses.

Pools: one set of `httpx.AsyncClient`s per (event loop, base URL, timeouts), shared by every ModelClient
in the process and reference-counted, so agents created per request still reuse warm keep-alive
connections. httpx clients are bound to the loop they first ran on, hence the loop in the key.

Each set has up to SHARDS clients (created on first use) and a request uses the one picked by its task:
httpcore's pool does work quadratic in its connection count whenever a request starts or ends
(`_assign_requests_to_connections` counts idle connections once per idle connection), which made CPU per
request grow tenfold with hundreds of concurrent runs (bench, docs/performance.md). Small shards keep
that cheap. Picking by task keeps one run (one task, sequential requests) on one shard, so it reuses
its warm connection.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
import weakref
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import orjson

from chainreact.config import Timeouts
from chainreact.errors import MalformedResponseError, ModelError
from chainreact.types import ModelResponse, StreamItem

from .body import BodyParser, response_items
from .parse import error_message, retryable_status
from .request import ModelRequest, build_body

# Pool limits, chosen by measurement (bench/bench_client.py, docs/performance.md): with httpx's default of
# 20 keep-alive connections, 500 concurrent streams keep opening and dropping sockets. No cap on
# connections (the server's concurrency is the real limit) and a large keep-alive pool.
MAX_CONNECTIONS: int | None = None
MAX_KEEPALIVE = 1000
KEEPALIVE_EXPIRY = 30.0
SHARDS = 64

_MAX_BODY_KEPT = 4000
_MAX_MESSAGE = 1000


_HINTS = {
    400: "the endpoint rejected the request; if it is a parameter this endpoint does not support, list "
         "it in compat.omit (or set compat.flattenContent / toolChoiceRequired / systemRole)",
    401: "check the endpoint's `key`",
    403: "the `key` is not allowed to use this model or endpoint",
    404: "check the endpoint's `url` (the base, e.g. https://host/v1) and `model`",
    429: "rate limited by the provider",
}


class _Pool:
    __slots__ = ("base_url", "clients", "closed", "refs", "timeouts")

    def __init__(self, base_url: str, timeouts: Timeouts) -> None:
        self.base_url = base_url
        self.timeouts = timeouts
        self.clients: list[httpx.AsyncClient | None] = [None] * SHARDS
        self.refs = 0
        self.closed = False

    def pick(self) -> httpx.AsyncClient:
        i = hash(asyncio.current_task()) % SHARDS
        client = self.clients[i]
        if client is None:
            client = self.clients[i] = _new_client(self.base_url, self.timeouts)
        return client

    async def aclose(self) -> None:
        self.closed = True
        for client in self.clients:
            if client is not None:
                await client.aclose()


_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], _Pool]] = (
    weakref.WeakKeyDictionary()
)


def _pool_key(base_url: str, timeouts: Timeouts) -> tuple[Any, ...]:
    return (base_url, timeouts.connect, timeouts.read)


_SSL: Any = None


def _verify(base_url: str) -> Any:
    """One TLS context for every client in the process (loading the CA bundle costs ~50 ms each time);
    none at all for plain-http endpoints such as a local server."""
    global _SSL
    if base_url.startswith("http://"):
        return False
    if _SSL is None:
        import os
        import ssl

        cafile = os.environ.get("SSL_CERT_FILE")
        if not cafile:
            try:
                import certifi

                cafile = certifi.where()
            except ImportError:
                cafile = None
        _SSL = ssl.create_default_context(cafile=cafile)
    return _SSL


def _new_client(base_url: str, timeouts: Timeouts) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        verify=_verify(base_url),
        timeout=httpx.Timeout(timeouts.read, connect=timeouts.connect, write=timeouts.read,
                              pool=max(timeouts.connect, timeouts.read)),
        limits=httpx.Limits(max_connections=MAX_CONNECTIONS,
                            max_keepalive_connections=max(1, MAX_KEEPALIVE // SHARDS),
                            keepalive_expiry=KEEPALIVE_EXPIRY),
        follow_redirects=True,
        trust_env=True,
    )


def acquire_http(base_url: str, timeouts: Timeouts) -> _Pool:
    """The shared pool for this loop and endpoint (reference-counted; pair with `release_http`)."""
    loop = asyncio.get_running_loop()
    pools = _POOLS.setdefault(loop, {})
    key = _pool_key(base_url, timeouts)
    pool = pools.get(key)
    if pool is None or pool.closed:
        pool = pools[key] = _Pool(base_url, timeouts)
    pool.refs += 1
    return pool


async def release_http(base_url: str, timeouts: Timeouts, loop: asyncio.AbstractEventLoop) -> None:
    pools = _POOLS.get(loop)
    if not pools:
        return
    key = _pool_key(base_url, timeouts)
    pool = pools.get(key)
    if pool is None:
        return
    pool.refs -= 1
    if pool.refs <= 0:
        del pools[key]
        await pool.aclose()


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `retry-after` as seconds or an HTTP date; None if absent."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    ra = ra.strip()
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def http_error(status: int, body: bytes, headers: Mapping[str, str], url: str) -> ModelError:
    """A ModelError carrying the provider's own message, the status and, when given, Retry-After."""
    text = body.decode("utf-8", "replace")
    msg: str | None = None
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            msg = error_message(orjson.loads(body))
        except orjson.JSONDecodeError:
            msg = None
    if not msg:
        msg = stripped or "(empty body)"
    if len(msg) > _MAX_MESSAGE:
        msg = msg[:_MAX_MESSAGE] + f"… [{len(msg) - _MAX_MESSAGE} more characters in .body]"
    hint = _HINTS.get(status)
    full = f"{url}/chat/completions: HTTP {status}: {msg}" + (f" ({hint})" if hint else "")
    retryable = retryable_status(status)  # other 4xx are the request's fault and fail at once
    retry_after = parse_retry_after(headers) if retryable else None
    if len(text) > _MAX_BODY_KEPT:
        text = text[:_MAX_BODY_KEPT] + f"… [truncated, {len(body)} bytes in total]"
    return ModelError(full, status=status, endpoint=url, retryable=retryable,
                      retry_after=retry_after, body=text)


def transport_error(exc: Exception, url: str, timeouts: Timeouts) -> ModelError:
    if isinstance(exc, httpx.ConnectTimeout):
        what = f"connect timed out after {timeouts.connect:g}s (timeouts.connect)"
    elif isinstance(exc, httpx.ReadTimeout):
        what = f"no data for {timeouts.read:g}s (timeouts.read)"
    elif isinstance(exc, httpx.TimeoutException):
        what = f"timed out ({type(exc).__name__})"
    elif isinstance(exc, httpx.ConnectError):
        what = f"cannot connect: {exc or type(exc).__name__}"
    elif isinstance(exc, httpx.DecodingError):
        return MalformedResponseError(f"{url}/chat/completions: undecodable response body: {exc}",
                                      endpoint=url, retryable=True)
    else:
        what = f"connection failed: {type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return ModelError(f"{url}/chat/completions: {what}", endpoint=url, retryable=True)


class HttpEndpoint:
    """POSTs chat completions to one base URL. `attempt` is chainreact's innermost ModelFn."""

    def __init__(self, url: str, key: str, timeouts: Timeouts) -> None:
        self.url = url.rstrip("/")
        self.chat_url = self.url + "/chat/completions"
        self.timeouts = timeouts
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if key:
            self.headers["Authorization"] = f"Bearer {key}"
        self._http: _Pool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop or self._http.closed:
            self._http = acquire_http(self.url, self.timeouts)
            self._loop = loop
        return self._http.pick()

    async def aclose(self) -> None:
        if self._http is not None and self._loop is not None:
            http, loop, self._http, self._loop = self._http, self._loop, None, None
            if loop is asyncio.get_running_loop():
                await release_http(self.url, self.timeouts, loop)
            del http

    async def attempt(self, req: ModelRequest) -> AsyncIterator[StreamItem]:
        """Send `req` once; yield stream items (when req.stream) and then the ModelResponse."""
        http = self._client()
        payload = orjson.dumps(build_body(req))
        url = self.url
        try:
            resp = await http.send(http.build_request("POST", self.chat_url, content=payload,
                                                      headers=self.headers), stream=True)
        except httpx.HTTPError as e:
            raise transport_error(e, url, self.timeouts) from e
        try:
            if resp.status_code >= 300:
                try:
                    body = await resp.aread()
                except httpx.HTTPError:
                    body = b""
                raise http_error(resp.status_code, body, resp.headers, url)
            parser = BodyParser(url)
            out: list[StreamItem] = []
            enc = resp.headers.get("content-encoding")
            # aiter_raw skips httpx's decoder chain when there is nothing to decode (hot path per chunk).
            chunks = resp.aiter_raw() if not enc or enc == "identity" else resp.aiter_bytes()
            want_items = req.stream
            try:
                async for chunk in chunks:
                    parser.feed(chunk, out)
                    if out:
                        if want_items:
                            for item in out:
                                yield item
                        out.clear()
            except httpx.HTTPError as e:
                raise transport_error(e, url, self.timeouts) from e
            final: ModelResponse = parser.finish(out)
            if not want_items:
                yield final
            elif parser.streamed:
                for item in out:
                    yield item
                yield final
            else:
                for item in response_items(final):
                    yield item
        finally:
            await resp.aclose()
