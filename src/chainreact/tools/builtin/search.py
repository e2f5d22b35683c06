"""The `glob` builtin (find files by name pattern) and the factories of `glob` and `grep` (grep.py).

The walk (walk.py) skips `.git` and `.chainreact`, does not follow directory symlinks, and uses file
symlinks only when they resolve inside the workspace.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from ..base import Tool, ToolContext, ToolOutput
from .configs import GlobConfig, GrepConfig, parse_config
from .globmatch import Glob, GlobError, compile_glob, has_wildcard
from .grep import DEFAULT_TIMEOUT_MS, GrepTool
from .linear_re import PatternError
from .results import SearchFailed, error, positive_cap, short
from .walk import Budget, walk
from .workspace import PathEscapeError, Workspace, description_from, workspace_from_config

# --- glob ------------------------------------------------------------------------------------------


class GlobTool(Tool):
    name = "glob"

    def __init__(self, workspace: Workspace, *, max_results: int = 500, hard_limit: int | None = None,
                 timeout: float = DEFAULT_TIMEOUT_MS / 1000, description: str | None = None):
        self.workspace = workspace
        self.max_results = max_results
        self.hard_limit = hard_limit or max_results
        self.max_seconds = timeout
        self.description = description or (
            "Find files in the workspace by name pattern, e.g. '**/*.py' (any depth), 'src/*.{js,ts}'. "
            "Patterns without '/' match file names at any depth. Directories are listed with a trailing '/'."
        )
        self.parameters = {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern relative to `path`."},
                "path": {"type": "string", "default": ".", "description": "Directory to search in."},
                "sort": {"type": "string", "enum": ["name", "mtime"], "default": "name",
                         "description": "name (alphabetical) or mtime (newest first)."},
                "max_results": {"type": "integer", "minimum": 1,
                                "description": f"Maximum paths to list (default {max_results}, "
                                               f"limit {self.hard_limit})."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        try:
            pattern = _pattern(args.get("pattern"), self.workspace)
            base = self.workspace.resolve(args.get("path", "."))
            sort = args.get("sort", "name")
            if sort not in ("name", "mtime"):
                raise SearchFailed(f"sort must be 'name' or 'mtime', got {sort!r}")
            cap = positive_cap(args.get("max_results"), self.max_results, self.hard_limit)
            budget = Budget(self.max_seconds)
            try:
                return await asyncio.to_thread(self._glob, base, pattern, sort, cap, budget)
            finally:
                budget.cancel()  # a cancelled call stops its worker thread at the next directory
        except (PathEscapeError, SearchFailed) as e:
            return error(str(e))
        except OSError as e:
            return error(f"cannot search: {e.strerror or e}")

    def _glob(self, base: Path, pattern: str, sort: str, cap: int, budget: Budget) -> str:
        if not base.is_dir():
            raise SearchFailed(f"path {self.workspace.rel(base)!r} is not a directory")
        # Start the walk at the pattern's literal leading directories (`src/app/**/*.py` -> src/app).
        parts = pattern.split("/")
        literal = []
        for part in parts[:-1]:
            if has_wildcard(part):
                break
            literal.append(part)
        top = base
        if literal:
            top = self.workspace.resolve(os.path.normpath(os.path.join(self.workspace.rel(base), *literal)),
                                         arg="the pattern's directory")
            if not top.is_dir():
                return f"No paths match {pattern!r} in {self.workspace.rel(base)}"
        regex = _compile(pattern if "/" in pattern else "**/" + pattern, pattern)
        found: list[tuple[Path, bool]] = []
        for p, is_dir in walk(self.workspace, top, budget):
            if regex.match(os.path.relpath(p, base)):
                found.append((p, is_dir))
        if sort == "mtime":
            found.sort(key=lambda x: _mtime(x[0]), reverse=True)
        else:
            found.sort(key=lambda x: str(x[0]))
        shown = found[:cap]
        where = self.workspace.rel(base)
        stopped = ""
        if budget.exhausted:
            stopped = (f"\n[search stopped after the time limit of {budget.seconds:g} s: the list is "
                       "incomplete; narrow the pattern or path]")
        if not found:
            return f"No paths match {pattern!r} in {where}{stopped}"
        lines = [f"{len(found)} {'path matches' if len(found) == 1 else 'paths match'} {pattern!r} in {where}"
                 + (" (newest first)" if sort == "mtime" else "") + ":"]
        lines += [self.workspace.rel(p) + ("/" if is_dir else "") for p, is_dir in shown]
        if len(found) > cap:
            lines.append(f"[... {len(found) - cap} more not shown (limit {cap}); "
                         "use a narrower pattern or path]")
        return "\n".join(lines) + stopped


def _compile(pattern: str, shown: str) -> Glob:
    try:
        return compile_glob(pattern)
    except (GlobError, PatternError) as e:
        raise SearchFailed(f"pattern {short(shown)!r}: {e}") from None


def _mtime(p: Path) -> float:
    try:
        return os.stat(p).st_mtime
    except OSError:
        return 0.0


def _pattern(value: Any, ws: Workspace) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SearchFailed("pattern must be a non-empty string")
    if "\x00" in value:
        raise SearchFailed("pattern contains a NUL byte")
    if value.startswith("/"):
        root = str(ws.root).rstrip("/") + "/"
        if not value.startswith(root):
            raise SearchFailed(f"pattern {value!r} is an absolute path outside the workspace; "
                               "use a pattern relative to the workspace")
        value = value[len(root):]
    if value.startswith("~"):
        raise SearchFailed("pattern may not start with '~'; home directories are outside the workspace")
    if ".." in value.split("/"):
        raise SearchFailed("pattern may not contain '..'; pass the directory to search as `path` instead")
    while value.startswith("./"):
        value = value[2:]
    return value or "*"


# --- factories -------------------------------------------------------------------------------------


def create_grep(config: dict[str, Any], descriptor: Any = None) -> Tool:
    c = parse_config(GrepConfig, config, "grep")
    tool = GrepTool(workspace_from_config({"workDir": c.workDir}, "grep"), max_results=c.maxResults,
                    hard_limit=c.hardMaxLimit, max_file_size=c.maxFileSize, timeout=c.timeout / 1000)
    tool.description = description_from(descriptor, tool.description)
    return tool


def create_glob(config: dict[str, Any], descriptor: Any = None) -> Tool:
    c = parse_config(GlobConfig, config, "glob")
    tool = GlobTool(workspace_from_config({"workDir": c.workDir}, "glob"), max_results=c.maxResults,
                    hard_limit=c.hardMaxLimit, timeout=c.timeout / 1000)
    tool.description = description_from(descriptor, tool.description)
    return tool
