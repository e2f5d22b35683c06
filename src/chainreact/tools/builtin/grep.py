"""The `grep` builtin: search file contents in the workspace with a regular expression.

Patterns run on RE2 (linear_re.py), so no pattern can stall the process. The search itself runs in a
worker thread under a `Budget`: it stops at the tool's deadline (partial results, said so) and as soon
as the call is cancelled, instead of running on unseen in the background.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import Tool, ToolContext, ToolOutput
from .fileio import SNIFF_BYTES, NotRegularFileError, human_size, looks_binary, open_regular
from .globmatch import GlobError, compile_glob, matches
from .linear_re import LinearPattern, PatternError, compile_linear
from .results import SearchFailed, error, plural, positive_cap, short
from .walk import Budget, walk
from .workspace import PathEscapeError, Workspace

GREP_LINE_CHARS = 300
GREP_MAX_CONTEXT = 10
DEFAULT_TIMEOUT_MS = 30_000
# How many lines are searched between two looks at the budget (a deadline check costs a syscall).
LINES_PER_CHECK = 4096


@dataclass
class _GrepState:
    cap: int
    budget: Budget
    out: list[str] = field(default_factory=list)
    matches: int = 0
    files: int = 0
    binary: int = 0
    large: int = 0
    unreadable: int = 0
    linked: int = 0
    capped: bool = False


class GrepTool(Tool):
    name = "grep"

    def __init__(self, workspace: Workspace, *, max_results: int = 200, hard_limit: int | None = None,
                 max_file_size: int = 10 * 1024 * 1024, timeout: float = DEFAULT_TIMEOUT_MS / 1000,
                 description: str | None = None):
        self.workspace = workspace
        self.max_results = max_results
        self.hard_limit = hard_limit or max_results
        self.max_file_size = max_file_size
        self.max_seconds = timeout
        self.description = description or (
            "Search file contents in the workspace with a regular expression (Python `re` syntax without "
            "backreferences and lookaround). Prints `path:line:text` for matches and `path-line-text` for "
            "context lines. Binary files and .git are skipped."
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
                                "description": f"Maximum matches to show (default {max_results}, "
                                               f"limit {self.hard_limit})."},
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
            cap = positive_cap(args.get("max_results"), self.max_results, self.hard_limit)
            budget = Budget(self.max_seconds)
            try:
                return await asyncio.to_thread(self._grep, base, regex, include, exclude, context, cap,
                                               budget)
            finally:
                budget.cancel()  # a cancelled call stops its worker thread at the next check
        except (PathEscapeError, SearchFailed) as e:
            return error(str(e))
        except OSError as e:
            return error(f"cannot search: {e.strerror or e}")

    @staticmethod
    def _regex(pattern: Any, ignore_case: bool) -> LinearPattern:
        if not isinstance(pattern, str) or pattern == "":
            raise SearchFailed("pattern must be a non-empty regular expression")
        try:
            return compile_linear(pattern, ignore_case=ignore_case)
        except PatternError as e:
            raise SearchFailed(f"{e} (pattern {short(pattern)!r}); escape special characters such as "
                               "( [ . * + ? with a backslash for a literal search") from None

    def _grep(self, base: Path, regex: LinearPattern, include: list[str], exclude: list[str],
              context: int, cap: int, budget: Budget) -> str:
        st = _GrepState(cap, budget)
        if base.is_file():
            self._grep_file(base, regex, context, st)
        else:
            for p, is_dir in walk(self.workspace, base, budget):
                if st.capped or budget.over():
                    break
                rel = os.path.relpath(p, base)
                if is_dir or any(matches(g, rel) for g in exclude):
                    continue
                if any(matches(g, part) for g in exclude for part in _parents(rel)):
                    continue
                if include and not any(matches(g, rel) for g in include):
                    continue
                self._grep_file(p, regex, context, st)
        return self._summary(base, regex, st)

    def _summary(self, base: Path, regex: LinearPattern, st: _GrepState) -> str:
        where = self.workspace.rel(base)
        notes = []
        if st.binary:
            notes.append(f"{plural(st.binary, 'binary file')} skipped")
        if st.large:
            notes.append(f"{plural(st.large, 'file')} over {human_size(self.max_file_size)} skipped")
        if st.linked:
            notes.append(f"{plural(st.linked, 'hard-linked file')} skipped")
        if st.unreadable:
            notes.append(f"{plural(st.unreadable, 'file')} unreadable")
        note = f" ({'; '.join(notes)})" if notes else ""
        stopped = ""
        if st.budget.exhausted:
            stopped = (f"\n[search stopped after the time limit of {st.budget.seconds:g} s: results are "
                       "incomplete; narrow the path or include]")
        if not st.matches:
            return f"No matches for {regex.pattern!r} in {where}{note}{stopped}"
        head = (f"{plural(st.matches, 'match', 'matches')} in {plural(st.files, 'file')} "
                f"for {regex.pattern!r} in {where}{note}")
        if st.capped:
            head = (f"First {st.matches} matches (limit reached; more exist) in {plural(st.files, 'file')} "
                    f"for {regex.pattern!r} in {where}{note}")
        body = "\n".join(st.out)
        if st.capped:
            body += f"\n[... results capped at {st.cap} matches; narrow the pattern, path or include]"
        return head + ":\n" + body + stopped

    def _grep_file(self, path: Path, regex: LinearPattern, context: int, st: _GrepState) -> None:
        try:
            with open_regular(path) as f:
                size = os.fstat(f.fileno()).st_size
                if size > self.max_file_size:
                    st.large += 1
                    return
                data = f.read()
        except NotRegularFileError as e:
            if e.hard_linked:
                st.linked += 1
            else:
                st.unreadable += 1
            return
        except OSError:
            st.unreadable += 1
            return
        if looks_binary(data[:SNIFF_BYTES]):
            st.binary += 1
            return
        # Lines split at \n only, as `read` numbers them; matched as UTF-8 bytes (no decoding pass).
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")  # so `$` matches at the end of a CRLF line
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        hits = []
        for i, line in enumerate(lines):
            if i % LINES_PER_CHECK == 0 and st.budget.over():
                break
            if regex.search(line):
                hits.append(i)
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


def _clip(raw: bytes) -> str:
    line = raw.decode("utf-8", errors="replace").rstrip("\r")
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
    for pattern in value:
        try:
            compile_glob(pattern)
        except (GlobError, PatternError) as e:
            raise SearchFailed(f"{key} pattern {short(pattern)!r}: {e}") from None
    return value
