"""Opening a store: URLs, the default file, migrations, and the errors for unusable databases."""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from chainreact.state import (
    StateConnectionError,
    StateError,
    StateSchemaError,
    Store,
    mask_url,
    open_store,
    parse_url,
    resolve_url,
)
from chainreact.state.migrations import LATEST, MIGRATIONS
from chainreact.types.messages import user

from .conftest import PG_URL, require_postgres

SRC = Path(__file__).resolve().parents[2] / "src"


def test_migration_numbering_is_the_same_for_both_backends() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, LATEST + 1))
    assert all(m.sqlite and m.postgres for m in MIGRATIONS)


async def test_migrations_applied_once(store_url: str) -> None:
    s = await open_store(store_url)
    try:
        assert await s.schema_version() == LATEST
        assert await s.migrate() == []
        await s.append("k", user("x"))
        info = await s.info()
        assert info.schema_version == info.latest_version == LATEST
        assert info.counts["sessions"] == 1 and info.counts["messages"] == 1
        assert "***" not in info.url or "@" in info.url
    finally:
        await s.close()
    s2 = await open_store(store_url)  # reopening keeps the data and applies nothing
    try:
        assert [m.text for m in await s2.history("k")] == ["x"]
        assert await s2.migrate() == []
    finally:
        await s2.close()


async def test_open_without_migrate_reports_version_zero(store_url: str) -> None:
    s = await open_store(store_url, migrate=False, create=True)
    try:
        assert await s.schema_version() == 0
        assert (await s.info()).counts == {}
        assert await s.migrate() == list(range(1, LATEST + 1))
    finally:
        await s.close()


async def test_newer_schema_is_refused(store: Store) -> None:
    # Simulate a database written by a future chainreact.
    await store.migrate()
    if store.backend == "sqlite":
        def bump() -> None:
            c = sqlite3.connect(store.url.path)
            c.execute("INSERT INTO chainreact_schema VALUES (?, 'future', 0)", (LATEST + 1,))
            c.commit()
            c.close()
        bump()
    else:
        import asyncpg

        conn = await asyncpg.connect(PG_URL)
        await conn.execute(f'INSERT INTO "{store.url.schema}".chainreact_schema VALUES ($1, $2, 0)',
                           LATEST + 1, "future")
        await conn.close()
    with pytest.raises(StateSchemaError, match=f"schema version {LATEST + 1} is newer"):
        await open_store(store.url.url)


async def test_concurrent_first_opens_migrate_once(store_url: str) -> None:
    stores = await asyncio.gather(*(open_store(store_url) for _ in range(4)))
    try:
        assert [await s.schema_version() for s in stores] == [LATEST] * 4
    finally:
        for s in stores:
            await s.close()


async def test_a_file_another_store_is_creating_is_not_taken_for_a_foreign_one(tmp_path: Path) -> None:
    # What a store sees when another store opening the same new file at the same moment has made the schema
    # table but its application id was read before it was set: the file is chainreact's (this race made
    # test_concurrent_first_opens_migrate_once fail about once in 150 runs under load).
    path = tmp_path / "s.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE chainreact_schema (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at REAL NOT NULL)")
    conn.commit()
    conn.close()
    store = await open_store(f"sqlite:///{path}")
    try:
        assert await store.schema_version() == LATEST
    finally:
        await store.close()


# ---------------------------------------------------------------------------- URLs


def test_mask_url_hides_the_password() -> None:
    assert mask_url("postgresql://bob:s3cret@db:5432/x?schema=a") == "postgresql://bob:***@db:5432/x?schema=a"
    assert mask_url("postgresql://bob@db/x") == "postgresql://bob@db/x"
    assert mask_url("sqlite:///a.db") == "sqlite:///a.db"


def test_parse_url_forms() -> None:
    assert parse_url("sqlite:///rel/x.db").path == "rel/x.db"
    assert parse_url("sqlite:////abs/x.db").path == "/abs/x.db"
    assert parse_url("some/file.db").backend == "sqlite"
    pg = parse_url("postgres://u:p@h:1/d?schema=s1&sslmode=disable")
    assert (pg.backend, pg.schema, pg.dsn) == ("postgres", "s1", "postgresql://u:p@h:1/d?sslmode=disable")
    assert parse_url("postgresql://h/d").schema == "chainreact"
    with pytest.raises(StateError, match="unknown scheme 'mysql'"):
        parse_url("mysql://u:pw@h/d")
    with pytest.raises(StateError, match="not a plain SQL identifier"):
        parse_url("postgresql://h/d?schema=a;drop")


