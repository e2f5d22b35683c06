"""Starting uvicorn, the one way chainreact does it: `chainreact serve` in the foreground (`uvicorn_server`),
and a server in a daemon thread on a free loopback port for examples, notebooks and tests
(`BackgroundServer`, `serve_in_background`).

For an app made by `create_app`, the process options of its ServerConfig (host, port, loop, http,
forwarded_allow_ips, header_limit) configure uvicorn unless given here, and SIGTERM/SIGINT first begin
the runs' grace period (RunRegistry.begin_shutdown); a second Ctrl-C stops at once; a graceful stop
exits 0 (uvicorn would re-raise the signal and die by it). uvicorn's protocol is its own with a limit on
a request's head (head_limit.py).
"""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, Literal, Self, cast

from .config import ServerConfig

Lifespan = Literal["auto", "on", "off"]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def uvicorn_server(app: Any, *, host: str | None = None, port: int | None = None, log_level: str = "warning",
                   lifespan: Lifespan = "auto", timeout_graceful_shutdown: float | None = None,
                   on_started: Callable[[], None] | None = None) -> Any:
    """A uvicorn.Server for `app` (not started: `.run()` it, or `BackgroundServer`). `on_started` is called
    once the server listens (chainreact serve tunes the garbage collector there)."""
    import uvicorn

    from .head_limit import protocol_class

    ctx = getattr(getattr(app, "state", None), "ctx", None)
    cfg: ServerConfig = getattr(ctx, "config", None) or ServerConfig()
    config = uvicorn.Config(app, host=host or cfg.host, port=cfg.port if port is None else port,
                            log_level=log_level, lifespan=lifespan, access_log=False,
                            # uvicorn annotates int, but waits with asyncio: any number of seconds.
                            timeout_graceful_shutdown=cast(int | None, timeout_graceful_shutdown),
                            forwarded_allow_ips=cfg.forwarded_allow_ips, loop=cfg.loop,
                            # The request head's size limit: h11 enforces it itself, the protocol class
                            # reads it for httptools (head_limit.py).
                            http=protocol_class(cfg.http), h11_max_incomplete_event_size=cfg.header_limit)
    return _server_class()(config, getattr(ctx, "runs", None), on_started)


@functools.cache
def _server_class() -> Any:
    import signal

    import uvicorn

    class GracefulServer(uvicorn.Server):
        """uvicorn's server, told by SIGTERM/SIGINT to stop accepting and start the runs' grace period."""

        def __init__(self, config: uvicorn.Config, registry: Any, on_started: Callable[[], None] | None):
            super().__init__(config)
            self.registry = registry
            self.on_started = on_started

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.on_started is not None:
                self.on_started()

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if self.registry is not None:
                self.registry.begin_shutdown()
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True  # a second Ctrl-C: stop now
            self.should_exit = True

    return GracefulServer


class BackgroundServer:
    """`app` under uvicorn in a daemon thread (a free loopback port unless `port` is given): `url`, `port`,
    `server` (the uvicorn.Server); `start()`/`stop()`, or use it as a context manager."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int | None = None,
                 log_level: str = "error", lifespan: Lifespan = "auto", start_timeout: float = 30.0,
                 stop_timeout: float = 10.0, timeout_graceful_shutdown: float | None = None):
        self.app, self.host = app, host
        self.port = free_port(host) if port is None else port
        self.url = f"http://{host}:{self.port}"
        self.start_timeout, self.stop_timeout = start_timeout, stop_timeout
        self._kw: dict[str, Any] = {"log_level": log_level, "lifespan": lifespan,
                                    "timeout_graceful_shutdown": timeout_graceful_shutdown}
        self.server: Any = None
        self.thread: threading.Thread | None = None

    def start(self) -> Self:
        self.server = uvicorn_server(self.app, host=self.host, port=self.port, **self._kw)
        self.thread = threading.Thread(target=self.server.run, name="chainreact-server", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + self.start_timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start on {self.host}:{self.port}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self.server is not None and self.thread is not None:
            self.server.should_exit = True
            self.thread.join(self.stop_timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def serve_in_background(app: Any, *, host: str = "127.0.0.1", start_timeout: float = 30.0) -> Iterator[str]:
    """Run `app` under uvicorn in a daemon thread; yields its base URL and stops it (lifespan included)
    on exit."""
    with BackgroundServer(app, host=host, start_timeout=start_timeout) as server:
        yield server.url


__all__ = ["BackgroundServer", "free_port", "serve_in_background", "uvicorn_server"]
