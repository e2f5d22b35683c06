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
from .factory import open_store
from .sync import SyncStore
from .url import ENV_VAR, mask_url, parse_url, resolve_url

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