def test_resolve_url_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHAINREACT_STATE", raising=False)
    assert resolve_url() == "sqlite:///.chainreact/state.db"
    assert resolve_url(document="sqlite:///doc.db") == "sqlite:///doc.db"
    monkeypatch.setenv("CHAINREACT_STATE", "sqlite:///env.db")
    assert resolve_url(document="sqlite:///doc.db") == "sqlite:///env.db"
    assert resolve_url("sqlite:///kw.db", document="sqlite:///doc.db") == "sqlite:///kw.db"


async def test_default_store_is_created_under_dot_chainreact(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHAINREACT_STATE", raising=False)
    monkeypatch.chdir(tmp_path)
    async with await open_store() as s:
        await s.append("k", user("x"))
    db = tmp_path / ".chainreact" / "state.db"
    assert db.is_file()
    c = sqlite3.connect(db)
    assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    c.close()


async def test_env_var_selects_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAINREACT_STATE", f"sqlite:///{tmp_path}/env.db")
    async with await open_store() as s:
        await s.append("k", user("x"))
    assert (tmp_path / "env.db").is_file()


# ---------------------------------------------------------------------------- unusable databases


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_database_down_names_the_url_with_password_masked() -> None:
    url = f"postgresql://bob:hunter2@127.0.0.1:{closed_port()}/test"
    with pytest.raises(StateConnectionError) as info:
        await open_store(url)
    msg = str(info.value)
    assert "hunter2" not in msg
    assert "postgresql://bob:***@127.0.0.1:" in msg


async def test_unknown_database_is_a_clear_error() -> None:
    require_postgres()
    url = PG_URL.rsplit("/", 1)[0] + "/no_such_database_here"
    with pytest.raises(StateConnectionError, match="no_such_database_here"):
        await open_store(url)


async def test_corrupt_sqlite_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "junk.db"
    content = b"this is not a database at all\n" * 100
    db.write_bytes(content)
    with pytest.raises(StateSchemaError, match="is not a SQLite database"):
        await open_store(f"sqlite:///{db}")
    assert db.read_bytes() == content


async def test_damaged_sqlite_file_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "damaged.db"
    async with await open_store(f"sqlite:///{db}") as s:
        await s.append("k", [user("x" * 100) for _ in range(200)])
    raw = bytearray(db.read_bytes())
    raw[100:4096 * 3] = b"\xff" * (4096 * 3 - 100)  # keep the header magic, wreck the schema pages
    db.write_bytes(bytes(raw))
    for name in ("damaged.db-wal", "damaged.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    with pytest.raises(StateSchemaError, match=r"corrupt|not a SQLite"):
        async with await open_store(f"sqlite:///{db}") as s:
            await s.history("k")


async def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    c = sqlite3.connect(db)
    c.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    c.commit()
    c.close()
    with pytest.raises(StateSchemaError, match=r"did not create \(tables: customers\)"):
        await open_store(f"sqlite:///{db}")
    c = sqlite3.connect(db)
    assert [r[0] for r in c.execute("SELECT name FROM sqlite_master")] == ["customers"]
    c.close()


# ---------------------------------------------------------------------------- concurrent writers

WRITER = """
import asyncio, os, sys, time
from chainreact.state import open_store
from chainreact.types.messages import user

url, name, ready, go = sys.argv[1:5]

async def main():
    store = await open_store(url)
    open(ready, "w").close()
    while not os.path.exists(go):
        time.sleep(0.005)
    for i in range(200):
        await store.append("shared", user(f"{name}-{i}"))
        # A short pause between appends, as a real writer has: without it one SQLite writer can hold
        # the lock for its whole loop while the other's busy handler sleeps, and nothing interleaves.
        await asyncio.sleep(0.001)
    await store.close()

asyncio.run(main())
"""


async def test_two_processes_append_to_one_session(store_url: str, tmp_path: Path) -> None:
    s = await open_store(store_url)  # the schema exists before the race
    await s.close()
    env = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, store_url, name, str(tmp_path / f"ready-{name}"),
                               str(go)], env=env, stderr=subprocess.PIPE, text=True) for name in ("A", "B")]
    try:
        for _ in range(3000):
            ready = all((tmp_path / f"ready-{n}").exists() for n in "AB")
            if ready or any(p.poll() is not None for p in procs):
                break
            await asyncio.sleep(0.01)
        go.touch()
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err[-2000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    async with await open_store(store_url) as s:
        got = [m.text for m in await s.history("shared")]
    assert len(got) == 400
    for name in "AB":
        assert [t for t in got if t.startswith(name)] == [f"{name}-{i}" for i in range(200)]
    # They did run at the same time (otherwise this test proves little).
    first_b = next(i for i, t in enumerate(got) if t.startswith("B"))
    first_a = next(i for i, t in enumerate(got) if t.startswith("A"))
    assert first_a < 400 - 200 and first_b < 400 - 200
