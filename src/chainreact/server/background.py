"""A server in a background thread on a free loopback port: for examples, notebooks and tests."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def serve_in_background(app: Any, *, host: str = "127.0.0.1", start_timeout: float = 30.0) -> Iterator[str]:
    """Run `app` under uvicorn in a daemon thread; yields its base URL and stops it (lifespan included)
    on exit."""
    import uvicorn

    with socket.socket() as s:
        s.bind((host, 0))
        port = int(s.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="error"))
    thread = threading.Thread(target=server.run, name="chainreact-server", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + start_timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start on {host}:{port}")
            time.sleep(0.01)
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
