"""The shared backend: PostgreSQL through asyncpg's connection pool (extra `postgres`).

asyncpg rather than psycopg 3: measured here on the same server (2,000 single-row transactions, then
2,000 reads of 20 rows, one pool), writes were alike (~2,400 vs ~2,800/s, both bound by the commit) and
reads were 1.4x faster with asyncpg (5,400 vs 3,900/s); it is also one wheel with no libpq.

Every write is one statement (a CTE where it touches two tables), so it commits atomically in one round
trip and the row lock its upsert takes orders concurrent writers. The tables live in their own schema
(`?schema=`, default `chainreact`), so the store never mixes with an application's tables.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .base import MemoryEntry, MessageRow, RunEvent, RunRecord, SessionInfo, Store
from .codec import loads
from .errors import RunConflictError, StateConnectionError, StateError, StateSchemaError
from .migrations import COUNTED, LATEST, SCHEMA_TABLE_POSTGRES, pending
from .url import StoreURL

T = TypeVar("T")
CONNECT_TIMEOUT = 10.0
RETRIES = 3


def _asyncpg() -> Any:
    try:
        import asyncpg
    except ImportError:
        raise StateError("the PostgreSQL state store needs asyncpg: pip install 'chainreact[postgres]'") \
            from None
    return asyncpg


async def _keep_session(conn: Any) -> None:
    """The pool's reset on release. asyncpg's default sends `RESET ALL; CLOSE ALL; UNLISTEN *; SELECT
    pg_advisory_unlock_all()`, one more round trip per operation (it doubled an append's cost); the store
    leaves no session state behind (no SET, cursors, LISTEN or session-level locks), so none is needed."""
    return None


class PostgresStore(Store):
    backend = "postgres"

    def __init__(self, url: StoreURL, pool: Any):
        super().__init__(url)
        self._pool = pool
        asyncpg = _asyncpg()
        # Errors after which the connection is gone. InterfaceError("connection is closed") is raised
        # before anything is sent; the others may come after the server received the statement.
        self._lost_before_send: tuple[type[BaseException], ...] = (asyncpg.InterfaceError,)
        self._lost: tuple[type[BaseException], ...] = (
            OSError, asyncio.TimeoutError, asyncpg.PostgresConnectionError,
            asyncpg.exceptions.OperatorInterventionError, asyncpg.InterfaceError)

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def open(cls, url: StoreURL, *, migrate: bool = True, max_size: int = 10) -> PostgresStore:
        asyncpg = _asyncpg()
        try:
            pool = await asyncpg.create_pool(
                url.dsn, min_size=1, max_size=max_size, timeout=CONNECT_TIMEOUT, command_timeout=60,
                server_settings={"search_path": url.schema, "application_name": "chainreact"},
                reset=_keep_session)
        except Exception as e:
            raise StateConnectionError(
                f"cannot connect to the state database {url.masked}: {type(e).__name__}: {e}. Is the server "
                "running and the URL right (user, host, port, database)?") from None
        store = cls(url, pool)
        try:
            if migrate:
                await store.migrate()
            else:
                version = await store.schema_version()
                if version > LATEST:
                    raise StateSchemaError(
                        f"state store {url.masked}: schema version {version} is newer than this chainreact "
                        f"knows ({LATEST}); upgrade chainreact")
        except BaseException:
            await store.close()
            raise
        return store

    async def close(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    async def _run(self, body: Callable[[Any], Awaitable[T]], *, write: bool) -> T:
        """Run `body(connection)`, retrying on a lost connection when that cannot repeat a write."""
        if self._pool is None:
            raise StateError(f"the state store {self.url.masked} is closed")
        delay = 0.1
        for attempt in range(RETRIES + 1):
            try:
                async with self._pool.acquire() as conn:
                    return await body(conn)
            except self._lost as e:
                if write and not isinstance(e, self._lost_before_send):
                    raise StateConnectionError(
                        f"state store {self.url.masked}: the connection was lost during a write "
                        f"({type(e).__name__}: {e}); it may or may not have been applied") from None
                if attempt == RETRIES:
                    raise StateConnectionError(
                        f"state store {self.url.masked}: connection lost and {RETRIES} retries failed "
                        f"({type(e).__name__}: {e})") from None
                await asyncio.sleep(delay)
                delay *= 4
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ schema

    async def schema_version(self) -> int:
        async def body(c: Any) -> int:
            exists = await c.fetchval("SELECT to_regclass($1)", f"{self.url.schema}.chainreact_schema")
            if exists is None:
                return 0
            return int(await c.fetchval("SELECT coalesce(max(version), 0) FROM chainreact_schema"))
        return await self._run(body, write=False)

    async def migrate(self) -> list[int]:
        schema = self.url.schema

        async def body(c: Any) -> list[int]:
            applied = []
            async with c.transaction():
                # One migrator at a time per schema: others wait here, then find nothing pending.
                await c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"chainreact-migrate:{schema}")
                await c.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                await c.execute(SCHEMA_TABLE_POSTGRES)
                current = int(await c.fetchval("SELECT coalesce(max(version), 0) FROM chainreact_schema"))
                if current > LATEST:
                    raise StateSchemaError(
                        f"state store {self.url.masked}: schema version {current} is newer than this "
                        f"chainreact knows ({LATEST}); upgrade chainreact")
                for m in pending(current):
                    for stmt in m.postgres:
                        await c.execute(stmt)
                    await c.execute("INSERT INTO chainreact_schema (version, name, applied_at) "
                                    "VALUES ($1, $2, $3)", m.version, m.name, time.time())
                    applied.append(m.version)
            return applied
        return await self._run(body, write=True)

    async def _counts(self) -> dict[str, int]:
        async def body(c: Any) -> dict[str, int]:
            return {t: int(await c.fetchval(f"SELECT count(*) FROM {t}")) for t in COUNTED}
        return await self._run(body, write=False)

    async def info(self) -> Any:
        out = await super().info()

        async def body(c: Any) -> str:
            return str(await c.fetchval("SHOW server_version"))
        out.details = {"schema": self.url.schema, "server_version": await self._run(body, write=False)}
        return out

    # ------------------------------------------------------------------ conversations

    async def _append(self, session: str, rows: list[MessageRow], now: float) -> int:
        n, tokens = len(rows), sum(r.tokens for r in rows)
        before, acc = [], 0
        for r in rows:
            before.append(acc)
            acc += r.tokens

        async def body(c: Any) -> int:
            return int(await c.fetchval(
                "WITH s AS (INSERT INTO sessions (session_key, last_seq, total_tokens, created_at, "
                "updated_at) "
                "VALUES ($1, $2, $3, $4, $4) ON CONFLICT (session_key) DO UPDATE SET "
                "last_seq = sessions.last_seq + EXCLUDED.last_seq, "
                "total_tokens = sessions.total_tokens + EXCLUDED.total_tokens, "
                "updated_at = EXCLUDED.updated_at RETURNING last_seq, total_tokens), "
                "ins AS (INSERT INTO messages (session_key, seq, role, tokens_before, data, created_at) "
                "SELECT $1, s.last_seq - $2 + m.ord, m.role, s.total_tokens - $3 + m.before, "
                "m.data::jsonb, $4 "
                "FROM s, unnest($5::text[], $6::bigint[], $7::text[]) WITH ORDINALITY AS m(role, "
                "before, data, ord)"
                " RETURNING seq) SELECT max(seq) FROM ins",
                session, n, tokens, now, [r.role for r in rows], before, [r.data for r in rows]))
        return await self._run(body, write=True)

    async def _last_seq(self, session: str) -> int:
        async def body(c: Any) -> int:
            v = await c.fetchval("SELECT last_seq FROM sessions WHERE session_key = $1", session)
            return int(v or 0)
        return await self._run(body, write=False)

    async def _tail(self, session: str, last: int | None, max_tokens: int | None) -> list[str]:
        sql = "SELECT data::text FROM messages WHERE session_key = $1"
        params: list[Any] = [session]
        if max_tokens is not None:
            sql += " AND tokens_before >= (SELECT total_tokens FROM sessions WHERE session_key = $1) - $2"
            params.append(max_tokens)

        async def body(c: Any) -> list[str]:
            if last is None:
                return [r[0] for r in await c.fetch(sql + " ORDER BY seq", *params)]
            rows = await c.fetch(sql + f" ORDER BY seq DESC LIMIT ${len(params) + 1}", *params, last)
            return [r[0] for r in reversed(rows)]
        return await self._run(body, write=False)

    _SESSION_COLS = "session_key, last_seq, total_tokens, created_at, updated_at"

    @staticmethod
    def _session(r: Any) -> SessionInfo:
        return SessionInfo(r[0], int(r[1]), int(r[2]), float(r[3]), float(r[4]))

    async def sessions(self, *, limit: int = 100, offset: int = 0) -> list[SessionInfo]:
        async def body(c: Any) -> list[SessionInfo]:
            rows = await c.fetch(f"SELECT {self._SESSION_COLS} FROM sessions ORDER BY updated_at DESC, "
                                 "session_key LIMIT $1 OFFSET $2", limit, offset)
            return [self._session(r) for r in rows]
        return await self._run(body, write=False)

    async def session_info(self, session: str) -> SessionInfo | None:
        async def body(c: Any) -> SessionInfo | None:
            r = await c.fetchrow(f"SELECT {self._SESSION_COLS} FROM sessions WHERE session_key = $1", session)
            return self._session(r) if r else None
        return await self._run(body, write=False)

    async def delete_session(self, session: str) -> bool:
        async def body(c: Any) -> bool:
            return bool(await c.fetchval(
                "WITH m AS (DELETE FROM messages WHERE session_key = $1), "
                "s AS (DELETE FROM sessions WHERE session_key = $1 RETURNING 1) SELECT count(*) > 0 FROM s",
                session))
        return await self._run(body, write=True)

    # ------------------------------------------------------------------ long-term memory

    _MEMORY_COLS = "m.id, m.text, m.scope, m.type, m.metadata::text, m.created_at, m.namespace"

    @staticmethod
    def _memory(r: Any, score: float | None = None) -> MemoryEntry:
        return MemoryEntry(int(r[0]), r[1], r[2], r[3], loads(r[4]), float(r[5]), r[6], score)

    async def _remember(self, entry: MemoryEntry, metadata_json: str, vector: bytes | None,
                        model: str | None) -> int:
        args = [entry.namespace, entry.scope, entry.type, entry.text, metadata_json, entry.created_at]
        insert = ("INSERT INTO memories (namespace, scope, type, text, metadata, created_at) "
                  "VALUES ($1, $2, $3, $4, $5::jsonb, $6) RETURNING id")
        if vector is not None:
            insert = (f"WITH m AS ({insert}), v AS (INSERT INTO memory_vectors (memory_id, model, vector) "
                      "SELECT id, $7, $8 FROM m) SELECT id FROM m")
            args += [model, vector]

        async def body(c: Any) -> int:
            return int(await c.fetchval(insert, *args))
        return await self._run(body, write=True)

    async def _vector_candidates(self, scopes: list[str] | None, type: str | None, namespace: str | None,
                                 model: str) -> list[tuple[MemoryEntry, bytes]]:
        params: list[Any] = [model]
        cond = self._filters(scopes, type, namespace, params)
        sql = (f"SELECT {self._MEMORY_COLS}, v.vector FROM memories m JOIN memory_vectors v "
               f"ON v.memory_id = m.id WHERE v.model = $1{cond}")

        async def body(c: Any) -> list[tuple[MemoryEntry, bytes]]:
            return [(self._memory(r), bytes(r[7])) for r in await c.fetch(sql, *params)]
        return await self._run(body, write=False)

    async def _missing_vectors(self, model: str, limit: int) -> list[tuple[int, str]]:
        async def body(c: Any) -> list[tuple[int, str]]:
            rows = await c.fetch("SELECT m.id, m.text FROM memories m LEFT JOIN memory_vectors v ON "
                                 "v.memory_id = m.id AND v.model = $1 WHERE v.memory_id IS NULL "
                                 "ORDER BY m.id LIMIT $2", model, limit)
            return [(int(r[0]), r[1]) for r in rows]
        return await self._run(body, write=False)

    async def _put_vectors(self, rows: list[tuple[int, str, bytes]]) -> None:
        async def body(c: Any) -> None:
            await c.execute(
                "INSERT INTO memory_vectors (memory_id, model, vector) SELECT * FROM "
                "unnest($1::bigint[], $2::text[], $3::bytea[]) ON CONFLICT (memory_id) DO UPDATE SET "
                "model = EXCLUDED.model, vector = EXCLUDED.vector",
                [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
        await self._run(body, write=True)

    @staticmethod
    def _filters(scopes: list[str] | None, type: str | None, namespace: str | None,
                 params: list[Any]) -> str:
        sql = ""
        if scopes is not None:
            params.append(scopes)
            sql += f" AND m.scope = ANY(${len(params)}::text[])"
        if type is not None:
            params.append(type)
            sql += f" AND m.type = ${len(params)}"
        if namespace is not None:
            params.append(namespace)
            sql += f" AND m.namespace = ${len(params)}"
        return sql

    async def _recall(self, words: list[str], k: int, scopes: list[str] | None, type: str | None,
                      namespace: str | None) -> list[MemoryEntry]:
        if not words:
            return await self.memories(scopes=scopes, type=type, namespace=namespace, limit=k)
        # Each word quoted (\w+ never holds a quote): the user's text is never tsquery syntax. OR: any
        # word may match; ts_rank_cd ranks entries matching more of them, closer together, first.
        params: list[Any] = [" | ".join(f"'{w}'" for w in words)]
        cond = self._filters(scopes, type, namespace, params)
        params.append(k)
        sql = (f"SELECT {self._MEMORY_COLS}, ts_rank_cd(m.tsv, q) AS rank "
               f"FROM memories m, to_tsquery('english', $1) q WHERE m.tsv @@ q{cond} "
               f"ORDER BY rank DESC, m.id DESC LIMIT ${len(params)}")

        async def body(c: Any) -> list[MemoryEntry]:
            return [self._memory(r, float(r[7])) for r in await c.fetch(sql, *params)]
        return await self._run(body, write=False)

    async def _forget(self, memory_id: int | None, scope: str | None, namespace: str | None) -> int:
        sql, params = "DELETE FROM memories WHERE true", []
        for col, v in (("id", memory_id), ("scope", scope), ("namespace", namespace)):
            if v is not None:
                params.append(v)
                sql += f" AND {col} = ${len(params)}"

        async def body(c: Any) -> int:
            status = await c.execute(sql, *params)
            return int(status.split()[-1])
        return await self._run(body, write=True)

    async def memories(self, *, scope: str | None = None, type: str | None = None,
                       namespace: str | None = None, limit: int = 100,
                       scopes: list[str] | None = None) -> list[MemoryEntry]:
        params: list[Any] = []
        cond = self._filters(scopes if scopes is not None else [scope] if scope is not None else None,
                             type, namespace, params)
        params.append(limit)
        sql = (f"SELECT {self._MEMORY_COLS} FROM memories m WHERE true{cond} "
               f"ORDER BY m.id DESC LIMIT ${len(params)}")

        async def body(c: Any) -> list[MemoryEntry]:
            return [self._memory(r) for r in await c.fetch(sql, *params)]
        return await self._run(body, write=False)

    # ------------------------------------------------------------------ session owners

    async def _claim_owner(self, key: str, owner: str, now: float) -> str:
        async def body(c: Any) -> str:
            # The insert's row, or (taken) the stored one, in one round trip. A claim that lost a race
            # waits for the winner's commit, which its statement's snapshot does not see: read again.
            found = await c.fetchval(
                "WITH ins AS (INSERT INTO session_owners (owned_key, owner, created_at) VALUES ($1, $2, $3) "
                "ON CONFLICT (owned_key) DO NOTHING RETURNING owner) "
                "SELECT owner FROM ins UNION ALL SELECT owner FROM session_owners WHERE owned_key = $1 "
                "LIMIT 1", key, owner, now)
            if found is None:
                found = await c.fetchval("SELECT owner FROM session_owners WHERE owned_key = $1", key)
            return str(found)
        return await self._run(body, write=True)

    async def _owners(self, keys: list[str]) -> dict[str, str]:
        async def body(c: Any) -> dict[str, str]:
            rows = await c.fetch("SELECT owned_key, owner FROM session_owners "
                                 "WHERE owned_key = ANY($1::text[])", keys)
            return {r[0]: r[1] for r in rows}
        return await self._run(body, write=False)

    # ------------------------------------------------------------------ runs

    async def _save_run(self, run_id: str, data: str, status: str, agent: str | None, session: str | None,
                        expect_version: int | None, now: float) -> int:
        set_ = ("status = $2, snapshot = $3::jsonb, agent = coalesce($4, runs.agent), "
                "session_key = coalesce($5, runs.session_key), updated_at = $6, version = runs.version + 1")
        args: list[Any] = [run_id, status, data, agent, session, now]
        if expect_version:
            # An existing checkpoint of that version only: never insert.
            sql = f"UPDATE runs SET {set_} WHERE run_id = $1 AND version = $7 RETURNING version"
            args.append(expect_version)
        else:
            sql = ("INSERT INTO runs (run_id, status, version, snapshot, agent, session_key, created_at, "
                   f"updated_at) VALUES ($1, $2, 1, $3::jsonb, $4, $5, $6, $6) ON CONFLICT (run_id) "
                   f"DO UPDATE "
                   f"SET {set_}" + (" WHERE runs.version = 0" if expect_version == 0 else "") +
                   " RETURNING version")

        async def body(c: Any) -> int | None:
            v = await c.fetchval(sql, *args)
            return None if v is None else int(v)
        version = await self._run(body, write=True)
        if version is None:
            current = await self.get_run(run_id)
            raise RunConflictError(
                f"run {run_id!r}: checkpoint version is {current.version if current else 0}, expected "
                f"{expect_version} (another process saved it); nothing saved")
        return version

    _RUN_COLS = "run_id, status, version, agent, session_key, last_event_id, created_at, updated_at"

    @staticmethod
    def _run_record(r: Any, snapshot: Any = None) -> RunRecord:
        return RunRecord(r[0], r[1], int(r[2]), snapshot, r[3], r[4], int(r[5]), float(r[6]), float(r[7]))

    async def get_run(self, run_id: str) -> RunRecord | None:
        async def body(c: Any) -> RunRecord | None:
            r = await c.fetchrow(f"SELECT {self._RUN_COLS}, snapshot::text FROM runs WHERE run_id = $1",
                                 run_id)
            if r is None:
                return None
            return self._run_record(r, loads(r[8]) if r[8] is not None else None)
        return await self._run(body, write=False)

    async def runs(self, *, status: str | None = None, limit: int = 50,
                   prefix: str | None = None) -> list[RunRecord]:
        async def body(c: Any) -> list[RunRecord]:
            where: list[str] = []
            params: list[Any] = []
            if status is not None:
                params.append(status)
                where.append(f"status = ${len(params)}")
            if prefix:  # substr, not LIKE: the prefix's own % and _ are plain characters
                params += [len(prefix), prefix]
                where.append(f"substr(run_id, 1, ${len(params) - 1}) = ${len(params)}")
            params.append(limit)
            rows = await c.fetch(f"SELECT {self._RUN_COLS} FROM runs"
                                 + (" WHERE " + " AND ".join(where) if where else "")
                                 + f" ORDER BY updated_at DESC, run_id LIMIT ${len(params)}", *params)
            return [self._run_record(r) for r in rows]
        return await self._run(body, write=False)

    async def delete_run(self, run_id: str) -> bool:
        async def body(c: Any) -> bool:
            return bool(await c.fetchval(
                "WITH e AS (DELETE FROM run_events WHERE run_id = $1), "
                "r AS (DELETE FROM runs WHERE run_id = $1 RETURNING 1) SELECT count(*) > 0 FROM r", run_id))
        return await self._run(body, write=True)

    async def _append_events(self, run_id: str, rows: list[tuple[str, str]], now: float) -> int:
        async def body(c: Any) -> int:
            return int(await c.fetchval(
                "WITH r AS (INSERT INTO runs (run_id, status, last_event_id, created_at, updated_at) "
                "VALUES ($1, 'running', $2, $3, $3) ON CONFLICT (run_id) DO UPDATE SET "
                "last_event_id = runs.last_event_id + EXCLUDED.last_event_id, updated_at = "
                "EXCLUDED.updated_at "
                "RETURNING last_event_id), "
                "ins AS (INSERT INTO run_events (run_id, event_id, type, data, created_at) "
                "SELECT $1, r.last_event_id - $2 + e.ord, e.type, e.data::jsonb, $3 "
                "FROM r, unnest($4::text[], $5::text[]) WITH ORDINALITY AS e(type, data, ord) "
                "RETURNING event_id) SELECT max(event_id) FROM ins",
                run_id, len(rows), now, [t for t, _ in rows], [d for _, d in rows]))
        return await self._run(body, write=True)

    async def _events(self, run_id: str, after: int, limit: int | None) -> list[RunEvent]:
        async def body(c: Any) -> list[RunEvent]:
            rows = await c.fetch(
                "SELECT event_id, type, data::text, created_at FROM run_events WHERE run_id = $1 "
                "AND event_id > $2 ORDER BY event_id LIMIT $3", run_id, after, limit)
            return [RunEvent(run_id, int(r[0]), r[1], loads(r[2]), float(r[3])) for r in rows]
        return await self._run(body, write=False)
