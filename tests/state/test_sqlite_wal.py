"""SQLite: under a steady stream of inline writes the WAL file stays bounded. The worker's checkpoint
ends so that the next write starts the WAL over; a checkpoint that only copies (PASSIVE) while the loop
keeps committing leaves the WAL growing, and every commit then writes to new pages of the file."""

from __future__ import annotations

import os
from pathlib import Path

from chainreact.state import open_store
from chainreact.state.sqlite_conn import CHECKPOINT_EVERY

SNAPSHOT = {"messages": [{"role": "user", "content": "x" * 180} for _ in range(8)]}


async def test_the_wal_starts_over_under_a_steady_stream_of_saves(tmp_path: Path) -> None:
    db = tmp_path / "busy.db"
    saves = 8 * CHECKPOINT_EVERY
    async with await open_store(f"sqlite:///{db}") as store:
        for r in range(saves // 8):  # back to back, as fast as the loop can commit
            version = 0
            for _ in range(8):
                version = await store.save_run(f"run-{r}", SNAPSHOT, expect_version=version)
        await store._call(lambda: None)  # the worker's queued checkpoints are done
        wal = os.path.getsize(f"{db}-wal")
        assert (await store.load_run(f"run-{saves // 8 - 1}")).version == 8
    # One save writes 2-3 pages (4 kB each) to the WAL: without starting over it holds all of them.
    frames_per_cycle = 3 * CHECKPOINT_EVERY
    assert wal < 3 * frames_per_cycle * 4120, f"WAL {wal / 1e6:.1f} MB after {saves} saves"
