"""Opening a store: the URL resolved (see url.py), the backend chosen by its scheme, migrations applied."""

from __future__ import annotations

from .base import Store
from .embeddings import Embedder
from .url import parse_url, resolve_url


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
