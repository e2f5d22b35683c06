"""Low-level file helpers for the builtin tools: safe opening, binary sniffing, atomic writes.

All functions are blocking; the tools call them through `asyncio.to_thread`.
"""

from __future__ import annotations

import contextlib
import mimetypes
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ...errors import ToolError

SNIFF_BYTES = 8192

# Leading bytes of common binary formats, for a readable "type" in place of a dump.
_MAGIC: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (or docx/xlsx/jar/wheel)"),
    (b"\x1f\x8b", "gzip compressed data"),
    (b"BZh", "bzip2 compressed data"),
    (b"\xfd7zXZ\x00", "xz compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
    (b"\x28\xb5\x2f\xfd", "zstd compressed data"),
    (b"\x7fELF", "ELF executable/library"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\xca\xfe\xba\xbe", "Java class or Mach-O universal binary"),
    (b"\x00asm", "WebAssembly module"),
    (b"OggS", "Ogg media"),
    (b"ID3", "MP3 audio"),
    (b"\x00\x00\x01\x00", "Windows icon"),
]


class NotRegularFileError(ToolError):
    """A FIFO, socket or device: reading it could block forever or return endless data.

    Also a regular file with more than one hard link (`hard_linked`): a link inside the workspace
    can name a file outside it (`ln /etc/shadow ws/x` by anyone who can write the workspace), and
    nothing in the path tells the two apart, so such files are not read.
    """

    def __init__(self, message: str, *, hard_linked: bool = False):
        super().__init__(message)
        self.hard_linked = hard_linked


def open_regular(path: Path, flags: int = os.O_RDONLY, *, allow_hard_links: bool = False) -> BinaryIO:
    """Open a regular file without following a symlink in the last component (closes a swap race).

    The checks run on the opened descriptor, so a file swapped in after a path check is caught too.
    """
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(f"{path.name!r} is not a regular file ({kind_of(st.st_mode)})")
        if st.st_nlink > 1 and not allow_hard_links:
            raise NotRegularFileError(
                f"{path.name!r} has {st.st_nlink} hard links; a hard link may point at a file outside the "
                "workspace, so it is not opened. Copy the file (cp) if its content is needed",
                hard_linked=True)
        # Regular files ignore O_NONBLOCK, but clear it so reads behave normally everywhere.
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "named pipe"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def looks_binary(head: bytes) -> bool:
    """NUL bytes mean binary; text encodings used for source code never contain them."""
    return b"\x00" in head


def guess_type(path: Path, head: bytes) -> str:
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP image"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "WAV audio"
    if len(head) > 262 and head[257:262] == b"ustar":
        return "tar archive"
    mime, _ = mimetypes.guess_type(path.name)
    return mime or "unknown binary data"


def human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        size /= 1024
        if size < 1024 or unit == "TiB":
            return f"{size:.1f} {unit}"
    return f"{n} B"  # unreachable; keeps mypy happy


def _umask() -> int:
    """The process umask, read without the set-and-restore race of os.umask."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


@contextlib.contextmanager
def _temp_beside(path: Path) -> Iterator[tuple[BinaryIO, str]]:
    """A temp file in the target's directory (so os.replace is atomic); removed unless renamed away."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:50]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f, tmp
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def atomic_write(path: Path, data: bytes, *, exclusive: bool = False, append: bool = False) -> None:
    """Replace (or create) `path` with `data` so readers see the old or the new file, never a part.

    `exclusive`: fail with FileExistsError if `path` exists (checked atomically via a hard link).
    `append`: the new file is the old content followed by `data` (copied, not read into memory).
    The existing file's permission bits are kept; new files get 0666 minus the umask.
    """
    try:
        st: os.stat_result | None = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and exclusive:
        raise FileExistsError(path)
    with _temp_beside(path) as (f, tmp):
        if append and st is not None:
            with open_regular(path) as src:
                shutil.copyfileobj(src, f, 1 << 20)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
        if exclusive:
            try:
                os.link(tmp, path)  # refuses to clobber a file created since the check above
                return
            except FileExistsError:
                raise
            except OSError:
                if os.path.lexists(path):  # filesystems without hard links: best effort
                    raise FileExistsError(path) from None
        os.replace(tmp, path)
