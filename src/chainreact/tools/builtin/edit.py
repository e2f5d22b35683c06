"""The `edit` builtin: exact search/replace, line-range replacement, and undo from backups.

Search/replace demands a unique match (or `replace_all`), because a model that guesses wrong about
which occurrence it meant silently corrupts the file otherwise. Failures explain what was found so
the model can retry with better context.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import re
from pathlib import Path
from typing import Any

from ..base import Tool, ToolContext, ToolOutput
from .backups import BACKUP_MAX_BYTES, BackupStore
from .configs import EditConfig, parse_config
from .fileio import SNIFF_BYTES, NotRegularFileError, atomic_write, human_size, looks_binary, open_regular
from .files import backups_for
from .results import error, plural
from .workspace import PathEscapeError, Workspace, description_from, workspace_from_config

# Text files larger than this are not edited in memory; the error suggests bash (sed) instead.
EDIT_MAX_BYTES = 16 * 1024 * 1024
SNIPPET_CONTEXT = 2
SNIPPET_MAX_LINES = 40


class EditFailed(Exception):
    """An expected failure; the message becomes the `Error: ...` result."""


class EditTool(Tool):
    name = "edit"

    def __init__(self, workspace: Workspace, backups: BackupStore | None, *, description: str | None = None):
        self.workspace = workspace
        self.backups = backups
        self.description = description or (
            "Edit a text file in the workspace. Either replace `old_text` with `new_text` (old_text must "
            "match exactly once, including whitespace, unless replace_all is true), or replace lines "
            "`start_line`..`end_line` (1-based, inclusive) with `new_text`. `undo: true` restores the "
            "file as it was before the last edit or overwrite."
        )
        self.parameters = {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to edit, relative to the workspace root."},
                "old_text": {"type": "string", "description": "Exact text to find (copy it from read output, "
                             "without the line-number prefix)."},
                "new_text": {"type": "string", "description": "Replacement text (\"\" deletes)."},
                "replace_all": {"type": "boolean", "default": False,
                                "description": "Replace every occurrence of old_text."},
                "start_line": {"type": "integer", "minimum": 1, "description": "First line to replace."},
                "end_line": {"type": "integer", "minimum": 0,
                             "description": "Last line to replace (default start_line; start_line-1 "
                                            "inserts new_text before start_line without removing lines)."},
                "undo": {"type": "boolean", "default": False,
                         "description": "Restore the previous version of the file instead of editing."},
            },
            "required": ["path"],
            "additionalProperties": False,
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        shown = args.get("path")
        try:
            real = self.workspace.resolve(shown)
            if args.get("undo") is True:
                return await asyncio.to_thread(self._undo, real)
            return await asyncio.to_thread(self._edit, real, args)
        except (PathEscapeError, NotRegularFileError, EditFailed) as e:
            return error(str(e))
        except FileNotFoundError:
            return error(f"{shown!r} does not exist; create it with the write tool")
        except IsADirectoryError:
            return error(f"{shown!r} is a directory; pass a file path")
        except PermissionError:
            return error(f"permission denied editing {shown!r}; file unchanged")
        except OSError as e:
            return error(f"cannot edit {shown!r}: {e.strerror or e}; file unchanged")

    # --- undo --------------------------------------------------------------------------------------

    def _undo(self, real: Path) -> str:
        rel = self.workspace.rel(real)
        if self.backups is None:
            raise EditFailed("undo is not available: backups are disabled for this tool "
                             "(config backups: false)")
        latest = self.backups.latest(real)
        if latest is None:
            raise EditFailed(f"no backup of {rel} to restore (backups are made by edit and by write with "
                             "mode overwrite/append)")
        n, data = latest
        real.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(real, data)
        self.backups.drop(real, n)
        left = self.backups.count(real)
        return (f"Restored {rel} from backup #{n} ({len(data)} bytes); "
                f"{plural(left, 'older backup') if left else 'no older backups'} left")

    # --- edit --------------------------------------------------------------------------------------

    def _edit(self, real: Path, args: dict[str, Any]) -> str:
        rel = self.workspace.rel(real)
        text = self._load(real, rel)
        new_text = args.get("new_text")
        if new_text is None:
            raise EditFailed('new_text is required (pass "" to delete)')
        if not isinstance(new_text, str):
            raise EditFailed(f"new_text must be a string, got {type(new_text).__name__}")
        if "old_text" in args and args["old_text"] is not None:
            if "start_line" in args or "end_line" in args:
                raise EditFailed("pass either old_text or start_line/end_line, not both")
            updated, what, first, last = self._replace(text, rel, args["old_text"], new_text,
                                                       args.get("replace_all") is True)
        elif "start_line" in args:
            updated, what, first, last = self._replace_lines(text, rel, args.get("start_line"),
                                                             args.get("end_line"), new_text)
        else:
            raise EditFailed("nothing to do: pass old_text and new_text (search/replace), start_line "
                             "[end_line] and new_text (line range), or undo: true")
        if updated == text:
            raise EditFailed("the edit would not change the file (new text equals the old); file unchanged")
        data = updated.encode("utf-8")
        note = ""
        if self.backups is not None:
            old = text.encode("utf-8")
            if len(old) <= BACKUP_MAX_BYTES:
                n = self.backups.save(real, old)
                note = f" (backup #{n}; undo: true restores it)"
            else:
                note = f" (no backup: file larger than {human_size(BACKUP_MAX_BYTES)})"
        atomic_write(real, data)
        return f"Edited {rel}: {what}{note}. Lines {first}-{last} now:\n" + snippet(updated, first, last)

    def _load(self, real: Path, rel: str) -> str:
        with open_regular(real) as f:
            size = os.fstat(f.fileno()).st_size
            if size > EDIT_MAX_BYTES:
                raise EditFailed(f"{rel} is {human_size(size)}; edit handles files up to "
                                 f"{human_size(EDIT_MAX_BYTES)} (use bash, e.g. sed, for larger ones)")
            data = f.read()
        if looks_binary(data[:SNIFF_BYTES]):
            raise EditFailed(f"{rel} is a binary file; edit only changes text files")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise EditFailed(f"{rel} is not valid UTF-8 (byte {e.start}); edit refuses to re-encode it. "
                             "Use bash for this file") from None

    def _replace(self, text: str, rel: str, old: Any, new: str,
                 replace_all: bool) -> tuple[str, str, int, int]:
        if not isinstance(old, str) or old == "":
            raise EditFailed("old_text must be a non-empty string")
        positions = find_all(text, old)
        if not positions and "\r\n" in text and "\n" in old and "\r\n" not in old:
            # The file uses CRLF line ends, the model wrote LF: match (and write) in the file's style.
            old, new = old.replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
            positions = find_all(text, old)
        if not positions:
            raise EditFailed(f"old_text was not found in {rel}. " + not_found_hint(text, old))
        lines_at = [text.count("\n", 0, p) + 1 for p in positions]
        if len(positions) > 1 and not replace_all:
            shown = ", ".join(map(str, lines_at[:20])) + (" …" if len(lines_at) > 20 else "")
            raise EditFailed(f"old_text matches {len(positions)} times in {rel} (at lines {shown}); "
                             "include more surrounding lines in old_text to make it unique, "
                             "or pass replace_all: true to replace every occurrence")
        updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        first = lines_at[0]
        # Where the replaced region ends in the new text: the last replacement's start + its length.
        shift = (len(new) - len(old)) * (len(positions) - 1)
        end_pos = positions[-1] + shift + len(new)
        last = max(first, updated.count("\n", 0, max(end_pos - 1, 0)) + 1) if new else first
        what = (f"replaced {plural(len(positions), 'occurrence')}" if replace_all
                else f"replaced 1 occurrence at line {first}")
        return updated, what, first, last

    def _replace_lines(self, text: str, rel: str, start: Any, end: Any,
                       new: str) -> tuple[str, str, int, int]:
        lines = text.splitlines(keepends=True)
        n = len(lines)
        if isinstance(start, bool) or not isinstance(start, int) or not 1 <= start <= n + 1:
            raise EditFailed(f"start_line must be an integer from 1 to {n + 1} "
                             f"({rel} has {plural(n, 'line')}), got {start!r}")
        if end is None:
            end = start
        if isinstance(end, bool) or not isinstance(end, int) or not start - 1 <= end <= n:
            raise EditFailed(f"end_line must be an integer from {start - 1} (insert only) to {n}, "
                             f"got {end!r}")
        crlf = sum(1 for line in lines if line.endswith("\r\n")) > n // 2 and n > 0
        if crlf:
            new = new.replace("\r\n", "\n").replace("\n", "\r\n")
        eol = "\r\n" if crlf else "\n"
        # Keep the line structure: the new block ends with a newline if anything follows it or the
        # replaced block did.
        replaced_had_eol = end >= start and lines[end - 1].endswith("\n")
        if new and not new.endswith("\n") and (end < n or replaced_had_eol):
            new += eol
        updated = "".join(lines[: start - 1]) + new + "".join(lines[end:])
        added = len(new.splitlines())
        first, last = start, max(start, start + added - 1)
        if end < start:
            what = f"inserted {plural(added, 'line')} before line {start}"
        else:
            what = f"replaced lines {start}-{end} with {plural(added, 'line')}"
        return updated, what, first, last


def find_all(text: str, needle: str) -> list[int]:
    out = []
    i = text.find(needle)
    while i != -1:
        out.append(i)
        i = text.find(needle, i + len(needle))
    return out


def snippet(text: str, first: int, last: int) -> str:
    lines = text.splitlines()
    lo = max(1, first - SNIPPET_CONTEXT)
    hi = min(len(lines), last + SNIPPET_CONTEXT)
    if hi - lo + 1 > SNIPPET_MAX_LINES:
        hi = lo + SNIPPET_MAX_LINES - 1
        tail = f"\n[... snippet cut at {SNIPPET_MAX_LINES} lines; read the file for the rest]"
    else:
        tail = ""
    if not lines:
        return "(file is now empty)"
    return "\n".join(f"{i:6d}\t{lines[i - 1]}" for i in range(lo, hi + 1)) + tail


def _norm(line: str) -> str:
    return re.sub(r"\s+", " ", line.strip())


def not_found_hint(text: str, old: str) -> str:
    """Help the model fix its old_text: a whitespace-only mismatch, or where its first line occurs."""
    lines = text.splitlines()
    want = [_norm(x) for x in old.splitlines()]
    while want and not want[0]:
        want.pop(0)
    while want and not want[-1]:
        want.pop()
    if want:
        norm = [_norm(x) for x in lines]
        k = len(want)
        for i in range(len(norm) - k + 1):
            if norm[i : i + k] == want:
                return (f"Lines {i + 1}-{i + k} match when whitespace is ignored (indentation, tabs or "
                        "trailing spaces differ). Their exact current text:\n" + snippet(text, i + 1, i + k))
        hits = [i + 1 for i, line in enumerate(norm) if want[0] and want[0] in line]
        if hits:
            return (f"Its first line occurs at line(s) {', '.join(map(str, hits[:10]))}, but the following "
                    f"lines differ. Current text around line {hits[0]}:\n"
                    + snippet(text, hits[0], min(len(lines), hits[0] + k - 1)))
        if len(lines) <= 20000:
            close = difflib.get_close_matches(want[0], norm, n=1, cutoff=0.6)
            if close:
                at = norm.index(close[0]) + 1
                return f"The most similar line is {at}:\n" + snippet(text, at, at)
    return "Read the file and copy the exact current text (without line-number prefixes)."


def create_edit(config: dict[str, Any], descriptor: Any = None) -> Tool:
    c = parse_config(EditConfig, config, "edit")
    ws = workspace_from_config({"workDir": c.workDir}, "edit")
    tool = EditTool(ws, backups_for(c.backups, c.kept(), ws))
    tool.description = description_from(descriptor, tool.description)
    return tool
