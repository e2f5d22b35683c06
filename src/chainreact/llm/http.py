"""One HTTP attempt against one endpoint, over a client borrowed from its pool (pool.py)."""

from __future__ import annotations

import asyncio
import email.utils
import errno
import math
import time
from collections.abc import AsyncIterator, Mapping

import httpx
import orjson

from chainreact.config import Timeouts
from chainreact.errors import MalformedResponseError, ModelError
from chainreact.types import ModelResponse, StreamItem

from .body import BodyParser, response_items
from .decode import ACCEPT_ENCODING, MAX_RESPONSE_BYTES, BoundedDecoder, too_large
from .parse import error_message, retryable_status
from .pool import Pool, Response, Transport, acquire_http, nofile_limit, release_http
from .request import ModelRequest, build_body

_MAX_BODY_KEPT = 4000
_MAX_MESSAGE = 1000
_MAX_ERROR_BODY = 1024 * 1024  # decoded bytes of an error body read (only the start is kept)
_MAX_REDIRECTS = 3


_HINTS = {
    400: "the endpoint rejected the request; if it is a parameter this endpoint does not support, list "
         "it in compat.omit (or set compat.flattenContent / toolChoiceRequired / systemRole)",
    401: "check the endpoint's `key`",
    403: "the `key` is not allowed to use this model or endpoint",
    404: "check the endpoint's `url` (the base, e.g. https://host/v1) and `model`",
    429: "rate limited by the provider",
}


def _seconds(text: str, scale: float = 1.0) -> float | None:
    """A finite, non-negative number of seconds, or None (nan, inf, negative and junk are ignored)."""
    try:
        v = float(text) / scale
    except ValueError:
        return None
    return v if math.isfinite(v) and v >= 0 else None


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `retry-after` as seconds or an HTTP date; None if absent
    or unusable (nan, infinite or negative values are ignored: the normal backoff applies)."""
    ms = headers.get("retry-after-ms")
    if ms:
        v = _seconds(ms.strip(), 1000.0)
        if v is not None:
            return v
    ra = headers.get("retry-after")
    if not ra:
        return None
    ra = ra.strip()
    v = _seconds(ra)
    if v is not None:
        return v
    if ra[:1] in "+-0123456789.nNiI":
        return None  # a number, but not a usable one
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


def _out_of_fds(exc: BaseException) -> bool:
    """Whether `exc` comes from the process (or system) running out of file descriptors: EMFILE/ENFILE
    anywhere in its causes (anyio reports a failed socket() as "All connection attempts failed" with the
    OSError inside an exception group)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE):
            return True
        todo += [x for x in (e.__cause__, e.__context__) if x is not None]
        if isinstance(e, BaseExceptionGroup):
            todo += e.exceptions
    return False


def transport_error(exc: Exception, url: str, timeouts: Timeouts,
                    max_connections: int | None = None) -> ModelError:
    if _out_of_fds(exc):
        limit = nofile_limit()
        cap = f", now {max_connections}" if max_connections else ""
        what = (f"too many open files (the process's limit, ulimit -n, is {limit or 'unknown'}); raise "
                f"ulimit -n or lower maxConnections (connections to one endpoint at once{cap}) or the runs "
                "in flight")
    elif isinstance(exc, httpx.ConnectTimeout):
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


def deadline_error(url: str, total: float | None) -> ModelError:
    budget = f"timeouts.total={total:g}s" if total is not None else "timeouts.total"
    return ModelError(f"{url}/chat/completions: no complete answer within the model call's deadline "
                      f"({budget}); raise timeouts.total for very long answers", endpoint=url, retryable=True)


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return (url.scheme, url.host, url.port)


