"""State: conversations, long-term memory, run checkpoints and event logs, in SQLite or PostgreSQL.

    from chainreact.state import open_store
    async with await open_store("sqlite:///.chainreact/state.db") as store:
        await store.append("session-1", [user("hi")])

The URL comes from the keyword, else $CHAINREACT_STATE, else the document's `state` key, else
`sqlite:///.chainreact/state.db`. See docs/state.md.
"""

from __future__ import annotations

from .base import (
    GLOBAL,
    MEMORY_TYPES,
    RUN_STATUSES,
    MemoryEntry,
    RunEvent,
    RunRecord,
    SessionInfo,
    Store,
    StoreInfo,
)
from .embeddings import Embedder, OpenAIEmbedder
from .errors import RunConflictError, RunNotFoundError, StateConnectionError, StateError, StateSchemaError
from .sync import SyncStore
from .url import ENV_VAR, mask_url, parse_url, resolve_url


async def open_store(url: str | None = None, *, document: str | None = None, migrate: bool = True,
                     create: bool | None = None, embedder: Embedder | None = None) -> Store:
    """Open (and by default migrate) the store at `url`; see `resolve_url` for where the URL comes from.

    `migrate=False` opens without changing the schema (for `chainreact state info`); a store whose schema
    is older than this chainreact's then fails on use, so normal callers keep the default. `create`
    (default: as `migrate`) says whether a missing SQLite file may be created. `embedder` (e.g.
    `OpenAIEmbedder(url, model)`) gives memories vectors and enables `recall(mode="vector"|"hybrid")`.
    """
    parsed = parse_url(resolve_url(url, document=document))
    store: Store
    if parsed.backend == "postgres":
        from .postgres import PostgresStore

        store = await PostgresStore.open(parsed, migrate=migrate)
    else:
        from .sqlite import SQLiteStore

        store = await SQLiteStore.open(parsed, migrate=migrate, create=migrate if create is None else create)
    store.embedder = embedder
    return store


__all__ = [
    "ENV_VAR",
    "GLOBAL",
    "MEMORY_TYPES",
    "RUN_STATUSES",
    "Embedder",
    "MemoryEntry",
    "OpenAIEmbedder",
    "RunConflictError",
    "RunEvent",
    "RunNotFoundError",
    "RunRecord",
    "SessionInfo",
    "StateConnectionError",
    "StateError",
    "StateSchemaError",
    "Store",
    "StoreInfo",
    "SyncStore",
    "mask_url",
    "open_store",
    "parse_url",
    "resolve_url",
]
