"""The `grep` and `glob` builtins: find text and files inside the workspace.

Both walk the tree themselves: `.git` and `.chainreact` are skipped, directory symlinks are not
followed, and file symlinks are used only when they resolve inside the workspace.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import Tool, ToolContext, ToolOutput
from .fileio import SNIFF_BYTES, NotRegularFileError, human_size, looks_binary, open_regular
from .files import error, plural
from .globmatch import compile_glob, has_wildcard, matches
from .workspace import (
    SKIP_DIRS,
    PathEscapeError,
    Workspace,
    check_config_keys,
    config_int,
    description_from,
    workspace_from_config,
)

GREP_LINE_CHARS = 300
GREP_MAX_CONTEXT = 10


class SearchFailed(Exception):
    """An expected failure; the message becomes the `Error: ...` result."""


def walk(ws: Workspace, top: Path) -> Iterator[tuple[Path, bool]]:
    """(real path, is_dir) for everything below `top`, sorted, confined to the workspace."""
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
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


# --- glob ------------------------------------------------------------------------------------------


class GlobTool(Tool):
    name = "glob"

    def __init__(self, workspace: Workspace, *, max_results: int = 500, description: str | None = None):
        self.workspace = workspace
        self.max_results = max_results
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
                                "description": f"Maximum paths to list (default and limit {max_results})."},
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
            cap = _cap(args.get("max_results"), self.max_results)
            return await asyncio.to_thread(self._glob, base, pattern, sort, cap)
        except (PathEscapeError, SearchFailed) as e:
            return error(str(e))
        except OSError as e:
            return error(f"cannot search: {e.strerror or e}")

    def _glob(self, base: Path, pattern: str, sort: str, cap: int) -> str:
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
        regex = compile_glob(pattern)
        if "/" not in pattern:
            regex = compile_glob("**/" + pattern)
        found: list[tuple[Path, bool]] = []
        for p, is_dir in walk(self.workspace, top):
            if regex.match(os.path.relpath(p, base)):
                found.append((p, is_dir))
        if sort == "mtime":
            found.sort(key=lambda x: _mtime(x[0]), reverse=True)
        else:
            found.sort(key=lambda x: str(x[0]))
        shown = found[:cap]
        where = self.workspace.rel(base)
        if not found:
            return f"No paths match {pattern!r} in {where}"
        lines = [f"{len(found)} {'path matches' if len(found) == 1 else 'paths match'} {pattern!r} in {where}"
                 + (" (newest first)" if sort == "mtime" else "") + ":"]
        lines += [self.workspace.rel(p) + ("/" if is_dir else "") for p, is_dir in shown]
        if len(found) > cap:
            lines.append(f"[... {len(found) - cap} more not shown (limit {cap}); "
                         "use a narrower pattern or path]")
        return "\n".join(lines)


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


def _cap(value: Any, limit: int) -> int:
    if value is None:
        return limit
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SearchFailed(f"max_results must be an integer >= 1, got {value!r}")
    return min(value, limit)


# --- grep ------------------------------------------------------------------------------------------


@dataclass
class _GrepState:
    cap: int
    out: list[str] = field(default_factory=list)
    matches: int = 0
    files: int = 0
    binary: int = 0
    large: int = 0
    unreadable: int = 0
    capped: bool = False


class GrepTool(Tool):
    name = "grep"

    def __init__(self, workspace: Workspace, *, max_results: int = 200,
                 max_file_size: int = 10 * 1024 * 1024, description: str | None = None):
        self.workspace = workspace
        self.max_results = max_results
        self.max_file_size = max_file_size
        self.description = description or (
            "Search file contents in the workspace with a regular expression (Python `re` syntax). "
            "Prints `path:line:text` for matches and `path-line-text` for context lines. Binary files and "
            ".git are skipped."
        )
        self.parameters = {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for."},
                "path": {"type": "string", "default": ".", "description": "File or directory to search."},
                "include": {"type": "array", "items": {"type": "string"},
                            "description": "Only files matching one of these globs, e.g. ['*.py']."},
                "exclude": {"type": "array", "items": {"type": "string"},
                            "description": "Skip files and directories matching these globs."},
                "ignore_case": {"type": "boolean", "default": False},
                "context": {"type": "integer", "minimum": 0, "maximum": GREP_MAX_CONTEXT, "default": 0,
                            "description": "Lines of context before and after each match."},
                "max_results": {"type": "integer", "minimum": 1,
                                "description": f"Maximum matches to show (default and limit {max_results})."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        try:
            regex = self._regex(args.get("pattern"), args.get("ignore_case") is True)
            base = self.workspace.resolve(args.get("path", "."))
            include, exclude = _globs(args.get("include"), "include"), _globs(args.get("exclude"), "exclude")
            context = args.get("context", 0)
            bad = isinstance(context, bool) or not isinstance(context, int)
            if bad or not 0 <= context <= GREP_MAX_CONTEXT:
                raise SearchFailed(f"context must be an integer from 0 to {GREP_MAX_CONTEXT}, "
                                   f"got {context!r}")
            cap = _cap(args.get("max_results"), self.max_results)
            return await asyncio.to_thread(self._grep, base, regex, include, exclude, context, cap)
        except (PathEscapeError, SearchFailed) as e:
            return error(str(e))
        except OSError as e:
            return error(f"cannot search: {e.strerror or e}")

    @staticmethod
    def _regex(pattern: Any, ignore_case: bool) -> re.Pattern[str]:
        if not isinstance(pattern, str) or pattern == "":
            raise SearchFailed("pattern must be a non-empty regular expression")
        try:
            return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as e:
            raise SearchFailed(f"invalid regular expression {pattern!r}: {e}; escape special characters "
                               "such as ( [ . * + ? with a backslash for a literal search") from None

    def _grep(self, base: Path, regex: re.Pattern[str], include: list[str], exclude: list[str],
              context: int, cap: int) -> str:
        st = _GrepState(cap)
        if base.is_file():
            self._grep_file(base, regex, context, st)
        else:
            for p, is_dir in walk(self.workspace, base):
                if st.capped:
                    break
                rel = os.path.relpath(p, base)
                if is_dir or any(matches(g, rel) for g in exclude):
                    continue
                if any(matches(g, part) for g in exclude for part in _parents(rel)):
                    continue
                if include and not any(matches(g, rel) for g in include):
                    continue
                self._grep_file(p, regex, context, st)
        where = self.workspace.rel(base)
        notes = []
        if st.binary:
            notes.append(f"{plural(st.binary, 'binary file')} skipped")
        if st.large:
            notes.append(f"{plural(st.large, 'file')} over {human_size(self.max_file_size)} skipped")
        if st.unreadable:
            notes.append(f"{plural(st.unreadable, 'file')} unreadable")
        note = f" ({'; '.join(notes)})" if notes else ""
        if not st.matches:
            return f"No matches for {regex.pattern!r} in {where}{note}"
        head = (f"{plural(st.matches, 'match', 'matches')} in {plural(st.files, 'file')} "
                f"for {regex.pattern!r} in {where}{note}")
        if st.capped:
            head = (f"First {st.matches} matches (limit reached; more exist) in {plural(st.files, 'file')} "
                    f"for {regex.pattern!r} in {where}{note}")
        body = "\n".join(st.out)
        if st.capped:
            body += f"\n[... results capped at {cap} matches; narrow the pattern, path or include]"
        return head + ":\n" + body

    def _grep_file(self, path: Path, regex: re.Pattern[str], context: int, st: _GrepState) -> None:
        try:
            with open_regular(path) as f:
                size = os.fstat(f.fileno()).st_size
                if size > self.max_file_size:
                    st.large += 1
                    return
                data = f.read()
        except (OSError, NotRegularFileError):
            st.unreadable += 1
            return
        if looks_binary(data[:SNIFF_BYTES]):
            st.binary += 1
            return
        lines = data.decode("utf-8", errors="replace").splitlines()
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
        if not hits:
            return
        room = st.cap - st.matches
        if len(hits) > room:
            hits, st.capped = hits[:room], True
        st.files += 1
        st.matches += len(hits)
        rel = self.workspace.rel(path)
        hit_set = set(hits)
        last = -2
        for i in hits:
            lo, hi = max(0, i - context), min(len(lines) - 1, i + context)
            if context and st.out and lo > last + 1:
                st.out.append("--")
            for j in range(max(lo, last + 1), hi + 1):
                sep = ":" if j in hit_set else "-"
                st.out.append(f"{rel}{sep}{j + 1}{sep}{_clip(lines[j])}")
            last = max(last, hi)


def _parents(rel: str) -> list[str]:
    """Directory prefixes of a relative path, so `exclude: ['build']` skips everything under build/."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _clip(line: str) -> str:
    line = line.rstrip("\r")
    if len(line) > GREP_LINE_CHARS:
        return line[:GREP_LINE_CHARS] + f" … [{len(line)} characters]"
    return line


def _globs(value: Any, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise SearchFailed(f"{key} must be a list of glob patterns, got {value!r}")
    return value


# --- factories -------------------------------------------------------------------------------------


def create_grep(config: dict[str, Any], descriptor: Any = None) -> Tool:
    check_config_keys(config, ("workDir", "maxResults", "maxFileSize"), "grep")
    tool = GrepTool(workspace_from_config(config, "grep"),
                    max_results=config_int(config, "maxResults", 200, "grep"),
                    max_file_size=config_int(config, "maxFileSize", 10 * 1024 * 1024, "grep"))
    tool.description = description_from(descriptor, tool.description)
    return tool


def create_glob(config: dict[str, Any], descriptor: Any = None) -> Tool:
    check_config_keys(config, ("workDir", "maxResults"), "glob")
    tool = GlobTool(workspace_from_config(config, "glob"),
                    max_results=config_int(config, "maxResults", 500, "glob"))
    tool.description = description_from(descriptor, tool.description)
    return tool

