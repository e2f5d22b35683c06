"""A real uvicorn server on a free loopback port, in a thread, started and stopped by each test."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chainreact.server import Catalog, KeyStore, create_app
from chainreact.server.background import BackgroundServer
from tests.state.conftest import store_url  # noqa: F401  (the fixture: a store on SQLite and on PostgreSQL)


class Served(BackgroundServer):
    """A real uvicorn server in a thread (the project's one starter), its lifespan required to start."""

    def __init__(self, app: Any):
        super().__init__(app, lifespan="on", start_timeout=10.0)


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
