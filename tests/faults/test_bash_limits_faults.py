"""Fault cases of issue 23 for the bash tool: a fork bomb as root, a /tmp filled to the brim, and code an
allow list cannot see. Each failed before its fix (the bomb ran until its timeout with 511 processes,
/tmp took 12 GB of memory, the hidden command ran)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from chainreact.tools.base import ToolContext, ToolOutput
from chainreact.tools.builtin import limits
from chainreact.tools.registry import create_builtin

from .test_builtin_faults import need_sandbox, processes_with

BOMB = "b() { b | b & }; b"  # written to a file: the policy sees `bash bomb.sh`, not the recursion


async def call(tool: Any, **args: Any) -> tuple[str, bool]:
    result = await tool.run(args, ToolContext())
    if isinstance(result, ToolOutput):
        return result.content, result.is_error
    return result, False


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.mark.parametrize("sandbox", ["bwrap", "off"])
async def test_a_fork_bomb_stops_at_the_process_limit(ws: Path, sandbox: str) -> None:
    need_sandbox(sandbox)
    if limits.cgroup_base() is None and sandbox == "off":
        pytest.skip("no pids cgroup here: an exponential bomb outside the sandbox would outrun the watchdog")
    (ws / "bomb.sh").write_text(BOMB + "\n")
    bash = create_builtin("bash", {"workDir": str(ws), "sandbox": sandbox, "maxProcesses": 64,
                                   "timeout": 20_000})
    text, err = await call(bash, command=f"bash bomb.sh; sleep 60 # {os.getpid()}-bomb")
    assert err and "reached its limit of 64 processes (maxProcesses) and was killed" in text, text
    assert "timed out" not in text
    assert not processes_with("bomb.sh")


async def test_without_a_cgroup_the_watchdog_counts_and_kills(ws: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "_base", [None])  # as on a machine without a usable pids controller
    bash = create_builtin("bash", {"workDir": str(ws), "sandbox": "off", "maxProcesses": 40,
                                   "timeout": 20_000})
    tag = f"{os.getpid()}.77"
    text, err = await call(bash, command=f"while :; do sleep {tag} & done")
    assert err and "reached its limit of 40 processes" in text, text
    await asyncio.sleep(0.2)
    assert not processes_with(f"sleep\x00{tag}")


async def test_a_call_under_the_limit_is_untouched(ws: Path) -> None:
    bash = create_builtin("bash", {"workDir": str(ws), "maxProcesses": 64})
    text, err = await call(bash, command="for i in 1 2 3 4 5 6 7 8; do sleep 0.3 & done; wait; echo done")
    assert not err and "done" in text and "limit" not in text


async def test_the_sandbox_tmp_is_bounded(ws: Path) -> None:
    need_sandbox("bwrap")
    bash = create_builtin("bash", {"workDir": str(ws), "sandbox": "bwrap", "maxTmpSize": 1 << 20})
    text, _ = await call(bash, command="head -c 3000000 /dev/zero > /tmp/fill; stat -c %s /tmp/fill")
    assert "No space left on device" in text and "1048576" in text
    text, _ = await call(create_builtin("bash", {"workDir": str(ws), "sandbox": "bwrap"}),
                         command="df -k --output=size /tmp | tail -1")
    assert int(text.split("stdout:\n")[1].split()[0]) == 512 * 1024  # the default, 512 MiB


@pytest.mark.parametrize("command", [
    "echo ${x@P}", "echo $((x))", "echo ${a[x]}", "[[ $x -eq 0 ]]", "echo ${!n}", "printf -v \"$n\" q",
])
async def test_an_allow_list_refuses_code_it_cannot_see(ws: Path, command: str) -> None:
    bash = create_builtin("bash", {"workDir": str(ws), "sandbox": "off", "allow": ["echo", "printf"]})
    # `$(` hidden in an ANSI-C escape: only bash's evaluation of the value would run `touch`.
    hide = f"x=$'a[\\x24(touch {ws}/PWNED)]'; n=$x; "
    if "@P" in command:
        hide = f"x=$'\\x24(touch {ws}/PWNED)'; "
    text, err = await call(bash, command=hide + command)
    assert err and "refused by policy" in text, text
    assert not (ws / "PWNED").exists()
