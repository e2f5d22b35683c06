"""What an MCP connection tells when it fails: a stdio server's stderr tail, a hint at the likely cause,
which errors mean the session is lost, readable error texts, and the SDK's own log records routed into
the `chainreact.tools.mcp` logger (client.py's docstring says why)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from typing import Any

from .config import MCPServerConfig

log = logging.getLogger("chainreact.tools.mcp")

_CONNECTION_CLOSED = -32000  # JSON-RPC code the SDK uses for a closed transport


class StderrTail:
    """The stdio server's stderr: logged at DEBUG and the last lines kept for error messages."""

    def __init__(self, name: str, keep: int = 20):
        self.name = name
        self.lines: deque[str] = deque(maxlen=keep)
        self._partial = b""
        r, w = os.pipe()
        self._w: Any = os.fdopen(w, "w")
        self._transport: asyncio.ReadTransport | None = None
        loop = asyncio.get_running_loop()
        tail = self

        class _Proto(asyncio.Protocol):
            def data_received(self, data: bytes) -> None:
                tail._feed(data)

        self._rfile = os.fdopen(r, "rb", buffering=0)
        # connect_read_pipe is scheduled now and completes at the next loop iteration.
        self._connecting = loop.create_task(loop.connect_read_pipe(_Proto, self._rfile))
        self._connecting.add_done_callback(self._connected)

    def _connected(self, fut: asyncio.Future[Any]) -> None:
        if not fut.cancelled() and fut.exception() is None:
            self._transport = fut.result()[0]

    def writer(self) -> Any:
        return self._w

    def spawned(self) -> None:
        # The child holds its own copy; closing ours lets the pipe reach EOF when the child exits.
        self._w.close()

    def _feed(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        if len(self._partial) > 8192:  # a line without end must not grow forever
            lines.append(self._partial)
            self._partial = b""
        for raw in lines:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                self.lines.append(line)
                log.debug("[%s stderr] %s", self.name, line)

    def close(self) -> None:
        """Read what is left in the pipe (a dying server's last words), then release it."""
        if not self._w.closed:
            self._w.close()
        if self._transport is None and self._connecting.done():
            self._connected(self._connecting)
        else:
            self._connecting.cancel()
        try:
            fd = self._rfile.fileno()
            os.set_blocking(fd, False)
            while data := os.read(fd, 65536):
                self._feed(data)
        except (OSError, ValueError):  # EAGAIN (a live grandchild holds the pipe) or already closed
            pass
        if self._partial:
            self._feed(b"\n")
        if self._transport is not None:
            self._transport.close()
        else:
            self._rfile.close()


def stderr_tail(owner: Any) -> str:
    """The last lines of a stdio server's stderr, for an error message (owner: client.py's _Owner)."""
    if owner.stderr is None or not owner.stderr.lines:
        return ""
    return "\nserver stderr (last lines):\n  " + "\n  ".join(owner.stderr.lines)


def hint(cfg: MCPServerConfig, cause: BaseException | None, http_status: int | None) -> str:
    if cfg.transport == "stdio":
        if isinstance(cause, FileNotFoundError):
            return f"; check config.command ({cfg.command!r} was not found on PATH)"
        return "; check config.command/args and the server's stderr"
    if http_status in (401, 403):
        return f"; the server rejected the credentials (HTTP {http_status}): check auth / headers"
    if http_status is not None:
        return f"; the server answered HTTP {http_status}: check the url"
    return "; check the url and that the server is running"


def is_session_loss(e: BaseException) -> bool:
    import anyio

    if isinstance(
        e, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream | ConnectionError
    ):
        return True
    err = getattr(e, "error", None)
    code = getattr(err, "code", None)
    message = str(getattr(err, "message", "") or "")
    return code == _CONNECTION_CLOSED or "session terminated" in message.lower()


def leaf(e: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from anyio task groups."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return e


def describe(e: BaseException) -> str:
    e = leaf(e)
    err = getattr(e, "error", None)
    if err is not None and getattr(err, "message", None):
        return f"{err.message} (MCP error {getattr(err, 'code', '?')})"
    response = getattr(e, "response", None)
    status = getattr(response, "status_code", None)
    text = str(e) or type(e).__name__
    if status is not None and str(status) not in text:
        text = f"HTTP {status}: {text}"
    return f"{type(e).__name__}: {text}" if type(e).__name__ not in text else text


class SdkLogRouter(logging.Handler):
    """The SDK's log records, into `chainreact.tools.mcp`: the first of each kind (logger and message) as
    one WARNING line without traceback, every repeat (and the tracebacks) at DEBUG."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: set[tuple[str, str]] = set()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            key = (record.name, str(record.msg))
            first = key not in self.seen
            if first and len(self.seen) < 1000:
                self.seen.add(key)
            exc = record.exc_info[1] if record.exc_info else None
            detail = ""
            if exc is not None:
                text = str(exc).strip().splitlines()
                detail = f" ({type(exc).__name__}: {text[0] if text else ''})"
            if first and record.levelno >= logging.WARNING:
                log.warning("MCP SDK %s: %s%s [repeats are logged at DEBUG]", record.name,
                            record.getMessage(), detail)
            elif log.isEnabledFor(logging.DEBUG):
                log.debug("MCP SDK %s: %s", record.name, record.getMessage(), exc_info=record.exc_info)
        except Exception:  # a log handler must never raise
            self.handleError(record)


_router: SdkLogRouter | None = None


def route_sdk_logs() -> None:
    """Install the router on the SDK's `mcp` logger once, unless the application configured that logger
    itself (then its handlers decide)."""
    global _router
    sdk = logging.getLogger("mcp")
    if _router is not None or sdk.handlers:
        return
    _router = SdkLogRouter()
    sdk.addHandler(_router)
    sdk.propagate = False
