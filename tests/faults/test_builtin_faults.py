"""Fault cases for the builtin tools (issue 10 items 2, 3, 5, 8; issue 9 items 18, 19): what a model,
a hostile workspace or an unlucky user can throw at bash, read, write, grep and glob.

Each test failed before its fix. Cases that could hang the test process before the fix run in a
child process with a time limit, so a regression fails instead of freezing the suite.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from chainreact.tools.base import ToolContext, ToolOutput
from chainreact.tools.registry import create_builtin

SRC = Path(__file__).resolve().parents[2] / "src"
CHILD_LIMIT = 120.0  # seconds; the fixed code answers in well under one
WAIT_LIMIT = 20.0  # generous bound for eventual states; not a timing assertion


async def call(tool: Any, **args: Any) -> tuple[str, bool]:
    result = await tool.run(args, ToolContext())
    if isinstance(result, ToolOutput):
        return result.content, result.is_error
    return result, False


def run_child(code: str, cwd: Path) -> str:
    """Run `code` in a fresh interpreter; its stdout. Fails (not hangs) if it does not finish."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=CHILD_LIMIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child process did not finish within {CHILD_LIMIT:g} s (frozen)")
    assert done.returncode == 0, done.stderr
    return done.stdout


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_until(predicate: Any, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_LIMIT
    while not predicate():
        if loop.time() > deadline:
            pytest.fail(f"gave up waiting: {what}")
        await asyncio.sleep(0.02)


def processes_with(tag: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if tag.encode() in cmdline and alive(int(name)):
                found.append(int(name))
    return found


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


# --- grep and glob: model-supplied patterns (issue 10 item 2, issue 9 item 19) -----------------------


def test_grep_catastrophic_regex_does_not_freeze(ws: Path) -> None:
    # `(a+)+$` backtracks 2^40 times on this line with Python's re (hours, holding the GIL).
    (ws / "evil.txt").write_text("a" * 40 + "!\n" + "aaa\n")
    out = run_child(f"""
        import asyncio
        from chainreact.tools.registry import create_builtin
        from chainreact.tools.base import ToolContext
        grep = create_builtin("grep", {{"workDir": {str(ws)!r}}})
        print(asyncio.run(grep.run({{"pattern": "(a+)+$"}}, ToolContext())))
    """, ws)
    assert out.startswith("1 match in 1 file for '(a+)+$' in .:")
    assert "evil.txt:2:aaa" in out


def test_glob_catastrophic_pattern_does_not_freeze(ws: Path) -> None:
    # `*a*a*...*b` against a long name of a's backtracks polynomially with a high degree under `re`.
    (ws / ("a" * 200)).write_text("x")
    out = run_child(f"""
        import asyncio
        from chainreact.tools.registry import create_builtin
        from chainreact.tools.base import ToolContext
        glob = create_builtin("glob", {{"workDir": {str(ws)!r}}})
        print(asyncio.run(glob.run({{"pattern": "*a" * 14 + "*b"}}, ToolContext())))
        print(asyncio.run(glob.run({{"pattern": "*a" * 14 + "*"}}, ToolContext())))
    """, ws)
    assert out.splitlines()[0].startswith("No paths match")
    assert out.splitlines()[2] == "a" * 200


async def test_grep_stops_at_its_time_limit(ws: Path) -> None:
    for i in range(400):
        (ws / f"f{i:03d}.txt").write_text("needle\n" * 200)
    grep = create_builtin("grep", {"workDir": str(ws), "timeout": 1, "maxResults": 100_000})
    text, err = await call(grep, pattern="needle")
    assert not err
    assert "[search stopped after the time limit of 0.001 s: results are incomplete" in text


async def test_grep_refuses_backreferences_with_a_reason(ws: Path) -> None:
    (ws / "a.txt").write_text("aa\n")
    text, err = await call(create_builtin("grep", {"workDir": str(ws)}), pattern=r"(a)\1")
    assert err and "backreferences" in text and "RE2" in text


@pytest.mark.parametrize("tool", ["glob", "grep"])
async def test_bracket_patterns_from_issue_9(ws: Path, tool: str) -> None:
    (ws / "ab").write_text("x\n")
    (ws / "]b").write_text("x\n")
    (ws / "a").mkdir()
    (ws / "a" / "b").write_text("x\n")
    t = create_builtin(tool, {"workDir": str(ws)})
    if tool == "glob":
        text, err = await call(t, pattern="[]a]b")
        assert not err and text.splitlines()[1:] == ["]b", "ab"]
        text, err = await call(t, pattern="a[/]b")
        assert not err and text.startswith("No paths match")
    else:
        text, err = await call(t, pattern="x", include=["[]a]b"])
        assert not err and text.startswith("2 matches in 2 files")
        text, err = await call(t, pattern="x", include=["a[/]b"])
        assert not err and text.startswith("No matches")


# --- bash: processes that must not outlive the call (issue 9 item 18, issue 10 item 8) ---------------


async def test_aclose_and_cancel_during_spawn_kill_the_child_under_cpu_load(ws: Path) -> None:
    tag = f"29.{os.getpid() % 10000:04d}"
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    stuck = []
    try:
        bash = create_builtin("bash", {"workDir": str(ws)})
        for i in range(40):
            task = asyncio.create_task(call(bash, command=f"sleep {tag}{i:02d}"))
            for _ in range(1 + i % 7):  # land at different points of the spawn
                await asyncio.sleep(0)
            if i % 2:
                task.cancel()
            else:
                await bash.aclose()
            try:
                await asyncio.wait_for(task, 10)
            except asyncio.CancelledError:
                pass
            except TimeoutError:
                stuck.append(i)  # the command outlived aclose() and ran on
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert stuck == []
    await wait_until(lambda: not processes_with(f"sleep\x00{tag}"), "no sleep of the test to survive")


async def test_jobs_under_set_m_are_killed_with_the_call(ws: Path) -> None:
    bash = create_builtin("bash", {"workDir": str(ws)})
    text, err = await call(bash, command="set -m; sleep 30 & echo $!")
    assert not err and "exit code: 0" in text
    pid = int(text.split("stdout:\n", 1)[1].split()[0])
    await wait_until(lambda: not alive(pid), f"job {pid} started under set -m to die")


# --- hard links (issue 10 item 8) --------------------------------------------------------------------


async def test_hard_links_to_outside_are_refused_by_read_and_grep(ws: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=hunter2\n")
    os.link(secret, ws / "innocent.txt")  # anyone who can write the workspace can do this
    text, err = await call(create_builtin("read", {"workDir": str(ws)}), path="innocent.txt")
    assert err and "hard links" in text and "hunter2" not in text
    text, err = await call(create_builtin("grep", {"workDir": str(ws)}), pattern="TOKEN")
    assert not err and "hunter2" not in text and "1 hard-linked file skipped" in text