class HttpEndpoint:
    """POSTs chat completions to one base URL. `attempt` is chainreact's innermost ModelFn.

    `max_response_bytes` caps a response body after decompression (a larger one is a retryable
    MalformedResponseError); `req.timeout` (what is left of `timeouts.total`) bounds the whole attempt,
    the wait for a connection under the pool's cap included. `max_connections`: the cap on this endpoint's
    connections at once in this process (0: the default, pool.default_max_connections())."""

    def __init__(self, url: str, key: str, timeouts: Timeouts, *,
                 max_response_bytes: int = MAX_RESPONSE_BYTES, max_connections: int = 0) -> None:
        self.url = url.rstrip("/")
        self.max_connections = max_connections
        self.chat_url = self.url + "/chat/completions"
        self.timeouts = timeouts
        self.max_response_bytes = max_response_bytes
        # What httpx.AsyncClient sent by default (User-Agent, Connection) plus ours: the same request
        # headers as before requests went through the transport directly (pool.py).
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                        "Accept-Encoding": ACCEPT_ENCODING, "Connection": "keep-alive",
                        "User-Agent": f"python-httpx/{httpx.__version__}"}
        if key:
            self.headers["Authorization"] = f"Bearer {key}"
        # Parsed once, not per request (httpx copies both into each request; neither changes after this).
        self._chat = httpx.URL(self.chat_url)
        self._headers = httpx.Headers(self.headers)
        self._timeout = {"connect": timeouts.connect, "read": timeouts.read, "write": timeouts.read,
                         "pool": max(timeouts.connect, timeouts.read)}  # httpcore's per-request timeouts
        self._http: Pool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _pool(self) -> Pool:
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop or self._http.closed:
            self._http = acquire_http(self.url, self.max_connections)
            self._loop = loop
        return self._http

    async def aclose(self) -> None:
        if self._http is not None and self._loop is not None:
            http, loop, self._http, self._loop = self._http, self._loop, None, None
            if loop is asyncio.get_running_loop():
                await release_http(self.url, loop, self.max_connections)
            del http

    def _cap(self) -> int | None:
        return self._http.limit if self._http is not None else None

    async def _take(self, pool: Pool, end: float | None, total: float | None) -> Transport:
        """A transport of the pool; past its cap, wait in line until the call's deadline."""
        if end is None:
            return await pool.take()
        try:
            async with asyncio.timeout_at(end):
                return await pool.take()
        except TimeoutError as e:
            raise ModelError(
                f"{self.url}/chat/completions: no free connection before the model call's deadline "
                f"(timeouts.total={total or 0:g}s): {pool.limit} requests to this endpoint were in flight "
                "(maxConnections); raise maxConnections if the endpoint takes more, or run fewer at once",
                endpoint=self.url, retryable=True) from e

    async def _send(self, http: Transport, payload: bytes, end: float | None,
                    loop: asyncio.AbstractEventLoop, total: float | None) -> Response:
        """POST, following at most a few 307/308 redirects, and only within the endpoint's origin: the
        request carries the key and the conversation, so another origin is refused, and 301/302/303
        (which would turn the POST into a GET) too."""
        url = self._chat
        for _ in range(_MAX_REDIRECTS + 1):
            timeout = self._timeout
            if end is not None:
                left = end - loop.time()
                if left <= 0:
                    raise deadline_error(self.url, total)
                if left < self.timeouts.read:
                    timeout = {"connect": min(self.timeouts.connect, left), "read": left, "write": left,
                               "pool": left}
            try:
                resp = await http.send(url, payload, self._headers, timeout)
            except httpx.TimeoutException as e:
                if end is not None and loop.time() >= end - 0.001:
                    raise deadline_error(self.url, total) from e
                raise transport_error(e, self.url, self.timeouts, self._cap()) from e
            except httpx.HTTPError as e:
                raise transport_error(e, self.url, self.timeouts, self._cap()) from e
            if not (300 <= resp.status_code < 400 and "location" in resp.headers):
                return resp
            status, location = resp.status_code, resp.headers["location"]
            await resp.aclose()
            target = url.join(location)
            if status not in (307, 308) or _origin(target) != _origin(url):
                why = ("another origin" if _origin(target) != _origin(url)
                       else "a method-changing redirect (a POST would become a GET)")
                raise ModelError(
                    f"{self.url}/chat/completions: HTTP {status} redirect to {str(target)[:300]} refused: "
                    f"{why}; a model request (key and conversation) is only sent where `url` says. If the "
                    "new address is right, put it in `url`", status=status, endpoint=self.url)
            url = target
        raise ModelError(f"{self.url}/chat/completions: more than {_MAX_REDIRECTS} redirects", status=status,
                         endpoint=self.url)

    async def _error_body(self, resp: Response) -> bytes:
        """The start of an error body, decoded under a small cap (an error page can be a bomb too)."""
        enc = resp.headers.get("content-encoding")
        raw = BoundedDecoder.supports(enc)
        dec = BoundedDecoder(enc if raw else None, _MAX_ERROR_BODY, self.url)
        parts: list[bytes] = []
        try:
            async for chunk in (resp.aiter_raw() if raw else resp.aiter_bytes()):
                parts.append(dec.feed(chunk))
        except (httpx.HTTPError, ModelError):
            pass  # keep what arrived: the status is the news
        return b"".join(parts)

    async def attempt(self, req: ModelRequest) -> AsyncIterator[StreamItem]:
        """Send `req` once; yield stream items (when req.stream) and then the ModelResponse."""
        payload = orjson.dumps(build_body(req))
        url = self.url
        loop = asyncio.get_running_loop()
        end = loop.time() + req.timeout if req.timeout is not None else None
        pool = self._pool()
        http = await self._take(pool, end, req.timeout)  # this request's own (pool.py), given back at the end
        try:
            resp = await self._send(http, payload, end, loop, req.timeout)
            try:
                if resp.status_code >= 300:
                    raise http_error(resp.status_code, await self._error_body(resp), resp.headers, url)
                parser = BodyParser(url, status=resp.status_code,
                                    content_type=resp.headers.get("content-type", ""))
                out: list[StreamItem] = []
                enc = resp.headers.get("content-encoding")
                raw = BoundedDecoder.supports(enc)
                # gzip/deflate: inflated under the cap by the decoder; identity: only counted, inline
                # (hot path per chunk); other encodings: httpx decodes, the decoder counts.
                dec = BoundedDecoder(enc if raw else None, self.max_response_bytes, url) if enc else None
                limit, size = self.max_response_bytes, 0
                # aiter_raw skips httpx's decoder chain (hot path per chunk).
                next_chunk = (resp.aiter_raw() if raw else resp.aiter_bytes()).__aiter__().__anext__
                feed = parser.feed
                want_items = req.stream
                read_timeout = self.timeouts.read
                try:
                    while True:
                        # Far from the deadline the read timeout bounds a silence; near it, the deadline
                        # does (a timer per read only then: it costs CPU on the hot path).
                        if end is None or end - loop.time() > read_timeout:
                            chunk = await next_chunk()
                        else:
                            async with asyncio.timeout_at(end):
                                chunk = await next_chunk()
                        if dec is None:
                            size += len(chunk)
                            if size > limit:
                                raise too_large(url, limit)
                        else:
                            chunk = dec.feed(chunk)
                        feed(chunk, out)
                        if out:
                            if want_items:
                                for item in out:
                                    yield item
                            out.clear()
                except StopAsyncIteration:
                    pass
                except TimeoutError as e:
                    raise deadline_error(url, req.timeout) from e
                except httpx.HTTPError as e:
                    raise transport_error(e, url, self.timeouts, self._cap()) from e
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
        finally:
            pool.give(http)
