"""Traversal corpus: every attempt to read, write, edit, grep or glob outside the workspace fails.

Checked by effect, not by message: secrets outside never appear in any result, and the files outside
are byte-for-byte unchanged afterwards.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from chainreact.tools.registry import create_builtin

from .conftest import call

PASSWD_LINE = re.compile(r"root:[^:\n]*:0:0:")


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Any]:
    secret, hidden = f"TOPSECRET-{uuid.uuid4().hex}", uuid.uuid4().hex
    outside = tmp_path / "outside"
    (outside / "etc").mkdir(parents=True)
    (outside / "sentinel.txt").write_text(f"{secret}\nline two\n")
    (outside / f"hidden-{hidden}.txt").write_text(f"{secret}\n")
    (outside / "etc" / "passwd").write_text(f"{secret}\n")
    ws = tmp_path / "ws"
    (ws / "inner").mkdir(parents=True)
    (ws / "inside.txt").write_text("inside content\n")
    os.symlink(outside, ws / "linkdir")
    os.symlink(outside / "sentinel.txt", ws / "linkfile")
    os.symlink(ws / "chain2", ws / "chain1")
    os.symlink(outside, ws / "chain2")
    os.symlink("/etc", ws / "etc")
    os.symlink(outside / "etc", ws / "fakeetc")
    os.symlink(outside / "new.txt", ws / "dangling")
    os.symlink("..", ws / "inner" / "up")
    os.symlink("loop2", ws / "loop1")
    os.symlink("loop1", ws / "loop2")
    return {"ws": ws, "outside": outside, "secret": secret, "hidden": hidden}


def corpus(ws: Path, outside: Path, *, writing: bool) -> list[str]:
    etc = "fakeetc" if writing else "etc"  # never aim a possible write at the real /etc
    passwd = str(outside / "etc" / "passwd") if writing else "/etc/passwd"
    return [
        "../outside/sentinel.txt", "../../etc/passwd", passwd, str(outside / "sentinel.txt"),
        "a/../../outside/sentinel.txt", "./../outside/sentinel.txt", "inner/../../outside/sentinel.txt",
        "linkdir/sentinel.txt", "linkdir", "linkdir/", "linkdir/new.txt", "linkfile", "chain1/sentinel.txt",
        "chain1", "chain1/new.txt", f"{etc}/passwd", etc, "dangling", "inner/up/../outside/sentinel.txt",
        "inner/up/inner/up/../outside/new.txt", "~/.bashrc", "~", "~root/.bashrc",
        "%2e%2e/outside/sentinel.txt",
        "..%2foutside%2fsentinel.txt", "..\\outside\\sentinel.txt", "x\x00y", "inside.txt\x00../outside",
        "a" * 5000, "b" * 300 + "/x", "\u2025/outside/sentinel.txt", "\uff0e\uff0e/outside/sentinel.txt",
        "//" + str(outside / "sentinel.txt").lstrip("/"), f"{ws}/../outside/sentinel.txt",
        f"{ws}/linkdir/sentinel.txt", f"{ws}/../outside", "loop1", "loop1/x", "..", "../", "/",
        "/proc/self/root" + str(outside / "sentinel.txt"), "/proc/self/cwd/../outside/sentinel.txt",
        "newdir/../../outside/new.txt", "linkdir/../outside/sentinel.txt", str(outside), "",
    ]


def snapshot(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = os.readlink(p) if p.is_symlink() else (
                None if p.is_dir() else p.read_bytes())
    return out


async def test_no_escapes(layout: dict[str, Any]) -> None:
    ws, outside, secret, hidden = layout["ws"], layout["outside"], layout["secret"], layout["hidden"]
    before = snapshot(outside)
    links_before = {p.name: os.readlink(p) for p in ws.iterdir() if p.is_symlink()}
    cfg = {"workDir": str(ws)}
    read, write, edit = (create_builtin(n, cfg) for n in ("read", "write", "edit"))
    grep, glob = create_builtin("grep", cfg), create_builtin("glob", cfg)

    attempts: list[tuple[Any, dict[str, Any]]] = []
    for p in corpus(ws, outside, writing=False):
        attempts += [(read, {"path": p}), (grep, {"pattern": "TOPSECRET|root:", "path": p}),
                     (glob, {"pattern": "*", "path": p}), (glob, {"pattern": "**", "path": p}),
                     (glob, {"pattern": p.rstrip("/") + "/*" if p else "*"})]
    for p in corpus(ws, outside, writing=True):
        attempts += [(write, {"path": p, "content": "PWNED", "mode": mode}) for mode in
                     ("create", "overwrite", "append")]
        attempts += [(edit, {"path": p, "old_text": "TOPSECRET", "new_text": "PWNED"}),
                     (edit, {"path": p, "start_line": 1, "new_text": "PWNED"}),
                     (edit, {"path": p, "undo": True})]
    for pattern in ["../*", "../outside/*", "/etc/*", "linkdir/*", "chain1/*", "etc/*", "~/*",
                    "**/sentinel.txt", "**/passwd", "**/*hidden*", "inner/up/../outside/*", "**/../*",
                    f"{outside}/*", "**"]:
        attempts += [(glob, {"pattern": pattern}), (grep, {"pattern": "TOPSECRET", "include": [pattern]})]
    assert len(corpus(ws, outside, writing=False)) >= 40

    leaks = []
    for tool, args in attempts:
        text, _ = await call(tool, **args)
        if secret in text or hidden in text or PASSWD_LINE.search(text):
            leaks.append((tool.name, args, text[:200]))
    assert leaks == []
    assert snapshot(outside) == before
    assert {p.name: os.readlink(p) for p in ws.iterdir() if p.is_symlink()} == links_before
    assert not (outside / "new.txt").exists()

    # The tools still work inside (the corpus did not pass merely because everything fails).
    assert "inside content" in (await call(read, path="inside.txt"))[0]
    assert "inside.txt:1:inside content" in (await call(grep, pattern="inside"))[0]
    assert "inner/" in (await call(glob, pattern="*"))[0]
    assert not (await call(write, path=f"{ws}/inner/ok.txt", content="fine"))[1]
    assert (ws / "inner" / "ok.txt").read_text() == "fine"
