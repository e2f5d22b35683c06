"""What RuleGo's routes keep: chain documents where they came from, the editor's settings, locales.

- A chain loaded from a file is saved back to that file, atomically (a temp file beside it, fsynced, then
  renamed over it: a reader sees the old file or the new one, never a part of it); as JSON in a `.json`
  file, as YAML in a `.yaml`/`.yml` one (comments are not kept). When the file cannot be written (a
  read-only folder), the save goes to the state store instead.
- A chain that came from nowhere writable (created or posted through the API, or whose file cannot be
  written) is a record of the server's state store, `rulego:chain:<id>` (a record of the store's run table,
  as flows keep their sessions), loaded again when the server starts; a store copy replaces a file's
  version of the same id then. Without `--state` the store is a private in-memory one: such chains are
  gone when the server stops.
- Settings (the latest saved chain, the main chain) and locales are records too: `rulego:settings`,
  `rulego:locale:<lang>`.

Deleting a chain removes its document: its file, or its store record (as RuleGo's server deletes its DSL).
Shared with the other RuleGo route modules as `ctx.rulego` (server/context.py).
"""

from __future__ import annotations

import copy
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, unquote

import orjson

from ..config.loader import read_document
from ..errors import ConfigError
from ..tools.builtin.fileio import atomic_write
from .rulego_runlog import DebugHub

if TYPE_CHECKING:
    from ..state import Store
    from .catalog import Catalog

log = logging.getLogger("chainreact.server")

STORE_SOURCE = "<state store>"  # Entry.source of a chain kept in the state store
CHAIN_PREFIX = "rulego:chain:"
SETTINGS = "rulego:settings"
LATEST = "latestChainId"  # RuleGo's setting names
MAIN = "mainChainId"


def record_key(prefix: str, name: str) -> str:
    return prefix + quote(name, safe="")


def now_text() -> str:
    """RuleGo's time format in additionalInfo (Go layout "2006/01/02 15:04:05", local time)."""
    return time.strftime("%Y/%m/%d %H:%M:%S")


def encode(doc: dict[str, Any], suffix: str) -> bytes:
    if suffix in (".yaml", ".yml"):
        import yaml

        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode()
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def prepared(doc: dict[str, Any], ident: str, previous: dict[str, Any] | None) -> dict[str, Any]:
    """`doc` as it is saved under `ident`: its id is `ident`; the secrets of the previous version stay when
    the new one has none (GET never returns them, so an editor cannot send them back); additionalInfo
    carries createTime and updateTime as RuleGo's server fills them."""
    doc = copy.deepcopy(doc)
    info_ = doc["ruleChain"]
    info_["id"] = ident
    prev = (previous or {}).get("ruleChain") or {}
    prev_conf: dict[str, Any] = prev["configuration"] if isinstance(prev.get("configuration"), dict) else {}
    if "secrets" in prev_conf:
        conf = info_.get("configuration")
        if not isinstance(conf, dict):
            conf = info_["configuration"] = {}
        conf.setdefault("secrets", prev_conf["secrets"])
    extra = info_.get("additionalInfo")
    if not isinstance(extra, dict):
        extra = info_["additionalInfo"] = {}
    prev_extra = prev["additionalInfo"] if isinstance(prev.get("additionalInfo"), dict) else {}
    stamp = now_text()
    extra.setdefault("createTime", prev_extra.get("createTime", stamp))
    extra["updateTime"] = stamp
    return doc


class RuleGoHost(Protocol):
    """What the face reads of its app: the ServerContext, seen through this protocol because the context
    names RuleGoState (`ctx.rulego`) and imports must not go round in a circle."""

    @property
    def catalog(self) -> Catalog: ...
    @property
    def store(self) -> Store | None: ...


