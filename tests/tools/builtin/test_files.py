from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from chainreact.tools.builtin.fileio import atomic_write

from .conftest import call


def leftovers(d: Path) -> list[str]:
    return [p.name for p in d.iterdir() if p.name.endswith(".tmp")]


# --- read ------------------------------------------------------------------------------------------


async def test_read_numbers_lines_and_pages(ws: Path, make) -> None:
    (ws / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    read = make("read")
    text, err = await call(read, path="f.txt")
    assert not err
    assert text.splitlines()[0] == "File: f.txt (lines 1-10 of 10)"
    assert "     1\tline 1" in text and "    10\tline 10" in text
    text, _ = await call(read, path="f.txt", offset=4, limit=3)
    assert text.splitlines()[1:4] == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert "[... 4 more lines not shown; continue with offset=7]" in text
    text, _ = await call(read, path="f.txt", offset=20)
    assert "past the end" in text


async def test_read_limits_from_config(ws: Path, make) -> None:
    (ws / "f.txt").write_text("x" * 50 + "\n" + "short\n" * 5)
    read = make("read", maxLines=3, maxLineLength=10)
    text, _ = await call(read, path="f.txt", limit=100)  # limit is capped by maxLines
    assert "xxxxxxxxxx … [line truncated: 50 characters, showing 10]" in text
    assert "continue with offset=4" in text


async def test_read_directory_binary_empty_missing(ws: Path, make) -> None:
    (ws / "sub").mkdir()
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    (ws / "empty.txt").write_bytes(b"")
    os.symlink("empty.txt", ws / "alias")
    read = make("read")
    text, _ = await call(read, path=".")
    assert "Directory: . (4 entries)" in text
    assert "dir   sub/" in text and "file  img.png  108 B" in text and "link  alias -> empty.txt" in text
    text, err = await call(read, path="img.png")
    assert not err and "Binary file: img.png" in text and "PNG image" in text and "108 bytes" in text
    assert "\x00" not in text
    assert (await call(read, path="empty.txt"))[0] == "File: empty.txt (empty file)"
    text, err = await call(read, path="nope.txt")
    assert err and text.startswith("Error: 'nope.txt' does not exist")


async def test_read_invalid_utf8_is_marked(ws: Path, make) -> None:
    (ws / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    text, _ = await call(make("read"), path="latin.txt")
    assert "not valid UTF-8" in text and "caf\ufffd" in text


async def test_read_refuses_fifo_without_blocking(ws: Path, make) -> None:
    os.mkfifo(ws / "pipe")
    text, err = await call(make("read"), path="pipe")
    assert err and "not a regular file (named pipe)" in text


# --- write -----------------------------------------------------------------------------------------


async def test_write_create_refuses_existing(ws: Path, make) -> None:
    write = make("write")
    text, err = await call(write, path="a/b/new.txt", content="hello\n")
    assert not err and text == "Created a/b/new.txt (6 bytes, 1 line)"
    assert (ws / "a/b/new.txt").read_text() == "hello\n"
    text, err = await call(write, path="a/b/new.txt", content="other")
    assert err and 'mode="overwrite"' in text
    assert (ws / "a/b/new.txt").read_text() == "hello\n"
    assert leftovers(ws / "a/b") == []


async def test_write_overwrite_append_keep_mode_and_backup(ws: Path, make) -> None:
    f = ws / "run.sh"
    f.write_text("#!/bin/sh\n")
    f.chmod(0o750)
    write = make("write")
    text, err = await call(write, path="run.sh", content="#!/bin/sh\necho hi\n", mode="overwrite")
    assert not err and "Overwrote run.sh" in text and "previously 10 bytes" in text and "backup #1" in text
    assert stat.S_IMODE(f.stat().st_mode) == 0o750
    text, _ = await call(write, path="run.sh", content="echo bye\n", mode="append")
    assert text.startswith("Appended 9 bytes to run.sh (now 27 bytes)")
    assert f.read_text() == "#!/bin/sh\necho hi\necho bye\n"
    # The backups restore earlier versions through edit's undo.
    edit = make("edit")
    await call(edit, path="run.sh", undo=True)
    assert f.read_text() == "#!/bin/sh\necho hi\n"
    await call(edit, path="run.sh", undo=True)
    assert f.read_text() == "#!/bin/sh\n"
    assert leftovers(ws) == []


async def test_write_errors_leave_nothing_behind(ws: Path, make) -> None:
    write = make("write")
    (ws / "dir").mkdir()
    text, err = await call(write, path="dir", content="x", mode="overwrite")
    assert err and "is a directory" in text
    (ws / "file").write_text("keep")
    text, err = await call(write, path="file/child.txt", content="x")
    assert err and "not a directory" in text
    text, err = await call(write, path="bad.txt", content="\ud800")
    assert err and "not valid Unicode" in text and not (ws / "bad.txt").exists()
    text, err = await call(write, path="x.txt", content="x", mode="truncate")
    assert err and "mode must be one of" in text
    assert (ws / "file").read_text() == "keep"
    assert sorted(p.name for p in ws.iterdir()) == ["dir", "file"]


def test_atomic_write_failure_keeps_original_and_removes_temp(ws: Path) -> None:
    target = ws / "target"
    target.mkdir()
    (target / "inside").write_text("original")
    with pytest.raises(OSError):
        atomic_write(target, b"new content")  # os.replace onto a non-empty directory fails after writing
    assert (target / "inside").read_text() == "original"
    assert leftovers(ws) == []
    (ws / "existing").write_text("old")
    with pytest.raises(FileExistsError):
        atomic_write(ws / "existing", b"new", exclusive=True)
    assert (ws / "existing").read_text() == "old" and leftovers(ws) == []


async def test_write_through_links(ws: Path, tmp_path: Path, make) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("untouched")
    os.symlink(outside, ws / "out_link")
    (ws / "real.txt").write_text("a")
    os.symlink("real.txt", ws / "in_link")
    write = make("write")
    text, err = await call(write, path="out_link", content="x", mode="overwrite")
    assert err and "outside the workspace" in text and outside.read_text() == "untouched"
    text, err = await call(write, path="in_link", content="b", mode="overwrite")
    assert not err and (ws / "real.txt").read_text() == "b" and (ws / "in_link").is_symlink()
