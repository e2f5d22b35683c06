"""A real uvicorn server on a free loopback port, in a thread, started and stopped by each test."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from chainreact.server import Catalog, KeyStore, create_app


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    def __init__(self, app: Any):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error",
                                                    lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def factory(docs: dict[str, dict[str, Any]], *, keys: dict[str, Any] | None = None,
                body_limit: int = 10 * 1024 * 1024, globals: dict[str, Any] | None = None,
                **extras: Any) -> Served:
        folder = tmp_path / "served"
        folder.mkdir(exist_ok=True)
        for name, doc in docs.items():
            (folder / name).write_text(json.dumps(doc))
        key_store = None
        if keys is not None:
            (tmp_path / "keys.json").write_text(json.dumps(keys))
            key_store = KeyStore.load(tmp_path / "keys.json")
        catalog = Catalog.load([folder], globals=globals)
        s = Served(create_app(catalog, keys=key_store, body_limit=body_limit, **extras)).__enter__()
        started.append(s)
        return s

    yield factory
    for s in started:
        s.__exit__()
