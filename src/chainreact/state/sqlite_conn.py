"""The embedded backend's connections (sqlite.py has its data operations): the standard library's
sqlite3 on one worker thread, WAL mode.

Two connections per store. The worker connection lives on one worker thread and serves everything
that may take long (migrations, full histories, searches) and anything that has to wait for a lock
(busy_timeout 30 s), so the event loop never blocks on those. The inline connection serves the run's
hot path (append, window read, checkpoint save/load, events) directly on the event loop's thread with
busy_timeout 0: in WAL mode these are tens of microseconds, less than the thread hand-off they would
otherwise cost (measured: 32 of a save's 54 µs of CPU were the hop). If the database is locked by
another writer, the inline attempt fails at once (its transaction rolled back) and the operation is
handed to the worker, which waits for the lock. The worker checkpoints the WAL (a checkpoint can take
milliseconds) every few hundred inline commits; the inline connection then copies only the frames
written meanwhile, after its next commit, so that the write after it starts the WAL over
(`_checkpoint_wal`).

Writes take the database lock up front (BEGIN IMMEDIATE), so concurrent writers in other processes wait
instead of failing half-way.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any, Self, TypeVar

from .base import Store
from .errors import StateError, StateSchemaError
from .migrations import COUNTED, LATEST, SCHEMA_TABLE_SQLITE, pending
from .url import StoreURL

T = TypeVar("T")

# PRAGMA application_id marks the file as ours ("CRst"): a SQLite file with tables and another id is
# someone else's database, and we refuse it rather than add our tables to it.
APPLICATION_ID = 0x43527374
_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 30_000
CHECKPOINT_EVERY = 500  # inline commits between WAL checkpoints (SQLite's own default: 1000 pages)
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6


class SQLiteConnections(Store):
    """The two connections, their threads and the schema; SQLiteStore (sqlite.py) adds the data."""

    backend = "sqlite"

    def __init__(self, url: StoreURL):
        super().__init__(url)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chainreact-sqlite")
        self._conn: sqlite3.Connection | None = None  # the worker thread's
        self._inline: sqlite3.Connection | None = None  # the event loop thread's (hot path)
        self._inline_thread = 0
        self._inline_commits = 0
        self._copy_rest = False  # the worker has checkpointed: the inline connection copies what is left

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def open(cls, url: StoreURL, *, migrate: bool = True, create: bool = True) -> Self:
        store = cls(url)
        try:
            await store._call(store._open_sync, create)
            if migrate:
                await store.migrate()
            else:
                await store._check_version()
            if url.path != ":memory:" and (migrate or await store.schema_version() == LATEST):
                store._open_inline()
        except BaseException:
            await store.close()
            raise
        return store

    def _open_inline(self) -> None:
        conn = sqlite3.connect(self.url.path, isolation_level=None, check_same_thread=False, timeout=0)
        conn.execute("PRAGMA busy_timeout = 0")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        self._inline, self._inline_thread = conn, threading.get_ident()

    async def close(self) -> None:
        if self._inline is not None:
            inline, self._inline = self._inline, None
            inline.close()
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await asyncio.get_running_loop().run_in_executor(self._executor, conn.close)
        self._executor.shutdown(wait=False)

    async def _call(self, fn: Callable[..., T], *args: Any, inline: bool = False) -> T:
        """Run `fn(*args)`; with `inline`, first directly on the loop thread's connection (see above)."""
        try:
            if inline and self._inline is not None and threading.get_ident() == self._inline_thread:
                try:
                    return fn(*args)
                except sqlite3.OperationalError as e:
                    if getattr(e, "sqlite_errorcode", 0) & 0xFF not in (_SQLITE_BUSY, _SQLITE_LOCKED):
                        raise
                    # Another writer holds the lock: let the worker wait for it.
            return await asyncio.get_running_loop().run_in_executor(self._executor, partial(fn, *args))
        except sqlite3.OperationalError as e:  # locked past busy_timeout, disk full, read-only file ...
            raise StateError(f"state store {self.url.masked}: {e}") from None
        except sqlite3.DatabaseError as e:
            raise StateSchemaError(f"state store {self.url.masked}: {self.url.path} cannot be read as a "
                                   f"SQLite database ({e}); it may be corrupt: move it away or restore a "
                                   "backup") from None

    @property
    def _c(self) -> sqlite3.Connection:
        """The connection of the calling thread: the inline one on the loop thread, else the worker's."""
        if self._inline is not None and threading.get_ident() == self._inline_thread:
            return self._inline
        if self._conn is None:
            raise StateError(f"the state store {self.url.masked} is closed")
        return self._conn

    def _checkpoint_wal(self) -> None:
        """Move the WAL into the file, so that a later write starts the WAL over.

        The WAL starts over only when a write begins with every frame copied, which a loop committing
        while the worker copies never meets: with the worker's PASSIVE copy alone the WAL grew without
        bound (37 MB after 4,000 saves) and each commit wrote to new pages of the file. Ending with
        RESTART from the worker was not enough either: under load it did not get the lock from the
        back-to-back commits within its wait (27 MB in CI). So the worker copies the bulk, and the
        inline connection copies what came in meanwhile right after its next commit (`_committed`):
        between its own commits the writer is sure nothing of its own is in flight.
        """
        c = self._conn
        if c is None:
            return
        c.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        self._copy_rest = True  # its counts are of the WAL as it began: they miss what came in since

    def _open_sync(self, create: bool) -> None:
        path = self.url.path
        where = f"state store {self.url.masked}"
        if path != ":memory:":
            p = Path(path)
            if not create and not p.exists():
                raise StateError(f"{where}: there is no store at {path} yet (it is created on first use, or "
                                 "by `chainreact state migrate`)")
            if p.is_dir():
                raise StateSchemaError(f"{where}: {path} is a directory, not a SQLite file")
            if p.exists() and p.stat().st_size > 0:
                with p.open("rb") as f:
                    if f.read(16) != _HEADER:
                        raise StateSchemaError(
                            f"{where}: {path} is not a SQLite database (corrupt, or another kind of file); "
                            "move it away or point CHAINREACT_STATE elsewhere")
            p.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                                   timeout=BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as e:
            raise StateError(f"{where}: cannot open {path} ({e})") from None
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            if app_id != APPLICATION_ID:
                tables = [r[0] for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name")]
                # Another store opening the same new file may have claimed it and made its tables between
                # the two reads above: its schema table says the file is chainreact's after all.
                if tables and "chainreact_schema" not in tables:
                    shown = ", ".join(tables[:5]) + (" ..." if len(tables) > 5 else "")
                    raise StateSchemaError(
                        f"{where}: {path} is a SQLite database that chainreact did not create (tables: "
                        f"{shown}); refusing to use it. Give the store its own file.")
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            # WAL: readers never wait for the writer. synchronous=NORMAL is safe against process crashes
            # in WAL mode (a power loss can lose the last commits, never corrupt the file).
            if path != ":memory:":
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StateError(f"{where}: could not switch {path} to WAL mode (got {mode})")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        except sqlite3.DatabaseError as e:
            conn.close()
            raise StateSchemaError(f"{where}: {path} cannot be read as a SQLite database ({e}); it may be "
                                   "corrupt: move it away or restore a backup") from None
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        c = self._c
        c.execute("BEGIN IMMEDIATE")
        try:
            yield c
        except BaseException:
            c.execute("ROLLBACK")
            raise
        c.execute("COMMIT")
        self._committed(c)

    def _committed(self, c: sqlite3.Connection) -> None:
        if c is self._inline:
            self._inline_commits += 1
            if self._copy_rest:  # the few frames written while the worker copied: milliseconds at most
                self._copy_rest = False
                with suppress(sqlite3.Error):  # the commit stands; a busy file is copied next time
                    c.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            elif self._inline_commits % CHECKPOINT_EVERY == 0:
                self._executor.submit(self._checkpoint_wal)  # the worker moves the WAL into the file

    # ------------------------------------------------------------------ schema

    def _version_sync(self) -> int:
        c = self._c
        if not c.execute("SELECT 1 FROM sqlite_master WHERE name = 'chainreact_schema'").fetchone():
            return 0
        return int(c.execute("SELECT coalesce(max(version), 0) FROM chainreact_schema").fetchone()[0])

    async def schema_version(self) -> int:
        return await self._call(self._version_sync)

    async def _check_version(self) -> int:
        version = await self.schema_version()
        if version > LATEST:
            raise StateSchemaError(
                f"state store {self.url.masked}: schema version {version} is newer than this chainreact "
                f"knows ({LATEST}); upgrade chainreact")
        return version

    def _migrate_sync(self) -> list[int]:
        applied = []
        with self._write() as c:
            c.execute(SCHEMA_TABLE_SQLITE)
            current = self._version_sync()
            if current > LATEST:
                raise StateSchemaError(
                    f"state store {self.url.masked}: schema version {current} is newer than this chainreact "
                    f"knows ({LATEST}); upgrade chainreact")
            for m in pending(current):
                for stmt in m.sqlite:
                    c.execute(stmt)
                c.execute("INSERT INTO chainreact_schema (version, name, applied_at) VALUES (?, ?, ?)",
                          (m.version, m.name, time.time()))
                applied.append(m.version)
        return applied

    async def migrate(self) -> list[int]:
        return await self._call(self._migrate_sync)

    def _counts_sync(self) -> dict[str, int]:
        c = self._c
        return {t: int(c.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in COUNTED}

    async def _counts(self) -> dict[str, int]:
        return await self._call(self._counts_sync)
