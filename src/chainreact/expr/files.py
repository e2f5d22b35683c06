"""RuleGo's template functions on files: include(path) and fileExists(path), read safely."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from .errors import ExprError
from .registry import arg_str, builtin

MAX_INCLUDE = 4 * 1024 * 1024  # bytes include() reads at most

# --- files (RuleGo's template functions) -------------------------------------------------------------

_SPECIAL_ROOTS = ("/proc", "/sys", "/dev")


def read_text_file(path: str | Path, *, limit: int = MAX_INCLUDE) -> str | None:
    """The UTF-8 text of a regular file, None when it does not exist. Refuses devices, FIFOs, sockets and
    the kernel's pseudo files (/proc, /sys, /dev): reading them can block forever or leak process state.
    Files over `limit` bytes are an error, not silently cut."""
    p = Path(path)
    try:
        real = p.resolve(strict=True)
    except FileNotFoundError:
        return None
    except (OSError, RuntimeError) as e:
        raise ExprError(f"include({str(path)!r}): {e}") from None
    if any(str(real) == r or str(real).startswith(r + "/") for r in _SPECIAL_ROOTS):
        raise ExprError(f"include({str(path)!r}): {real} is a special file, not allowed")
    st = real.stat()
    if stat.S_ISDIR(st.st_mode):
        raise ExprError(f"include({str(path)!r}): {real} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ExprError(f"include({str(path)!r}): {real} is not a regular file (a FIFO, device or socket)")
    if st.st_size > limit:
        raise ExprError(f"include({str(path)!r}): file too large ({st.st_size} bytes, at most {limit})")
    # O_NONBLOCK: should the path be swapped for a FIFO after the check, open() must not hang.
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ExprError(f"include({str(path)!r}): {real} is not a regular file")
        data = os.read(fd, limit + 1)
        chunks = [data]
        total = len(data)
        while data and total <= limit:
            data = os.read(fd, limit + 1 - total)
            chunks.append(data)
            total += len(data)
    finally:
        os.close(fd)
    if total > limit:
        raise ExprError(f"include({str(path)!r}): file too large (more than {limit} bytes)")
    return b"".join(chunks).decode("utf-8", "replace")


@builtin("include")
def _include(path: Any) -> str:
    """RuleGo's include(path): the file's text, "" when it does not exist (remote URLs are not fetched)."""
    text = read_text_file(os.path.expanduser(arg_str(path, "include", "path")))
    return "" if text is None else text


@builtin("fileExists")
def _file_exists(path: Any) -> bool:
    try:
        os.stat(os.path.expanduser(arg_str(path, "fileExists", "path")))
        return True
    except (OSError, ValueError):
        return False
