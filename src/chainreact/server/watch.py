"""Folder watching: files served from watched folders (and watched files) are reloaded when they change.

One background task of the app (started at startup, stopped at shutdown) runs `watchfiles.awatch` over
the served folders and the folders of the served files; each batch of changes (gathered for
`debounce_ms`) goes to `catalog_reload.apply_changes`. What happened is logged on `chainreact.server`:
a reload at INFO, a file that no longer loads at ERROR (it is also in /readyz `problems`, and the old
version keeps serving).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any

from .catalog import Catalog
from .catalog_reload import apply_changes

log = logging.getLogger("chainreact.server")
_SUFFIXES = (".json", ".yaml", ".yml")


class CatalogWatcher:
    def __init__(self, catalog: Catalog, paths: Iterable[str | Path], *, debounce_ms: int = 300,
                 on_reload: Callable[[str], None] | None = None):
        self.catalog = catalog
        # resolved -> as given: the catalog names files as found under the paths it was given
        self.given = {Path(p).resolve(): Path(p) for p in paths}
        self.folders = [p for p in self.given if p.is_dir()]
        self.files = {p for p in self.given if not p.is_dir()}
        # A file is watched through its folder: editors replace files (write elsewhere, rename over).
        self.roots = sorted({*self.folders, *(f.parent for f in self.files)})
        self.debounce_ms = debounce_ms
        self.on_reload = on_reload
        self.ready = False  # true once the OS watch is in place (changes from then on are seen)
        self.batches = 0  # batches of changes applied (tests wait on it)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[Any] | None = None

    def wanted(self, path: str) -> bool:
        p = Path(path)
        if p in self.files:
            return True
        return p.suffix in _SUFFIXES and any(p.is_relative_to(f) for f in self.folders)

    def _as_given(self, path: Path) -> Path:
        """`path` as the catalog named it at load time (relative when its folder was given relative)."""
        if path in self.given:
            return self.given[path]
        for folder in self.folders:
            if path.is_relative_to(folder):
                return self.given[folder] / path.relative_to(folder)
        return path

    async def start(self, spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]]) -> None:
        if self.roots:
            self._task = spawn(self._run())

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 5)
            except (TimeoutError, asyncio.CancelledError):
                pass

    async def _run(self) -> None:
        from watchfiles import awatch

        try:
            # yield_on_timeout: an empty batch first tells us the watch is in place (`ready`).
            async for changes in awatch(*self.roots, watch_filter=lambda _c, p: self.wanted(p),
                                        debounce=self.debounce_ms, step=50, stop_event=self._stop,
                                        rust_timeout=1000, yield_on_timeout=True):
                self.ready = True
                if changes:
                    self.apply(sorted({Path(p) for _, p in changes}))
        except Exception:  # the watcher dies, the server keeps serving what it has
            log.exception("folder watching stopped")
        finally:
            self.ready = False

    def apply(self, paths: list[Path]) -> None:
        report = apply_changes(self.catalog, [self._as_given(p) for p in paths])
        for ident in report.loaded:
            log.info("reloaded %r", ident)
        for ident in report.removed:
            log.info("unloaded %r", ident)
        for line in report.problems:
            log.error("reload failed: %s", line)
        if self.on_reload is not None:
            if report.loaded or report.removed:
                self.on_reload("ok")
            if report.problems:
                self.on_reload("error")
        self.batches += 1
