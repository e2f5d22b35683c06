"""PostgreSQL faults: a store goes on after the server kills its connections."""

from __future__ import annotations

import asyncio
from typing import Any

from chainreact.state import open_store
from chainreact.state.postgres import PostgresStore
from chainreact.types.messages import user

from .conftest import PG_URL, drop_schema, require_postgres


async def test_store_survives_killed_connections() -> None:
    require_postgres()
    import asyncpg

    schema = "t_faults"
    await drop_schema(schema)
    store = await open_store(f"{PG_URL}?schema={schema}")
    assert isinstance(store, PostgresStore)
    admin = await asyncpg.connect(PG_URL)
    try:
        await store.append("k", user("before"))

        async def pid(c: Any) -> int:
            return int(await c.fetchval("SELECT pg_backend_pid()"))
        victim = await store._run(pid, write=False)
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", victim) is True
        await asyncio.sleep(0.2)
        # Reads and writes go on over a new connection; nothing is lost or doubled.
        assert [m.text for m in await store.history("k")] == ["before"]
        await store.append("k", user("after"))
        assert [m.text for m in await store.history("k")] == ["before", "after"]
        assert await store._run(pid, write=False) != victim
    finally:
        await admin.close()
        await store.close()
        await drop_schema(schema)
