"""The embedded backend: SQLite, its data operations (conversations, long-term memory, runs and their
events) over the connections of sqlite_conn.py (one worker thread, an inline connection for the hot path,
WAL mode).
"""

from __future__ import annotations

from typing import Any

from .base import MemoryEntry, MessageRow, RunEvent, RunRecord, SessionInfo
from .codec import loads
from .errors import RunConflictError
from .sqlite_conn import SQLiteConnections


class SQLiteStore(SQLiteConnections):
    # ------------------------------------------------------------------ conversations

    def _append_sync(self, session: str, rows: list[MessageRow], now: float) -> int:
        n = len(rows)
        tokens = sum(r.tokens for r in rows)
        with self._write() as c:
            last, total = c.execute(
                "INSERT INTO sessions (session_key, last_seq, total_tokens, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_key) DO UPDATE SET "
                "last_seq = sessions.last_seq + excluded.last_seq, "
                "total_tokens = sessions.total_tokens + excluded.total_tokens, updated_at = "
                "excluded.updated_at "
                "RETURNING last_seq, total_tokens", (session, n, tokens, now, now)).fetchone()
            seq, before = last - n, total - tokens
            params = []
            for r in rows:
                seq += 1
                params.append((session, seq, r.role, before, r.data, now))
                before += r.tokens
            c.executemany("INSERT INTO messages (session_key, seq, role, tokens_before, data, created_at) "
                          "VALUES (?, ?, ?, ?, ?, ?)", params)
        return int(last)

    async def _append(self, session: str, rows: list[MessageRow], now: float) -> int:
        return await self._call(self._append_sync, session, rows, now, inline=True)

    async def _last_seq(self, session: str) -> int:
        def run() -> int:
            row = self._c.execute("SELECT last_seq FROM sessions WHERE session_key = ?",
                                  (session,)).fetchone()
            return int(row[0]) if row else 0
        return await self._call(run, inline=True)

    def _tail_sync(self, session: str, last: int | None, max_tokens: int | None) -> list[str]:
        sql = "SELECT data FROM messages WHERE session_key = ?"
        params: list[Any] = [session]
        if max_tokens is not None:
            sql += (" AND tokens_before >= (SELECT total_tokens FROM sessions WHERE session_key = ?) - ?")
            params += [session, max_tokens]
        if last is None:
            return [r[0] for r in self._c.execute(sql + " ORDER BY seq", params)]
        rows = [r[0] for r in self._c.execute(sql + " ORDER BY seq DESC LIMIT ?", [*params, last])]
        rows.reverse()
        return rows

    async def _tail(self, session: str, last: int | None, max_tokens: int | None) -> list[str]:
        return await self._call(self._tail_sync, session, last, max_tokens,
                               inline=last is not None or max_tokens is not None)

    _SESSION_COLS = "session_key, last_seq, total_tokens, created_at, updated_at"

    @staticmethod
    def _session(row: Any) -> SessionInfo:
        return SessionInfo(row[0], int(row[1]), int(row[2]), float(row[3]), float(row[4]))

    async def sessions(self, *, limit: int = 100, offset: int = 0) -> list[SessionInfo]:
        def run() -> list[SessionInfo]:
            rows = self._c.execute(f"SELECT {self._SESSION_COLS} FROM sessions "
                                   "ORDER BY updated_at DESC, session_key LIMIT ? OFFSET ?", (limit, offset))
            return [self._session(r) for r in rows]
        return await self._call(run)

    async def session_info(self, session: str) -> SessionInfo | None:
        def run() -> SessionInfo | None:
            row = self._c.execute(f"SELECT {self._SESSION_COLS} FROM sessions WHERE session_key = ?",
                                  (session,)).fetchone()
            return self._session(row) if row else None
        return await self._call(run, inline=True)

    async def delete_session(self, session: str) -> bool:
        def run() -> bool:
            with self._write() as c:
                c.execute("DELETE FROM messages WHERE session_key = ?", (session,))
                return c.execute("DELETE FROM sessions WHERE session_key = ?", (session,)).rowcount > 0
        return await self._call(run)

    # ------------------------------------------------------------------ session owners

    async def _claim_owner(self, key: str, owner: str, now: float) -> str:
        def run() -> str:
            with self._write() as c:
                c.execute("INSERT INTO session_owners (owned_key, owner, created_at) VALUES (?, ?, ?) "
                          "ON CONFLICT (owned_key) DO NOTHING", (key, owner, now))
                return str(c.execute("SELECT owner FROM session_owners WHERE owned_key = ?",
                                     (key,)).fetchone()[0])
        return await self._call(run, inline=True)

    async def _owners(self, keys: list[str]) -> dict[str, str]:
        def run() -> dict[str, str]:
            out: dict[str, str] = {}
            for i in range(0, len(keys), 500):  # within SQLite's bound on a statement's parameters
                part = keys[i:i + 500]
                out.update(self._c.execute("SELECT owned_key, owner FROM session_owners WHERE owned_key IN "
                                           f"({', '.join('?' * len(part))})", part).fetchall())
            return out
        return await self._call(run, inline=True)

    # ------------------------------------------------------------------ long-term memory

    _MEMORY_COLS = "m.id, m.text, m.scope, m.type, m.metadata, m.created_at, m.namespace"

    @staticmethod
    def _memory(row: Any, score: float | None = None) -> MemoryEntry:
        return MemoryEntry(int(row[0]), row[1], row[2], row[3], loads(row[4]), float(row[5]), row[6], score)

    async def _remember(self, entry: MemoryEntry, metadata_json: str, vector: bytes | None,
                        model: str | None) -> int:
        def run() -> int:
            with self._write() as c:
                cur = c.execute("INSERT INTO memories (namespace, scope, type, text, metadata, created_at) "
                                "VALUES (?, ?, ?, ?, ?, ?)", (entry.namespace, entry.scope, entry.type,
                                                              entry.text, metadata_json, entry.created_at))
                mid = int(cur.lastrowid or 0)
                if vector is not None:
                    c.execute("INSERT INTO memory_vectors (memory_id, model, vector) VALUES (?, ?, ?)",
                              (mid, model, vector))
                return mid
        return await self._call(run)

    async def _vector_candidates(self, scopes: list[str] | None, type: str | None, namespace: str | None,
                                 model: str) -> list[tuple[MemoryEntry, bytes]]:
        cond, params = self._filters(scopes, type, namespace)

        def run() -> list[tuple[MemoryEntry, bytes]]:
            rows = self._c.execute(f"SELECT {self._MEMORY_COLS}, v.vector FROM memories m "
                                   "JOIN memory_vectors v ON v.memory_id = m.id "
                                   f"WHERE v.model = ?{cond}", [model, *params])
            return [(self._memory(r), bytes(r[7])) for r in rows]
        return await self._call(run)

    async def _missing_vectors(self, model: str, limit: int) -> list[tuple[int, str]]:
        def run() -> list[tuple[int, str]]:
            rows = self._c.execute("SELECT m.id, m.text FROM memories m LEFT JOIN memory_vectors v ON "
                                   "v.memory_id = m.id AND v.model = ? WHERE v.memory_id IS NULL "
                                   "ORDER BY m.id LIMIT ?", (model, limit))
            return [(int(r[0]), r[1]) for r in rows]
        return await self._call(run)

    async def _put_vectors(self, rows: list[tuple[int, str, bytes]]) -> None:
        def run() -> None:
            with self._write() as c:
                c.executemany("INSERT INTO memory_vectors (memory_id, model, vector) VALUES (?, ?, ?) "
                              "ON CONFLICT (memory_id) DO UPDATE SET model = excluded.model, "
                              "vector = excluded.vector", rows)
        await self._call(run)

    @staticmethod
    def _filters(scopes: list[str] | None, type: str | None, namespace: str | None) -> tuple[str, list[Any]]:
        where, params = [], []
        if scopes is not None:
            where.append(f"m.scope IN ({', '.join('?' * len(scopes))})")
            params += scopes
        if type is not None:
            where.append("m.type = ?")
            params.append(type)
        if namespace is not None:
            where.append("m.namespace = ?")
            params.append(namespace)
        return "".join(f" AND {w}" for w in where), params

    async def _recall(self, words: list[str], k: int, scopes: list[str] | None, type: str | None,
                      namespace: str | None) -> list[MemoryEntry]:
        cond, params = self._filters(scopes, type, namespace)

        def run() -> list[MemoryEntry]:
            if not words:
                rows = self._c.execute(f"SELECT {self._MEMORY_COLS} FROM memories m WHERE 1 = 1{cond} "
                                       "ORDER BY m.id DESC LIMIT ?", [*params, k])
                return [self._memory(r) for r in rows]
            # Each word quoted: the user's text is never FTS5 query syntax. OR: any word may match,
            # bm25 ranks the entries matching more (and rarer) words first.
            match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
            rows = self._c.execute(
                f"SELECT {self._MEMORY_COLS}, bm25(memories_fts) AS rank FROM memories_fts "
                f"JOIN memories m ON m.id = memories_fts.rowid WHERE memories_fts MATCH ?{cond} "
                "ORDER BY rank, m.id DESC LIMIT ?", [match, *params, k])
            return [self._memory(r, -float(r[7])) for r in rows]
        return await self._call(run)

    async def _forget(self, memory_id: int | None, scope: str | None, namespace: str | None) -> int:
        def run() -> int:
            sql, params = "DELETE FROM memories WHERE 1 = 1", []
            for col, v in (("id", memory_id), ("scope", scope), ("namespace", namespace)):
                if v is not None:
                    sql += f" AND {col} = ?"
                    params.append(v)
            with self._write() as c:
                return c.execute(sql, params).rowcount
        return await self._call(run)

    async def memories(self, *, scope: str | None = None, type: str | None = None,
                       namespace: str | None = None, limit: int = 100) -> list[MemoryEntry]:
        cond, params = self._filters([scope] if scope is not None else None, type, namespace)

        def run() -> list[MemoryEntry]:
            rows = self._c.execute(f"SELECT {self._MEMORY_COLS} FROM memories m WHERE 1 = 1{cond} "
                                   "ORDER BY m.id DESC LIMIT ?", [*params, limit])
            return [self._memory(r) for r in rows]
        return await self._call(run)

    # ------------------------------------------------------------------ runs

    async def _save_run(self, run_id: str, data: str, status: str, agent: str | None, session: str | None,
                        expect_version: int | None, now: float) -> int:
        set_ = ("status = ?, snapshot = ?, agent = coalesce(?, runs.agent), "
                "session_key = coalesce(?, runs.session_key), updated_at = ?, version = runs.version + 1")
        # With an expected version the new one is known (expected + 1, or 1), and the row count tells
        # whether the save happened: no RETURNING, which costs SQLite a temporary table per statement
        # (about a sixth of the statement's CPU).
        returning = ""
        if expect_version:  # that checkpoint only: never insert
            sql = f"UPDATE runs SET {set_} WHERE run_id = ? AND version = ?"
            params: tuple[Any, ...] = (status, data, agent, session, now, run_id, expect_version)
        else:  # 0: only a run with no checkpoint yet; None: any
            returning = " RETURNING version" if expect_version is None else ""
            sql = ("INSERT INTO runs (run_id, status, version, snapshot, agent, session_key, created_at, "
                   f"updated_at) VALUES (?, ?, 1, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET {set_}"
                   + (" WHERE runs.version = 0" if expect_version == 0 else "") + returning)
            params = (run_id, status, data, agent, session, now, now, status, data, agent, session, now)

        def run() -> int:
            # One statement, atomic on its own (no BEGIN/COMMIT round); the version check is in it.
            c = self._c
            cur = c.execute(sql, params)
            rows = cur.fetchall() if returning else None  # stepped to the end: the statement commits here
            self._committed(c)
            if rows:
                return int(rows[0][0])
            if rows is None and cur.rowcount == 1:
                return (expect_version or 0) + 1
            cur_v = c.execute("SELECT version FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            raise RunConflictError(f"run {run_id!r}: checkpoint version is {int(cur_v[0]) if cur_v else 0}, "
                                   f"expected {expect_version} (another process saved it); nothing saved")
        return await self._call(run, inline=True)

    _RUN_COLS = "run_id, status, version, agent, session_key, last_event_id, created_at, updated_at"

    @staticmethod
    def _run(row: Any, snapshot: Any = None) -> RunRecord:
        return RunRecord(row[0], row[1], int(row[2]), snapshot, row[3], row[4], int(row[5]), float(row[6]),
                         float(row[7]))

    async def get_run(self, run_id: str) -> RunRecord | None:
        def run() -> RunRecord | None:
            row = self._c.execute(f"SELECT {self._RUN_COLS}, snapshot FROM runs WHERE run_id = ?",
                                  (run_id,)).fetchone()
            if row is None:
                return None
            return self._run(row, loads(row[8]) if row[8] is not None else None)
        return await self._call(run, inline=True)

    async def runs(self, *, status: str | None = None, limit: int = 50,
                   prefix: str | None = None) -> list[RunRecord]:
        def run() -> list[RunRecord]:
            sql, params = f"SELECT {self._RUN_COLS} FROM runs WHERE 1 = 1", list[Any]()
            if status is not None:
                sql += " AND status = ?"
                params.append(status)
            if prefix:  # substr, not LIKE: the prefix's own % and _ are plain characters
                sql += " AND substr(run_id, 1, ?) = ?"
                params += [len(prefix), prefix]
            rows = self._c.execute(sql + " ORDER BY updated_at DESC, run_id LIMIT ?", [*params, limit])
            return [self._run(r) for r in rows]
        return await self._call(run)

    async def delete_run(self, run_id: str) -> bool:
        def run() -> bool:
            with self._write() as c:
                c.execute("DELETE FROM run_events WHERE run_id = ?", (run_id,))
                return c.execute("DELETE FROM runs WHERE run_id = ?", (run_id,)).rowcount > 0
        return await self._call(run)

    async def _append_events(self, run_id: str, rows: list[tuple[str, str]], now: float) -> int:
        def run() -> int:
            n = len(rows)
            with self._write() as c:
                last = int(c.execute(
                    "INSERT INTO runs (run_id, status, last_event_id, created_at, updated_at) "
                    "VALUES (?, 'running', ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET "
                    "last_event_id = runs.last_event_id + excluded.last_event_id, "
                    "updated_at = excluded.updated_at RETURNING last_event_id",
                    (run_id, n, now, now)).fetchone()[0])
                c.executemany("INSERT INTO run_events (run_id, event_id, type, data, created_at) "
                              "VALUES (?, ?, ?, ?, ?)",
                              [(run_id, last - n + 1 + i, t, d, now) for i, (t, d) in enumerate(rows)])
            return last
        return await self._call(run, inline=True)

    async def _events(self, run_id: str, after: int, limit: int | None) -> list[RunEvent]:
        def run() -> list[RunEvent]:
            rows = self._c.execute(
                "SELECT event_id, type, data, created_at FROM run_events WHERE run_id = ? AND event_id > ? "
                "ORDER BY event_id LIMIT ?", (run_id, after, -1 if limit is None else limit))
            return [RunEvent(run_id, int(r[0]), r[1], loads(r[2]), float(r[3])) for r in rows]
        return await self._call(run, inline=True)
