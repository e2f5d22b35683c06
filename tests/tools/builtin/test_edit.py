from __future__ import annotations

from pathlib import Path

from .conftest import call

SRC = "def a():\n    return 1\n\n\ndef b():\n    return 1\n"


async def test_unique_match_replaces_and_shows_result(ws: Path, make) -> None:
    (ws / "m.py").write_text(SRC)
    text, err = await call(make("edit"), path="m.py", old_text="def b():\n    return 1",
                           new_text="def b():\n    return 2")
    assert not err
    assert text.startswith("Edited m.py: replaced 1 occurrence at line 5")
    assert "     6\t    return 2" in text
    assert (ws / "m.py").read_text() == SRC.replace("def b():\n    return 1", "def b():\n    return 2")


async def test_multiple_matches_refused_with_line_numbers(ws: Path, make) -> None:
    (ws / "m.py").write_text(SRC)
    edit = make("edit")
    text, err = await call(edit, path="m.py", old_text="return 1", new_text="return 3")
    assert err and "matches 2 times" in text and "lines 2, 6" in text and "replace_all" in text
    assert (ws / "m.py").read_text() == SRC
    text, err = await call(edit, path="m.py", old_text="return 1", new_text="return 3", replace_all=True)
    assert not err and "replaced 2 occurrences" in text
    assert (ws / "m.py").read_text().count("return 3") == 2


async def test_no_match_hints(ws: Path, make) -> None:
    (ws / "m.py").write_text(SRC)
    edit = make("edit")
    text, err = await call(edit, path="m.py", old_text="def a():\n  return 1", new_text="x")
    assert err and "Lines 1-2 match when whitespace is ignored" in text and "     2\t    return 1" in text
    text, err = await call(edit, path="m.py", old_text="def a():\n    return 99", new_text="x")
    assert err and "first line occurs at line(s) 1" in text
    text, err = await call(edit, path="m.py", old_text="def c():", new_text="x")
    assert err and "most similar line" in text
    text, err = await call(edit, path="m.py", old_text="zzz qqq www", new_text="x")
    assert err and "Read the file" in text
    assert (ws / "m.py").read_text() == SRC


async def test_line_range_replace_and_insert(ws: Path, make) -> None:
    f = ws / "l.txt"
    f.write_text("one\ntwo\nthree\n")
    edit = make("edit")
    text, err = await call(edit, path="l.txt", start_line=2, end_line=3, new_text="TWO\nTHREE\nFOUR")
    assert not err and "replaced lines 2-3 with 3 lines" in text
    assert f.read_text() == "one\nTWO\nTHREE\nFOUR\n"
    await call(edit, path="l.txt", start_line=1, end_line=0, new_text="zero")
    assert f.read_text() == "zero\none\nTWO\nTHREE\nFOUR\n"
    await call(edit, path="l.txt", start_line=6, end_line=5, new_text="five\n")  # append at the end
    assert f.read_text().endswith("FOUR\nfive\n")
    text, err = await call(edit, path="l.txt", start_line=3, end_line=9, new_text="x")
    assert err and "end_line must be an integer from 2" in text


async def test_undo_steps_back_through_backups(ws: Path, make) -> None:
    f = ws / "u.txt"
    f.write_text("v1\n")
    edit = make("edit")
    await call(edit, path="u.txt", old_text="v1", new_text="v2")
    await call(edit, path="u.txt", old_text="v2", new_text="v3")
    assert f.read_text() == "v3\n"
    text, err = await call(edit, path="u.txt", undo=True)
    assert not err and "backup #2" in text and f.read_text() == "v2\n"
    await call(edit, path="u.txt", undo=True)
    assert f.read_text() == "v1\n"
    text, err = await call(edit, path="u.txt", undo=True)
    assert err and "no backup" in text and f.read_text() == "v1\n"
    assert (ws / ".chainreact/backups").is_dir()


async def test_backups_can_be_disabled_or_bounded(ws: Path, make) -> None:
    f = ws / "u.txt"
    f.write_text("0\n")
    edit = make("edit", backups=False)
    await call(edit, path="u.txt", old_text="0", new_text="1")
    text, err = await call(edit, path="u.txt", undo=True)
    assert err and "backups are disabled" in text
    assert not (ws / ".chainreact").exists()
    edit = make("edit", maxBackups=2)
    for i in range(1, 5):
        await call(edit, path="u.txt", old_text=str(i), new_text=str(i + 1))
    assert sorted(p.name for p in (ws / ".chainreact/backups").iterdir()) == ["u.txt.3", "u.txt.4"]


async def test_crlf_binary_and_no_change(ws: Path, make) -> None:
    (ws / "w.txt").write_bytes(b"a\r\nb\r\n")
    edit = make("edit")
    text, err = await call(edit, path="w.txt", old_text="a\nb", new_text="A\nB")
    assert not err and (ws / "w.txt").read_bytes() == b"A\r\nB\r\n"
    (ws / "bin").write_bytes(b"\x00\x01abc")
    text, err = await call(edit, path="bin", old_text="abc", new_text="x")
    assert err and "binary" in text and (ws / "bin").read_bytes() == b"\x00\x01abc"
    text, err = await call(edit, path="w.txt", old_text="A", new_text="A")
    assert err and "would not change" in text
    text, err = await call(edit, path="w.txt", new_text="x")
    assert err and "nothing to do" in text
    text, err = await call(edit, path="missing.txt", old_text="a", new_text="b")
    assert err and "does not exist" in text
