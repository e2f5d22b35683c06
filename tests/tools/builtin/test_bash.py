from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

from chainreact.config import ToolDescriptor
from chainreact.tools.registry import create_builtin

from .conftest import call

WAIT_LIMIT = 20.0  # generous bound for eventual states; not a timing assertion


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (a killed orphan may await reaping by init)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_until(predicate, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_LIMIT
    while not predicate():
        if loop.time() > deadline:
            pytest.fail(f"gave up waiting: {what}")
        await asyncio.sleep(0.02)


def section(text: str, name: str) -> str:
    m = re.search(rf"^{name}:\n(.*?)(?=^\w+:|\Z)", text, re.S | re.M)
    return m.group(1).rstrip("\n") if m else ""


async def test_exit_code_and_separate_streams(make) -> None:
    text, err = await call(make("bash"), command="echo out; echo err >&2; exit 3")
    assert not err
    assert text.startswith("exit code: 3\nduration: ")
    assert section(text, "stdout") == "out" and section(text, "stderr") == "err"
    text, _ = await call(make("bash"), command="true")
    assert "stdout: (empty)" in text and "stderr: (empty)" in text


async def test_killed_by_signal_is_reported(make) -> None:
    text, _ = await call(make("bash"), command="kill -9 $$")
    assert "exit code: 137 (killed by SIGKILL)" in text


async def test_ansi_codes_are_stripped(make) -> None:
    cmd = r"printf '\033[1;31mred\033[0m \033]0;title\007ok\n50%%\r100%%\n'"
    text, _ = await call(make("bash"), command=cmd)
    assert section(text, "stdout") == "red ok\n100%"


async def test_output_is_capped_with_marker(make) -> None:
    text, _ = await call(make("bash", maxOutput=1000), command="seq 1 100000")
    out = section(text, "stdout")
    full = "".join(f"{i}\n" for i in range(1, 100001))
    marker = re.search(r"\[\.\.\. output truncated: showing the first (\d+) and last (\d+) characters of "
                       r"(\d+) bytes \((\d+) lines\) \.\.\.\]", out)
    assert marker, out
    assert int(marker.group(3)) == len(full) and int(marker.group(4)) == 100000
    assert out.startswith("1\n2\n3\n") and out.endswith("99999\n100000")
    assert len(out) < 1000 + len(marker.group(0)) + 2


def sleepers(tag: str) -> list[int]:
    """Host pids of live `sleep TAG` processes (works for sandboxed ones, whose $! is a namespace pid)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if cmdline == f"sleep\x00{tag}\x00".encode() and alive(int(name)):
                found.append(int(name))
    return found


def unique_seconds() -> str:
    """A `sleep` duration no other test uses, to find the process again: 30.<counter><pid>."""
    unique_seconds.n += 1  # type: ignore[attr-defined]
    return f"30.{unique_seconds.n}{os.getpid()}"  # type: ignore[attr-defined]


unique_seconds.n = 0  # type: ignore[attr-defined]
MODES = ["off", "bwrap"]


async def test_timeout_kills_the_whole_process_group(make, sandbox_mode: str) -> None:
    tag = unique_seconds()
    text, err = await call(make("bash", timeout=1000, sandbox=sandbox_mode), command=f"sleep {tag} & wait")
    assert err and "timed out after 1 s" in text and "exit code: none (killed on timeout)" in text
    await wait_until(lambda: not sleepers(tag), f"sleep {tag} to die")


async def test_background_children_do_not_outlive_the_call(make, sandbox_mode: str) -> None:
    tag = unique_seconds()
    text, err = await call(make("bash", sandbox=sandbox_mode), command=f"sleep {tag} & echo started")
    assert not err and "exit code: 0" in text
    await wait_until(lambda: not sleepers(tag), f"background sleep {tag} to die")


async def test_cancellation_and_aclose_kill_the_group(ws: Path, make, sandbox_mode: str) -> None:
    bash = make("bash", sandbox=sandbox_mode)
    tag = unique_seconds()
    task = asyncio.create_task(call(bash, command=f"sleep {tag} & wait"))
    await wait_until(lambda: sleepers(tag), "the child to start")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_until(lambda: not sleepers(tag), f"child {tag} of a cancelled call to die")

    tag = unique_seconds()
    task = asyncio.create_task(call(bash, command=f"sleep {tag} & wait"))
    await wait_until(lambda: sleepers(tag), "the child to start")
    await bash.aclose()
    text, _ = await task
    assert "killed by SIGKILL" in text
    await wait_until(lambda: not sleepers(tag), f"child {tag} to die on aclose")


async def test_environment_cwd_and_stdin(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAINREACT_TEST_SECRET", "s3cret")
    bash = make("bash", env={"MY_VAR": "hello"})
    text, _ = await call(bash, command="pwd; env")
    lines = section(text, "stdout").splitlines()
    assert lines[0] == str(ws.resolve())
    env = dict(line.split("=", 1) for line in lines[1:] if "=" in line)
    assert env["HOME"] == str(ws.resolve()) and env["TERM"] == "dumb" and env["MY_VAR"] == "hello"
    assert "CHAINREACT_TEST_SECRET" not in env and "s3cret" not in text
    text, _ = await call(bash, command="cat; echo done")  # stdin is /dev/null: cat ends at once
    assert section(text, "stdout") == "done"


async def test_refused_commands_do_not_run(ws: Path, make) -> None:
    text, err = await call(make("bash"), command="touch made && sudo ls")
    assert err and text.startswith("Error: command refused by policy: 'sudo' is not allowed")
    assert "Nothing was run" in text and not (ws / "made").exists()
    text, err = await call(make("bash", allow=["echo", "touch"]), command="touch ok && ls")
    assert err and "not on the allow list" in text and not (ws / "ok").exists()
    text, err = await call(make("bash", allow=["touch"]), command="touch ok")
    assert not err and (ws / "ok").exists()


async def test_timeouts_from_config_descriptor_and_call(ws: Path, make) -> None:
    d = ToolDescriptor(name="bash", timeout=1500, config={"workDir": str(ws)})
    bash = create_builtin("bash", d.config, d)
    text, err = await call(bash, command="sleep 10", timeout=999)  # a call cannot exceed the configured limit
    assert err and "timed out after 1.5 s" in text
    text, err = await call(make("bash"), command="sleep 10", timeout=0.5)
    assert err and "timed out after 0.5 s" in text
    text, err = await call(make("bash"), command="echo x", timeout=-1)
    assert err and "timeout must be a positive number" in text
