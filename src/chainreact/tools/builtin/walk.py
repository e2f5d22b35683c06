"""Walking the workspace for the search tools: sorted, confined, never following directory symlinks.

`.git` and `.chainreact` are skipped; file symlinks are used only when they resolve inside the
workspace. A `Budget` lets a long walk stop at a deadline or when the tool call is cancelled (the walk
runs in a worker thread, which asyncio cannot interrupt).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from .workspace import SKIP_DIRS, Workspace


class Budget:
    """A deadline plus a cancel flag, checked by the worker thread between files and lines."""

    def __init__(self, seconds: float | None):
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.seconds = seconds
        self._cancelled = threading.Event()
        self.exhausted = False

    def cancel(self) -> None:
        self._cancelled.set()

    def over(self) -> bool:
        if self._cancelled.is_set() or (self.deadline is not None and time.monotonic() > self.deadline):
            self.exhausted = True
        return self.exhausted


def walk(ws: Workspace, top: Path, budget: Budget | None = None) -> Iterator[tuple[Path, bool]]:
    """(real path, is_dir) for everything below `top`, sorted, confined to the workspace."""
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        if budget is not None and budget.over():
            return
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        here = Path(dirpath)
        for d in dirnames:
            p = here / d
            if not os.path.islink(p):
                yield p, True
        for f in sorted(filenames):
            p = here / f
            if os.path.islink(p):
                real = os.path.realpath(p)
                # A link to a file inside the workspace counts; a link leading out (or dangling) does not.
                if not ws.contains(real) or not os.path.isfile(real):
                    continue
            yield p, False
