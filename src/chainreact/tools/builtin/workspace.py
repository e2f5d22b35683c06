"""Path confinement for the builtin tools: every path a model passes is resolved inside `workDir`.

The check works on real paths (symlinks resolved, including a not-yet-existing tail, whose parent is
resolved), so `..`, absolute paths elsewhere, `~` and symlinks leading out are all refused the same
way. It guards what the file tools touch; it is not an OS sandbox (`bash` gets one: sandbox.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import ConfigError, ToolError

# Directories the search tools never descend into: VCS metadata and chainreact's own backups.
SKIP_DIRS = frozenset({".git", ".chainreact"})
# Linux limits: a path of 4096 bytes, a name of 255 bytes. Checked up front for a clear message.
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


class PathEscapeError(ToolError):
    """A path argument is invalid or resolves outside the workspace."""


class Workspace:
    """A directory the file tools are confined to."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(os.path.realpath(root))
        self._root_str = str(self.root)

    def __repr__(self) -> str:
        return f"Workspace({self._root_str!r})"

    def resolve(self, path: Any, *, arg: str = "path") -> Path:
        """The real absolute path for a model-supplied `path`, or PathEscapeError.

        Relative paths are taken from the root; absolute ones must already lie inside it.
        """
        if not isinstance(path, str):
            raise PathEscapeError(f"{arg} must be a string, got {type(path).__name__}")
        if path == "":
            raise PathEscapeError(f"{arg} is empty; pass a path relative to the workspace, e.g. 'notes.txt'")
        if "\x00" in path:
            raise PathEscapeError(f"{arg} contains a NUL byte")
        if path.startswith("~"):
            # `~` is not expanded: it would name a home directory outside the workspace.
            raise PathEscapeError(
                f"{arg} {_short(path)!r} starts with '~'; home directories are outside the workspace. "
                "Use a path relative to the workspace root."
            )
        encoded = os.fsencode(path)
        if len(encoded) > MAX_PATH_BYTES:
            raise PathEscapeError(f"{arg} is too long ({len(encoded)} bytes; the limit is {MAX_PATH_BYTES})")
        if any(len(os.fsencode(part)) > MAX_NAME_BYTES for part in path.split("/")):
            raise PathEscapeError(f"{arg} has a name longer than {MAX_NAME_BYTES} bytes")
        joined = os.path.join(self._root_str, path)  # an absolute `path` replaces the root here
        real = os.path.realpath(joined)
        if not self.contains(real):
            raise PathEscapeError(
                f"{arg} {_short(path)!r} resolves outside the workspace ({self._root_str}); "
                "only paths inside it are allowed"
            )
        return Path(real)

    def contains(self, real: str | os.PathLike[str]) -> bool:
        """True if the already-resolved path `real` is the root or below it."""
        real = os.fspath(real)
        return real == self._root_str or real.startswith(self._root_str.rstrip("/") + "/")

    def rel(self, real: str | os.PathLike[str]) -> str:
        """How results name a path: relative to the root ('.' for the root itself)."""
        r = os.path.relpath(os.fspath(real), self._root_str)
        return "." if r == "." else r


def _short(s: str, n: int = 120) -> str:
    return s if len(s) <= n else s[:n] + "…"


# --- config ----------------------------------------------------------------------------------------


def workspace_from_config(config: Mapping[str, Any], tool: str) -> Workspace:
    """`config["workDir"]` (default: the current directory), which must be an existing directory.

    A missing workDir is an error rather than silently created: a typo in the path would otherwise
    give the agent a fresh empty workspace and hide the mistake.
    """
    raw = config.get("workDir")
    if raw is None or raw == "":
        raw = os.getcwd()
    if not isinstance(raw, str | os.PathLike):
        raise ConfigError(f"tools.{tool}.config.workDir must be a string path, got {type(raw).__name__}")
    path = os.path.expanduser(os.fspath(raw))  # `~` is fine in config written by a person
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise ConfigError(
            f"tools.{tool}.config.workDir {path!r} does not exist; create the directory or fix the path",
            errors=[(f"tools.{tool}.config.workDir", "does not exist")],
        )
    if not os.path.isdir(path):
        raise ConfigError(
            f"tools.{tool}.config.workDir {path!r} is not a directory",
            errors=[(f"tools.{tool}.config.workDir", "not a directory")],
        )
    return Workspace(path)


def description_from(descriptor: Any, default: str) -> str:
    """A descriptor's non-empty `description` replaces the builtin one (lets a config tailor it)."""
    desc = getattr(descriptor, "description", "") if descriptor is not None else ""
    return desc if isinstance(desc, str) and desc.strip() else default
