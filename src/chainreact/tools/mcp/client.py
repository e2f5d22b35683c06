"""One MCP server connection, owned by one asyncio task.

Why a dedicated owner task: the SDK's transports and ClientSession are anyio context managers holding
task groups and cancel scopes. Those must be exited by the task that entered them ("Attempted to exit
cancel scope in a different task"), which breaks as soon as an agent opens a connection in one task
and closes it in another (a request handler, a cancelled run, a test fixture). So the owner task enters
the transport and session, then runs every request as a child of its own task group; callers hand it
jobs through a queue and await a future. Timeouts are enforced by an anyio scope inside the owner (so
the SDK sees a normal cancellation and sends `notifications/cancelled`); a caller that is itself
cancelled cancels its job's scope. `aclose()` may be called from any task.

Session loss (stdio process gone, HTTP 404 "Session terminated", connection refused, broken stream)
fails the pending jobs with `_SessionLost`; the caller then re-initialises once (a fresh owner and a
fresh session) and retries the request once, unless it is a tool call that had already been sent: that
one may have run, so it is re-sent only for tools that are idempotent (server hints) or opted in
(config.retryNonIdempotent). A server that stops answering (no reply to a ping after a call timed out,
e.g. its stdout reader is stuck) is dropped, so later calls reconnect instead of each waiting its timeout.

The stdio transport decodes with "replace": invalid UTF-8 from a server costs a few U+FFFD characters,
never the connection. The SDK's own log records (e.g. a traceback per non-JSON line on a server's
stdout) are routed into the `chainreact.tools.mcp` logger: the first of each kind as one WARNING line,
repeats at DEBUG, so a noisy server cannot flood the terminal.

The SDK (`mcp` 2.x) is imported inside the owner task only, so `import chainreact` does not load it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from ...errors import ToolError
from ..base import ToolOutput
from .config import MCPServerConfig
from .diagnostics import StderrTail, describe, hint, is_session_loss, leaf, route_sdk_logs, stderr_tail
from .results import map_result, to_wire

log = logging.getLogger("chainreact.tools.mcp")

_STOP_GRACE = 10.0  # seconds a stopping owner gets to close its transport before it is cancelled
PROBE_TIMEOUT = 5.0  # seconds a server gets to answer a ping after a call of it timed out


class _SessionLost(Exception):
    """Internal: the connection died under a request; the caller may re-initialise and retry once.
    `sent`: the request may have reached the server (it had started), so it may have run."""

    def __init__(self, cause: BaseException | None, *, sent: bool = False):
        self.cause = cause
        self.sent = sent
        super().__init__(describe(cause) if cause else "connection closed")


class _CallTimeout(Exception):
    pass


class _Closed(Exception):
    """Internal: aclose() ended the connection while a request was in flight (not retried)."""


@dataclass(eq=False)
class _Job:
    op: Callable[[Any], Awaitable[Any]]  # receives the SDK's ClientSession
    timeout: float
    future: asyncio.Future[Any]
    scope: Any = None  # the anyio CancelScope the job runs in, once started
    abandoned: bool = False
    started: bool = False  # handed to the SDK: the request may have reached the server

    def abandon(self) -> None:
        self.abandoned = True
        if self.scope is not None:
            self.scope.cancel()


@dataclass(eq=False)
class _Owner:
    """One connection generation: its task, job queue and readiness."""

    backend: SessionBackend
    queue: asyncio.Queue[_Job | None] = field(default_factory=asyncio.Queue)
    ready: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    running: set[_Job] = field(default_factory=set)
    closed: bool = False
    error: BaseException | None = None
    stderr: StderrTail | None = None
    http_status: int | None = None  # last HTTP error status seen (401/403 explain a failed connect)
    # HTTP 404 to a request carrying Mcp-Session-Id: the server forgot the session (restart, expiry).
    # The spec says to start a new session; the SDK only shows the server's JSON-RPC error, so track it here.
    session_expired: bool = False
    deliberate: bool = False  # stopped by aclose(), not because the session was lost
    reader_ended: bool = False  # the server's output ended (process gone, reader dead): session lost
    unreachable: bool = False  # an HTTP request could not connect: nothing was delivered
    task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name=f"mcp-session:{self.backend.cfg.name}")
        # Readiness may fail with nobody waiting (e.g. an aclose() during connect); don't warn about it.
        self.ready.add_done_callback(lambda f: f.cancelled() or f.exception())

    def submit(self, job: _Job) -> None:
        if self.closed:
            raise _SessionLost(self.error)
        self.queue.put_nowait(job)

    async def stop(self, *, deliberate: bool = False) -> None:
        """End the owner task (graceful when connected) and wait for it; safe from any task.

        `deliberate` (aclose): in-flight requests fail for good instead of being retried elsewhere.
        """
        self.deliberate = self.deliberate or deliberate
        task = self.task
        if task is None or task.done():
            return
        if self.ready.done() and not self.closed:
            self.queue.put_nowait(None)
        else:
            task.cancel()  # still connecting: nothing to close gracefully
        done, _ = await asyncio.wait({task}, timeout=_STOP_GRACE)
        if not done:
            log.warning(
                "MCP server %r did not close within %g s; cancelling", self.backend.cfg.name, _STOP_GRACE
            )
            task.cancel()
            await asyncio.wait({task})

    async def _run(self) -> None:
        import anyio
        from mcp import ClientSession

        route_sdk_logs()
        try:
            async with AsyncExitStack() as stack:
                read, write = await self.backend.open_transport(stack, self)
                read = _ReadWatch(read, self._reader_ended)
                cfg = self.backend.cfg
                info = None
                if cfg.client_name or cfg.client_version:  # RuleGo's client_name / client_version
                    from mcp.types import Implementation

                    info = Implementation(name=cfg.client_name or "chainreact",
                                          version=cfg.client_version or "0")
                session = await stack.enter_async_context(ClientSession(read, write, client_info=info))
                await session.initialize()
                self.ready.set_result(None)
                async with anyio.create_task_group() as tg:
                    while True:
                        job = await self.queue.get()
                        if job is None or self.reader_ended:
                            if job is not None:
                                self.queue.put_nowait(job)  # never handed over: failed below as unsent
                            break
                        tg.start_soon(self._run_job, session, job)
                    tg.cancel_scope.cancel()  # closing: in-flight calls end as session losses
        except asyncio.CancelledError:
            self.error = self.error or ConnectionAbortedError("closed")
            raise
        except BaseException as e:
            self.error = leaf(e)
            log.debug("MCP server %r: session ended: %r", self.backend.cfg.name, self.error)
        finally:
            self.closed = True
            if not self.ready.done():
                self.ready.set_exception(_Closed() if self.deliberate else _SessionLost(self.error))
            pending = list(self.running)
            while not self.queue.empty():
                job = self.queue.get_nowait()
                if job is not None:
                    pending.append(job)
            for job in pending:
                sent = job.started and not self.unreachable  # a refused connection delivered nothing
                lost = _Closed() if self.deliberate else _SessionLost(self.error, sent=sent)
                _resolve(job.future, exc=lost)
            if self.stderr is not None:
                self.stderr.close()

    def _reader_ended(self) -> None:
        """The transport's read side ended: nothing will answer any more. Stop now, so calls waiting or
        arriving fail fast (and unsent ones are retried on a new session) instead of timing out."""
        if self.reader_ended or self.closed:
            return
        self.reader_ended = True
        self.error = self.error or ConnectionResetError("the server's output ended (did it exit?)")
        self.queue.put_nowait(None)

    async def _run_job(self, session: Any, job: _Job) -> None:
        import anyio

        if job.abandoned or job.future.done():
            return
        self.running.add(job)
        try:
            with anyio.CancelScope() as scope:
                job.scope = scope
                job.started = True
                try:
                    with anyio.fail_after(job.timeout):
                        result = await job.op(session)
                except TimeoutError:
                    _resolve(job.future, exc=_CallTimeout())
                except Exception as e:
                    # An expired HTTP session refused the request (404), or the server could not be
                    # reached: it never ran.
                    expired = self.session_expired and hasattr(e, "error")
                    lost = is_session_loss(e) or expired
                    unsent = expired or self.unreachable
                    _resolve(job.future, exc=_SessionLost(e, sent=not unsent) if lost else e)
                else:
                    _resolve(job.future, result=result)
        finally:
            # A job cancelled by the owner's shutdown or crash stays unresolved here; _run resolves it.
            if job.future.done():
                self.running.discard(job)


class _ReadWatch:
    """The transport's read stream, telling the owner when it ends (EOF or closed under the reader)."""

    def __init__(self, inner: Any, on_end: Callable[[], None]):
        self._inner = inner
        self._on_end = on_end

    async def receive(self) -> Any:
        import anyio

        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> _ReadWatch:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _ReadWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:  # e.g. `last_context`, which the SDK reads duck-typed
        return getattr(self._inner, name)


