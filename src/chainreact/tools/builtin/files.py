"""The `read` and `write` builtins (and the factory for `edit`, which lives in edit.py).

All paths are confined to the workspace (see workspace.py). Expected failures (missing file,
binary file, refusing to overwrite) come back as `Error: ...` results, never as exceptions.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ..base import Tool, ToolContext, ToolOutput
from .backups import BACKUP_MAX_BYTES, BackupStore
from .configs import ReadConfig, WriteConfig, parse_config
from .fileio import (
    SNIFF_BYTES,
    NotRegularFileError,
    atomic_write,
    guess_type,
    human_size,
    kind_of,
    looks_binary,
    open_regular,
)
from .results import error, plural
from .workspace import (
    PathEscapeError,
    Workspace,
    description_from,
    workspace_from_config,
)


def count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


# --- read ------------------------------------------------------------------------------------------


class ReadTool(Tool):
    name = "read"

    def __init__(self, workspace: Workspace, *, max_lines: int = 2000, max_line_length: int = 2000,
                 max_output: int = 100_000, max_entries: int = 1000, description: str | None = None):
        self.workspace = workspace
        self.max_lines = max_lines
        self.max_line_length = max_line_length
        self.max_output = max_output
        self.max_entries = max_entries
        self.description = description or (
            "Read a text file from the workspace, with line numbers; or list a directory. "
            f"Shows up to {max_lines} lines starting at `offset` (1-based); the result says how to "
            "continue. Binary files are described (size, type), not dumped."
        )
        self.parameters = {
            "type": "object",
            "properties": {
                "path": {"type": "string",
                         "description": "File or directory, relative to the workspace root."},
                "offset": {"type": "integer", "minimum": 1,
                           "description": "First line to show (1-based). Default 1."},
                "limit": {"type": "integer", "minimum": 1,
                          "description": f"Maximum number of lines to show. Default {max_lines}."},
            },
            "required": ["path"],
            "additionalProperties": False,
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        offset = args.get("offset", 1)
        limit = args.get("limit", self.max_lines)
        for key, value in (("offset", offset), ("limit", limit)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                return error(f"{key} must be an integer >= 1, got {value!r}")
        try:
            real = self.workspace.resolve(args.get("path"))
            return await asyncio.to_thread(self._read, real, offset, min(limit, self.max_lines))
        except (PathEscapeError, NotRegularFileError) as e:
            return error(str(e))
        except FileNotFoundError:
            return error(f"{args.get('path')!r} does not exist; list the parent directory with read to check")
        except PermissionError:
            return error(f"permission denied reading {args.get('path')!r}")
        except OSError as e:
            return error(f"cannot read {args.get('path')!r}: {e.strerror or e}")

    def _read(self, real: Path, offset: int, limit: int) -> str | ToolOutput:
        st = os.stat(real)
        if stat.S_ISDIR(st.st_mode):
            return self._list_dir(real)
        rel = self.workspace.rel(real)
        with open_regular(real) as f:
            head = f.read(SNIFF_BYTES)
            if looks_binary(head):
                return (f"Binary file: {rel} ({human_size(st.st_size)}, {st.st_size} bytes), "
                        f"type: {guess_type(real, head)}. Not shown as text.")
            if not head:
                return f"File: {rel} (empty file)"
            f.seek(0)
            return self._read_lines(f, rel, offset, limit)

    def _read_lines(self, f: BinaryIO, rel: str, offset: int, limit: int) -> str:
        out: list[str] = []
        used = 0
        lineno = 0
        last_shown = offset - 1
        replaced = False
        # At most this many bytes of a line are ever held (lines up to 64 KiB whole, so their length
        # in characters is exact; always max_line_length characters of UTF-8 and a few bytes more).
        # The rest of a longer line is skipped in chunks.
        keep = max(self.max_line_length * 4 + 4, 64 * 1024)
        for raw, size in _bounded_lines(f, keep):
            lineno += 1
            if lineno < offset:
                continue
            text = raw.decode("utf-8", errors="replace")
            if "\ufffd" in text and b"\xef\xbf\xbd" not in raw and size == len(raw):
                replaced = True
            text = text.rstrip("\r\n")
            if size > len(raw):  # cut while reading: the length in characters is unknown
                text = (text[: self.max_line_length]
                        + f" … [line truncated: {size} bytes, showing {self.max_line_length} characters]")
            elif len(text) > self.max_line_length:
                text = (text[: self.max_line_length]
                        + f" … [line truncated: {len(text)} characters, showing {self.max_line_length}]")
            line = f"{lineno:6d}\t{text}"
            if used + len(line) > self.max_output and out:
                break
            out.append(line)
            used += len(line) + 1
            last_shown = lineno
            if lineno >= offset + limit - 1:
                break
        # Past the window: only count the remaining lines, a chunk at a time, for the "of N" total.
        total = lineno + _count_rest(f)
        if offset > total:
            return (f"File: {rel} has {plural(total, 'line')}; offset {offset} is past the end. "
                    f"Use an offset between 1 and {total}.")
        header = f"File: {rel} (lines {offset}-{last_shown} of {total})"
        if replaced:
            header += " [not valid UTF-8: undecodable bytes shown as \ufffd]"
        body = "\n".join(out)
        if last_shown < total:
            body += (f"\n[... {total - last_shown} more lines not shown; "
                     f"continue with offset={last_shown + 1}]")
        return header + "\n" + body

    def _list_dir(self, real: Path) -> str:
        rel = self.workspace.rel(real)
        entries = []
        with os.scandir(real) as it:
            for entry in it:
                entries.append(entry)
        entries.sort(key=lambda e: (not _is_dir(e), e.name))
        lines = []
        for entry in entries[: self.max_entries]:
            try:
                if entry.is_symlink():
                    lines.append(f"link  {entry.name} -> {os.readlink(entry.path)}")
                elif entry.is_dir():
                    lines.append(f"dir   {entry.name}/")
                elif entry.is_file():
                    lines.append(f"file  {entry.name}  {human_size(entry.stat().st_size)}")
                else:
                    lines.append(f"other {entry.name}")
            except OSError:
                lines.append(f"?     {entry.name}")
        header = f"Directory: {rel} ({len(entries)} {'entry' if len(entries) == 1 else 'entries'})"
        if not entries:
            return header + "\n(empty directory)"
        if len(entries) > self.max_entries:
            lines.append(f"[... {len(entries) - self.max_entries} more entries not shown; "
                         "use the glob tool to narrow down]")
        return header + "\n" + "\n".join(lines)


READ_CHUNK = 1 << 20


def _bounded_lines(f: BinaryIO, keep: int) -> Iterator[tuple[bytes, int]]:
    """(the first `keep` bytes of each line, the line's full length in bytes), holding at most
    `keep` + READ_CHUNK bytes whatever the file's line lengths are."""
    while True:
        head = f.readline(keep)
        if not head:
            return
        size = len(head)
        if len(head) == keep and not head.endswith(b"\n"):
            while True:  # skip the rest of a long line
                more = f.readline(READ_CHUNK)
                size += len(more)
                if not more or more.endswith(b"\n"):
                    size -= 2 if more.endswith(b"\r\n") else 1 if more else 0  # the line, not its end
                    break
        yield head, size


def _count_rest(f: BinaryIO) -> int:
    """Lines from the current position to the end, counted in chunks (a last line without \\n counts)."""
    count = 0
    last = b"\n"
    while chunk := f.read(READ_CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (0 if last == b"\n" else 1)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


# --- write -----------------------------------------------------------------------------------------

WRITE_MODES = ("create", "overwrite", "append")


class WriteTool(Tool):
    name = "write"

    def __init__(self, workspace: Workspace, backups: BackupStore | None, *, max_bytes: int = 0,
                 description: str | None = None):
        self.workspace = workspace
        self.backups = backups
        self.max_bytes = max_bytes
        self.description = description or (
            "Write a text file in the workspace (parent directories are created). mode: create (default; "
            "fails if the file exists), overwrite (replace it) or append (add to the end). The write is "
            "atomic: the file is never left half-written."
        )
        self.parameters = {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to write, relative to the workspace root."},
                "content": {"type": "string", "description": "The complete text to write (or to append)."},
                "mode": {"type": "string", "enum": list(WRITE_MODES), "default": "create",
                         "description": "create (refuse if the file exists), overwrite or append."},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        mode = args.get("mode", "create")
        if mode not in WRITE_MODES:
            return error(f"mode must be one of {', '.join(WRITE_MODES)}, got {mode!r}")
        content = args.get("content")
        if not isinstance(content, str):
            return error(f"content must be a string, got {type(content).__name__}")
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as e:
            return error(f"content is not valid Unicode text ({e.reason} at character {e.start}); "
                         "nothing written")
        if self.max_bytes and len(data) > self.max_bytes:
            return error(f"content is {len(data)} bytes; this tool writes at most {self.max_bytes} "
                         "(maxFileSize); nothing written")
        shown = args.get("path")
        try:
            real = self.workspace.resolve(shown)
            return await asyncio.to_thread(self._write, real, data, mode)
        except (PathEscapeError, NotRegularFileError) as e:
            return error(f"{e}; nothing written")
        except FileExistsError:
            return error(f"{shown!r} already exists; nothing written. Pass mode=\"overwrite\" to replace it, "
                         "mode=\"append\" to add to its end, or use the edit tool to change part of it")
        except NotADirectoryError:
            return error(f"cannot create {shown!r}: a parent path component is a file, not a directory")
        except PermissionError:
            return error(f"permission denied writing {shown!r}; nothing written")
        except OSError as e:
            return error(f"cannot write {shown!r}: {e.strerror or e}; nothing written")

    def _write(self, real: Path, data: bytes, mode: str) -> str | ToolOutput:
        rel = self.workspace.rel(real)
        if real.is_dir():
            return error(f"{rel!r} is a directory; pass a file path")
        try:
            st = os.lstat(real)
        except FileNotFoundError:
            pass
        else:
            if not stat.S_ISREG(st.st_mode):
                # A FIFO would block the writer (or be silently replaced by a file): refuse instead.
                return error(f"{rel!r} is not a regular file ({kind_of(st.st_mode)}); nothing written")
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # mkdir's way of saying a component is a file
            raise NotADirectoryError(str(real.parent)) from None
        old_size: int | None = None
        note = ""
        if mode != "create":
            try:
                old_size = os.stat(real).st_size
            except FileNotFoundError:
                old_size = None
            if old_size is not None and self.backups is not None:
                note = self._backup(real, old_size)
        atomic_write(real, data, exclusive=mode == "create", append=mode == "append")
        if mode == "append" and old_size is not None:
            return f"Appended {len(data)} bytes to {rel} (now {old_size + len(data)} bytes){note}"
        summary = f"{len(data)} bytes, {plural(count_lines(data), 'line')}"
        if old_size is None:
            return f"Created {rel} ({summary})"
        return f"Overwrote {rel} ({summary}; previously {old_size} bytes){note}"

    def _backup(self, real: Path, size: int) -> str:
        assert self.backups is not None
        if size > BACKUP_MAX_BYTES:
            return f"; no backup kept (file larger than {human_size(BACKUP_MAX_BYTES)})"
        with open_regular(real) as f:
            n = self.backups.save(real, f.read())
        return f"; backup #{n} kept, undo with the edit tool (undo: true)"


# --- factories (names and signatures are fixed by chainreact.tools.registry) -----------------------


def create_read(config: dict[str, Any], descriptor: Any = None) -> Tool:
    c = parse_config(ReadConfig, config, "read")
    tool = ReadTool(workspace_from_config({"workDir": c.workDir}, "read"), max_lines=c.lines(),
                    max_line_length=c.maxLineLength, max_output=c.maxOutput, max_entries=c.maxEntries)
    tool.description = description_from(descriptor, tool.description)
    return tool


def backups_for(enabled: bool, keep: int, workspace: Workspace) -> BackupStore | None:
    return BackupStore(workspace, keep=keep) if enabled else None


def create_write(config: dict[str, Any], descriptor: Any = None) -> Tool:
    c = parse_config(WriteConfig, config, "write")
    ws = workspace_from_config({"workDir": c.workDir}, "write")
    tool = WriteTool(ws, backups_for(c.backups, c.maxBackups, ws), max_bytes=c.maxFileSize)
    tool.description = description_from(descriptor, tool.description)
    return tool
