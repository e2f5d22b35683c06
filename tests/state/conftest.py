"""One store fixture, parametrized over both backends: every test in tests/state runs on SQLite and on a
real PostgreSQL server ($CHAINREACT_TEST_POSTGRES, default postgresql://postgres@127.0.0.1:5432/test).

Each PostgreSQL test gets its own schema, dropped afterwards. Without a server the PostgreSQL half skips,
except under CI=true, where it fails: CI must test the shared backend.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlsplit

import pytest

from chainreact.state import Store, open_store

PG_URL = os.environ.get("CHAINREACT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
_reachable: bool | None = None


def postgres_available() -> bool:
    global _reachable
    if _reachable is None:
        parts = urlsplit(PG_URL)
        try:
            with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 5432), timeout=2):
                _reachable = True
        except OSError:
            _reachable = False
    return _reachable


def require_postgres() -> None:
    if postgres_available():
        return
    msg = f"PostgreSQL not reachable at {PG_URL}"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(msg + " (CI=true: the PostgreSQL tests must run)")
    pytest.skip(msg)


async def drop_schema(schema: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_URL)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[str]:
    """A fresh store URL of each backend (the database is created by the first open)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/state.db"
        return
    require_postgres()
    schema = "t_" + uuid.uuid4().hex[:16]
    yield f"{PG_URL}?schema={schema}"
    import asyncio

    asyncio.run(drop_schema(schema))


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[Store]:
    s = await open_store(store_url)
    try:
        yield s
    finally:
        await s.close()