class RuleGoState:
    """The RuleGo face's documents (above), and the debug hub its websocket and message routes share."""

    def __init__(self, ctx: RuleGoHost):
        self.ctx = ctx
        self.hub = DebugHub()

    @property
    def store(self) -> Store:
        store = self.ctx.store
        if store is None:
            raise RuntimeError("the server's state store is not open (the app has not started)")
        return store

    def file_of(self, ident: str) -> Path | None:
        """The file chain `ident` was loaded from, or None (the API, the store)."""
        entry = self.ctx.catalog.entries.get(ident)
        if entry is None or entry.kind != "chain" or entry.source.startswith("<"):
            return None
        return Path(entry.source)

    async def document(self, ident: str) -> dict[str, Any] | None:
        """Chain `ident`'s document as saved (its file, its store record), else as loaded; None: no such
        chain."""
        path = self.file_of(ident)
        if path is not None:
            try:
                data, _ = read_document(path)
                if isinstance(data, dict) and isinstance(data.get("ruleChain"), dict):
                    return data
            except ConfigError:
                pass  # changed on disk since: the loaded definition below
        else:
            rec = await self.store.get_run(record_key(CHAIN_PREFIX, ident))
            if rec is not None and isinstance(rec.snapshot, dict) and \
                    isinstance(rec.snapshot.get("document"), dict):
                return dict(rec.snapshot["document"])
        engine = self.ctx.catalog.engine
        chain = engine.get(ident) if engine is not None else None
        return chain.definition.model_dump(mode="json", exclude_none=True) if chain is not None else None

    async def save(self, ident: str, doc: dict[str, Any]) -> str:
        """Write `doc` where chain `ident` came from (above); returns where: its path or STORE_SOURCE."""
        path = self.file_of(ident)
        if path is not None:
            try:
                atomic_write(path, encode(doc, path.suffix))
                return str(path)
            except OSError as e:
                log.warning("cannot write %s (%s): chain %r is saved in the state store instead", path, e,
                            ident)
        await self.store.save_run(record_key(CHAIN_PREFIX, ident), {"document": doc}, status="done")
        return STORE_SOURCE

    async def forget(self, ident: str) -> None:
        """Delete chain `ident`'s document: its file (when it came from one) and its store record."""
        path = self.file_of(ident)
        if path is not None:
            path.unlink(missing_ok=True)
        await self.store.delete_run(record_key(CHAIN_PREFIX, ident))

    async def load_saved(self) -> None:
        """At startup: the chains kept in the store join the catalog (replacing a file's version)."""
        from ..chains import ChainLoadError

        store, catalog = self.store, self.ctx.catalog
        for rec in await store.runs(prefix=CHAIN_PREFIX, limit=100_000):
            ident = unquote(rec.run_id[len(CHAIN_PREFIX):])
            full = await store.get_run(rec.run_id)
            doc = full.snapshot.get("document") if full is not None and isinstance(full.snapshot, dict) \
                else None
            if not isinstance(doc, dict):
                continue
            old = catalog.entries.get(ident)
            if old is not None and old.kind != "chain":
                catalog.problems.append(f"{STORE_SOURCE}: chain {ident!r}: the id is served by the "
                                        f"{old.kind} of {old.source}; the stored chain is not loaded")
                continue
            try:
                catalog.chain_engine(catalog.globals).load(doc, chain_id=ident)
            except ChainLoadError as e:
                catalog.problems.append(f"{STORE_SOURCE}: chain {ident!r}: {e}")
                continue
            if old is not None:
                log.info("chain %r: the state store's version replaces the one of %s", ident, old.source)
            catalog.add_chain(ident, STORE_SOURCE)

    async def settings(self) -> dict[str, Any]:
        rec = await self.store.get_run(SETTINGS)
        return dict(rec.snapshot) if rec is not None and isinstance(rec.snapshot, dict) else {}

    async def set_setting(self, name: str, value: str) -> None:
        values = await self.settings()
        values[name] = value
        await self.store.save_run(SETTINGS, values, status="done")

    async def locale(self, lang: str) -> Any:
        rec = await self.store.get_run(record_key("rulego:locale:", lang))
        return rec.snapshot if rec is not None and rec.snapshot is not None else {}

    async def save_locale(self, lang: str, value: Any) -> None:
        await self.store.save_run(record_key("rulego:locale:", lang), value, status="done")


__all__ = ["CHAIN_PREFIX", "LATEST", "MAIN", "STORE_SOURCE", "RuleGoState", "now_text", "prepared",
           "record_key"]