class SessionBackend:
    """An MCP server reached over stdio, streamable HTTP or SSE, with lazy connect and one re-init."""

    def __init__(self, cfg: MCPServerConfig):
        self.cfg = cfg
        self._owner: _Owner | None = None
        self._lock = asyncio.Lock()
        self._idempotent: set[str] = set()  # tools the server marks readOnlyHint / idempotentHint

    # --- the backend interface used by MCPServer ---------------------------------------------------

    async def list_definitions(self, timeout: float) -> list[dict[str, Any]]:
        async def op(session: Any) -> list[dict[str, Any]]:
            from mcp.types import PaginatedRequestParams

            out: list[dict[str, Any]] = []
            cursor: str | None = None
            for _ in range(1000):  # a server whose cursor never ends must not hang the agent
                page = await session.list_tools(
                    params=PaginatedRequestParams(cursor=cursor) if cursor else None
                )
                for t in page.tools:
                    w = to_wire(t)
                    notes = w.get("annotations") or {}
                    if notes.get("readOnlyHint") is True or notes.get("idempotentHint") is True:
                        self._idempotent.add(w["name"])
                    out.append(
                        {
                            "name": w["name"],
                            "description": w.get("description") or "",
                            "parameters": w.get("inputSchema"),
                        }
                    )
                cursor = page.next_cursor
                if not cursor:
                    break
            return out

        try:
            result: list[dict[str, Any]] = await self._request(op, timeout, what="listing tools")
        except _CallTimeout:
            raise ToolError(
                f"MCP server {self.cfg.name!r} ({self.cfg.describe()}): listing tools took longer "
                f"than {timeout:g} s; raise config.listTimeout or check the server"
            ) from None
        return result

    async def call(self, name: str, args: dict[str, Any], timeout: float) -> str | ToolOutput:
        async def op(session: Any) -> Any:
            return await session.call_tool(name, args)

        resend = self.cfg.may_resend(name, name in self._idempotent)
        try:
            result = await self._request(op, timeout, what=f"calling tool {name!r}", resend=resend)
        except _CallTimeout:
            raise ToolError(
                f"MCP tool {name!r} on server {self.cfg.name!r} did not answer within {timeout:g} s "
                "(config.callTimeout); the call was cancelled"
            ) from None
        return map_result(to_wire(result))

    async def aclose(self) -> None:
        async with self._lock:
            owner, self._owner = self._owner, None
        if owner is not None:
            await owner.stop(deliberate=True)

    # --- connection management ---------------------------------------------------------------------

    async def _request(self, op: Callable[[Any], Awaitable[Any]], timeout: float, what: str,
                       resend: bool = True) -> Any:
        last: _SessionLost | None = None
        for attempt in (1, 2):
            owner = await self._connected()
            job = _Job(op=op, timeout=timeout, future=asyncio.get_running_loop().create_future())
            try:
                owner.submit(job)
                return await job.future
            except asyncio.CancelledError:
                job.abandon()
                raise
            except _CallTimeout:
                await self._probe(owner)
                raise
            except _SessionLost as e:
                last = e
                if e.sent and not resend:
                    await self._discard(owner)  # the next call reconnects
                    raise ToolError(
                        f"MCP server {self.cfg.name!r} ({self.cfg.describe()}): the session was lost while "
                        f"{what} after the request was sent ({e}); it may or may not have run, so it was not "
                        "sent again. If repeating it is safe, list the tool in config.retryNonIdempotent"
                    ) from None
                log.info(
                    "MCP server %r: session lost while %s (%s); re-initialising (attempt %d)",
                    self.cfg.name,
                    what,
                    e,
                    attempt,
                )
                await self._discard(owner)
            except _Closed:
                raise ToolError(f"MCP server {self.cfg.name!r} was closed while {what}") from None
            except ToolError:
                raise
            except Exception as e:
                raise ToolError(f"MCP server {self.cfg.name!r}: {what} failed: {describe(e)}") from e
        raise ToolError(
            f"MCP server {self.cfg.name!r} ({self.cfg.describe()}): the session was lost while {what} "
            f"and again after re-initialising: {last}"
        )

    async def _probe(self, owner: _Owner) -> None:
        """After a timeout: a server that cannot answer a ping either is wedged or its reader is dead;
        drop the session so later calls start a new one instead of each waiting out its timeout."""
        if owner.closed:
            return

        async def ping(session: Any) -> Any:
            return await session.send_ping()

        job = _Job(op=ping, timeout=min(PROBE_TIMEOUT, self.cfg.list_timeout),
                   future=asyncio.get_running_loop().create_future())
        try:
            owner.submit(job)
            await job.future
        except asyncio.CancelledError:
            job.abandon()
            raise
        except Exception as e:
            log.warning("MCP server %r (%s) does not answer a ping after a call timed out (%s); its session "
                        "is dropped and the next call starts a new one", self.cfg.name, self.cfg.describe(),
                        type(e).__name__)
            await self._discard(owner)

    async def _connected(self) -> _Owner:
        async with self._lock:
            owner = self._owner
            if owner is None or owner.closed:
                owner = _Owner(self)
                owner.start()
                self._owner = owner
        try:
            await asyncio.wait_for(asyncio.shield(owner.ready), self.cfg.list_timeout)
        except TimeoutError:
            await self._discard(owner)
            raise ToolError(
                f"MCP server {self.cfg.name!r} ({self.cfg.describe()}): no answer to initialize within "
                f"{self.cfg.list_timeout:g} s (config.listTimeout)" + stderr_tail(owner)
            ) from None
        except _Closed:
            raise ToolError(f"MCP server {self.cfg.name!r} was closed while connecting") from None
        except _SessionLost as e:
            await self._discard(owner)
            raise ToolError(
                f"MCP server {self.cfg.name!r} ({self.cfg.describe()}): could not connect: {e}"
                + hint(self.cfg, e.cause, owner.http_status)
                + stderr_tail(owner)
            ) from None
        return owner

    async def _discard(self, owner: _Owner) -> None:
        async with self._lock:
            if self._owner is owner:
                self._owner = None
        await owner.stop()

    async def open_transport(self, stack: AsyncExitStack, owner: _Owner) -> tuple[Any, Any]:
        """Enter the SDK transport for this config on `stack` (called inside the owner task)."""
        cfg = self.cfg
        if cfg.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=cfg.command, args=cfg.args, env=cfg.env or None, cwd=cfg.cwd,
                encoding_error_handler="replace",  # invalid UTF-8 must not kill the reader (and the session)
            )
            owner.stderr = StderrTail(cfg.name)
            streams = await stack.enter_async_context(stdio_client(params, errlog=owner.stderr.writer()))
            owner.stderr.spawned()
            return streams
        if cfg.transport == "streamable-http":
            from mcp.client.streamable_http import streamable_http_client

            http = await stack.enter_async_context(self._http_client(owner, headers=cfg.headers or None))
            streams = await stack.enter_async_context(streamable_http_client(cfg.url, http_client=http))
            return streams[0], streams[1]
        if cfg.transport == "sse":
            from mcp.client.sse import sse_client

            def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
                return self._http_client(owner, headers=headers, auth=auth)

            streams = await stack.enter_async_context(
                sse_client(cfg.url, headers=cfg.headers or None, httpx_client_factory=factory)
            )
            return streams[0], streams[1]
        raise AssertionError(f"not a session transport: {cfg.transport}")

    def _http_client(self, owner: _Owner, headers: Any = None, auth: Any = None) -> Any:
        import httpx2  # the HTTP client the mcp 2.x SDK is built on

        async def record(response: Any) -> None:
            # The SDK turns an HTTP 401/403 into a bare JSON-RPC error; keep the status for the message.
            if response.status_code >= 400:
                owner.http_status = response.status_code
            if response.status_code == 404 and response.request.headers.get("mcp-session-id"):
                owner.session_expired = True

        # Read timeout: a streamed response may stay silent as long as the longest call may take.
        read = max(300.0, self.cfg.call_timeout + 30.0)
        class _Transport(httpx2.AsyncHTTPTransport):
            async def handle_async_request(self, request: Any) -> Any:
                try:
                    return await super().handle_async_request(request)
                except httpx2.ConnectError:
                    owner.unreachable = True  # the request never left: safe to send again elsewhere
                    raise

        return httpx2.AsyncClient(
            headers=headers,
            auth=auth,
            timeout=httpx2.Timeout(30.0, read=read),
            event_hooks={"response": [record]},
            transport=_Transport(),
        )


def _resolve(fut: asyncio.Future[Any], *, result: Any = None, exc: BaseException | None = None) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(result)
