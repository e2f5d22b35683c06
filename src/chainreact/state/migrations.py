"""Versioned schema migrations, one numbering for both backends.

Each migration is applied once, in order, inside one transaction with its row in `chainreact_schema`;
a store refuses a database whose version is newer than the last migration here. Never edit a released
migration: add the next number. The two dialects differ only where they must (types, full-text search).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]


SCHEMA_TABLE_SQLITE = ("CREATE TABLE IF NOT EXISTS chainreact_schema ("
                       "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)")
SCHEMA_TABLE_POSTGRES = ("CREATE TABLE IF NOT EXISTS chainreact_schema ("
                         "version integer PRIMARY KEY, name text NOT NULL, applied_at double "
                         "precision NOT NULL)")

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1, "sessions and messages",
        sqlite=(
            # last_seq and total_tokens are the per-session counters every append bumps: the row's write
            # lock orders concurrent appends, and tokens_before (the session's total before the message)
            # makes a token-budget window one range query.
            "CREATE TABLE sessions (session_key TEXT PRIMARY KEY, last_seq INTEGER NOT NULL DEFAULT 0, "
            "total_tokens INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, updated_at REAL NOT NULL)",
            "CREATE INDEX sessions_updated ON sessions (updated_at)",
            "CREATE TABLE messages (session_key TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL, "
            "tokens_before INTEGER NOT NULL, data TEXT NOT NULL, created_at REAL NOT NULL, "
            "PRIMARY KEY (session_key, seq)) WITHOUT ROWID",
            "CREATE INDEX messages_tokens ON messages (session_key, tokens_before)",
        ),
        postgres=(
            "CREATE TABLE sessions (session_key text PRIMARY KEY, last_seq bigint NOT NULL DEFAULT 0, "
            "total_tokens bigint NOT NULL DEFAULT 0, created_at double precision NOT NULL, "
            "updated_at double precision NOT NULL)",
            "CREATE INDEX sessions_updated ON sessions (updated_at)",
            "CREATE TABLE messages (session_key text NOT NULL, seq bigint NOT NULL, role text NOT NULL, "
            "tokens_before bigint NOT NULL, data jsonb NOT NULL, created_at double precision NOT NULL, "
            "PRIMARY KEY (session_key, seq))",
            "CREATE INDEX messages_tokens ON messages (session_key, tokens_before)",
        ),
    ),
    Migration(
        2, "long-term memory with full-text search",
        sqlite=(
            "CREATE TABLE memories (id INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL "
            "DEFAULT '', "
            "scope TEXT NOT NULL, type TEXT NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL "
            "DEFAULT '{}', "
            "created_at REAL NOT NULL)",
            "CREATE INDEX memories_scope ON memories (namespace, scope, type)",
            "CREATE VIRTUAL TABLE memories_fts USING fts5(text, content='memories', content_rowid='id', "
            "tokenize='porter unicode61')",
            "CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN "
            "INSERT INTO memories_fts (rowid, text) VALUES (new.id, new.text); END",
            "CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN "
            "INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
            "CREATE TRIGGER memories_au AFTER UPDATE OF text ON memories BEGIN "
            "INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.id, old.text); "
            "INSERT INTO memories_fts (rowid, text) VALUES (new.id, new.text); END",
        ),
        postgres=(
            "CREATE TABLE memories (id bigserial PRIMARY KEY, namespace text NOT NULL DEFAULT '', "
            "scope text NOT NULL, type text NOT NULL, text text NOT NULL, "
            "metadata jsonb NOT NULL DEFAULT '{}', created_at double precision NOT NULL, "
            "tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED)",
            "CREATE INDEX memories_scope ON memories (namespace, scope, type)",
            "CREATE INDEX memories_tsv ON memories USING gin (tsv)",
        ),
    ),
    Migration(
        3, "run checkpoints and event logs",
        sqlite=(
            "CREATE TABLE runs (run_id TEXT PRIMARY KEY, status TEXT NOT NULL, version INTEGER NOT NULL "
            "DEFAULT 0, snapshot TEXT, agent TEXT, session_key TEXT, last_event_id INTEGER NOT NULL "
            "DEFAULT 0, "
            "created_at REAL NOT NULL, updated_at REAL NOT NULL)",
            "CREATE INDEX runs_updated ON runs (updated_at)",
            "CREATE TABLE run_events (run_id TEXT NOT NULL, event_id INTEGER NOT NULL, type TEXT NOT NULL, "
            "data TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (run_id, event_id)) WITHOUT ROWID",
        ),
        postgres=(
            "CREATE TABLE runs (run_id text PRIMARY KEY, status text NOT NULL, version bigint NOT NULL "
            "DEFAULT 0, snapshot jsonb, agent text, session_key text, last_event_id bigint NOT NULL "
            "DEFAULT 0, "
            "created_at double precision NOT NULL, updated_at double precision NOT NULL)",
            "CREATE INDEX runs_updated ON runs (updated_at)",
            "CREATE TABLE run_events (run_id text NOT NULL, event_id bigint NOT NULL, type text NOT NULL, "
            "data jsonb NOT NULL, created_at double precision NOT NULL, PRIMARY KEY (run_id, event_id))",
        ),
    ),
    Migration(
        4, "memory embeddings",
        sqlite=(
            # Unit-length float32 vectors (state/embeddings.py), with the model that made them.
            "CREATE TABLE memory_vectors (memory_id INTEGER PRIMARY KEY, model TEXT NOT NULL, "
            "vector BLOB NOT NULL)",
            "CREATE TRIGGER memories_vec_ad AFTER DELETE ON memories BEGIN "
            "DELETE FROM memory_vectors WHERE memory_id = old.id; END",
        ),
        postgres=(
            "CREATE TABLE memory_vectors (memory_id bigint PRIMARY KEY REFERENCES memories (id) "
            "ON DELETE CASCADE, model text NOT NULL, vector bytea NOT NULL)",
        ),
    ),
    Migration(
        5, "no index on sessions.updated_at",
        # Every append updates updated_at; without an index on it PostgreSQL updates the row in place
        # (HOT): append p50 went from 1.6-2.1 to 0.4-0.5 ms over 1,000 sessions. Listing sessions by
        # recency sorts instead, which is cheap for the thousands of sessions a store holds.
        sqlite=("DROP INDEX sessions_updated",),
        postgres=("DROP INDEX sessions_updated",),
    ),
    Migration(
        6, "session owners",
        # Who a session belongs to (a server binds sessions to logged-in users: server/owners.py); the
        # key is the session's name in its wing (flow:<id>:<sid>, agent:<id>:<key>, chain:<id>:<key>).
        sqlite=("CREATE TABLE session_owners (owned_key TEXT PRIMARY KEY, owner TEXT NOT NULL, "
                "created_at REAL NOT NULL) WITHOUT ROWID",),
        postgres=("CREATE TABLE session_owners (owned_key text PRIMARY KEY, owner text NOT NULL, "
                  "created_at double precision NOT NULL)",),
    ),
)

LATEST = MIGRATIONS[-1].version
# The tables `chainreact state info` counts.
COUNTED = ("sessions", "messages", "memories", "memory_vectors", "runs", "run_events", "session_owners")


def pending(current: int) -> list[Migration]:
    return [m for m in MIGRATIONS if m.version > current]
