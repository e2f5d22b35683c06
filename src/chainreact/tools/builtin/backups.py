"""Backups of files the write/edit tools change, so a bad edit can be undone.

A file `src/app.py` is backed up as `.chainreact/backups/src/app.py.<n>` inside the workspace, `n`
counting up. `edit` with `undo: true` restores the newest backup and removes it, so repeated undos
step further back. At most `keep` backups are kept per file (oldest dropped first).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .fileio import atomic_write, open_regular
from .workspace import Workspace

# Files larger than this are not copied into a backup (the change still happens; the result says so).
BACKUP_MAX_BYTES = 16 * 1024 * 1024

BACKUP_DIR = ".chainreact/backups"


class BackupStore:
    def __init__(self, workspace: Workspace, keep: int = 20):
        self.workspace = workspace
        self.keep = keep

    def _slot(self, real: Path) -> tuple[Path, str]:
        """The directory holding `real`'s backups and the file-name prefix, both checked to stay inside."""
        rel = self.workspace.rel(real)
        # Resolving through the workspace refuses a `.chainreact` that was made a symlink to elsewhere.
        target = self.workspace.resolve(f"{BACKUP_DIR}/{rel}", arg="backup path")
        return target.parent, target.name + "."

    def _numbers(self, directory: Path, prefix: str) -> list[int]:
        try:
            names = os.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return []
        # The suffix is all digits, so `a.txt.3` (backup 3 of a.txt) never collides with a backup of
        # a file named `a.txt.3` (whose backups are `a.txt.3.<n>`).
        pattern = re.compile(re.escape(prefix) + r"(\d+)")
        return sorted(int(m.group(1)) for n in names if (m := pattern.fullmatch(n)))

    def save(self, real: Path, data: bytes) -> int:
        """Store `data` as the newest backup of `real`; returns its number."""
        directory, prefix = self._slot(real)
        directory.mkdir(parents=True, exist_ok=True)
        numbers = self._numbers(directory, prefix)
        n = (numbers[-1] + 1) if numbers else 1
        atomic_write(directory / f"{prefix}{n}", data)
        for old in numbers[: max(0, len(numbers) + 1 - self.keep)]:
            try:
                os.unlink(directory / f"{prefix}{old}")
            except FileNotFoundError:
                pass
        return n

    def count(self, real: Path) -> int:
        directory, prefix = self._slot(real)
        return len(self._numbers(directory, prefix))

    def latest(self, real: Path) -> tuple[int, bytes] | None:
        directory, prefix = self._slot(real)
        numbers = self._numbers(directory, prefix)
        if not numbers:
            return None
        with open_regular(directory / f"{prefix}{numbers[-1]}") as f:
            return numbers[-1], f.read()

    def drop(self, real: Path, n: int) -> None:
        directory, prefix = self._slot(real)
        try:
            os.unlink(directory / f"{prefix}{n}")
        except FileNotFoundError:
            pass
