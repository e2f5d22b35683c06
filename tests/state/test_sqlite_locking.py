"""SQLite: the hot path runs inline on the event loop, and hands over to the worker thread when another
process holds the write lock, so the loop keeps running while the append waits."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

from chainreact.state import open_store
from chainreact.types.messages import user


async def test_append_waits_for_a_foreign_lock_without_blocking_the_loop(tmp_path: Path) -> None:
    db = tmp_path / "locked.db"
    async with await open_store(f"sqlite:///{db}") as store:
        await store.append("s", user("first"))  # inline, nobody else writing
        other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock ...
        release = threading.Timer(0.5, lambda: other.execute("COMMIT"))  # ... for half a second
        release.start()
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        try:
            assert await store.append("s", user("second")) == 2
            await store.save_run("r", {"n": 1})
        finally:
            task.cancel()
            release.join()
            other.close()
        assert ticks >= 20  # the loop ran while the append waited for the lock
        assert [m.text for m in await store.history("s", last=5)] == ["first", "second"]
        assert (await store.load_run("r")).snapshot == {"n": 1}
