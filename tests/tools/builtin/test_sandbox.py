"""The bash builtin's OS sandbox (bubblewrap): configuration, the notice when it is missing, and what a
command sees inside. The escape corpus lives in tests/faults/test_builtin_faults.py."""

from __future__ import annotations

import asyncio
import os
import warnings
from pathlib import Path

import pytest

from chainreact.errors import ConfigError
from chainreact.tools.builtin import sandbox as sandbox_mod
from chainreact.tools.registry import create_builtin

from .conftest import call
from .test_bash import section


@pytest.fixture
def bwrap_only(sandbox_mode: str) -> None:
    # Tests that use this are parametrized with the bwrap variant only (ONLY_BWRAP): nothing to skip.
    assert sandbox_mode == "bwrap"


ONLY_BWRAP = pytest.mark.parametrize("sandbox_mode", ["bwrap"], indirect=True)


def test_auto_without_bwrap_warns_once_and_runs_unsandboxed(ws: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_mod, "find_bwrap", lambda: None)
    monkeypatch.setattr(sandbox_mod, "_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = create_builtin("bash", {"workDir": str(ws)})
        second = create_builtin("bash", {"workDir": str(ws), "sandbox": "auto"})
    notices = [w for w in caught if issubclass(w.category, sandbox_mod.SandboxUnavailableWarning)]
    assert len(notices) == 1
    assert "WITHOUT an OS sandbox: bubblewrap (bwrap) is not installed" in str(notices[0].message)
    assert first.sandbox is None and second.sandbox is None  # type: ignore[attr-defined]


def test_off_is_silent_and_bwrap_without_bwrap_is_a_config_error(ws: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_mod, "find_bwrap", lambda: None)
    monkeypatch.setattr(sandbox_mod, "_warned", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        off = create_builtin("bash", {"workDir": str(ws), "sandbox": "off"})
    assert off.sandbox is None  # type: ignore[attr-defined]
    with pytest.raises(ConfigError) as info:
        create_builtin("bash", {"workDir": str(ws), "sandbox": "bwrap"})
    assert "tools.bash.config.sandbox" in str(info.value) and "not installed" in str(info.value)
    with pytest.raises(ConfigError, match=r"tools\.bash\.config\.sandbox: Input should be 'auto', 'bwrap'"):
        create_builtin("bash", {"workDir": str(ws), "sandbox": "on"})


@ONLY_BWRAP
async def test_inside_the_sandbox(ws: Path, tmp_path: Path, bwrap_only: None) -> None:
    (tmp_path / "visible").mkdir()
    (tmp_path / "visible" / "data.txt").write_text("shared data\n")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "hidden.txt").write_text("beside the workspace\n")
    bash = create_builtin("bash", {"workDir": str(ws), "sandbox": "bwrap",
                                   "readOnlyPaths": [str(tmp_path / "visible")],
                                   "writablePaths": [str(tmp_path / "scratch")]})
    text, _ = await call(bash, command=(
        f"echo pid=$$; ls /proc | grep -c '^[0-9]'; cat {tmp_path}/hidden.txt 2>&1 | wc -l; "
        "test -e /root/.bashrc -o -e /root/.profile -o -e /home && echo home-visible || echo home-hidden; "
        f"cat {tmp_path}/visible/data.txt; touch {tmp_path}/visible/x 2>&1 | head -1; "
        f"echo w > {tmp_path}/scratch/ok && echo scratch-ok; echo ws > inside.txt; hostname"))
    out = text.split("stdout:\n", 1)[1].rsplit("\nstderr:", 1)[0].splitlines()
    assert out[0] in ("pid=1", "pid=2")  # own PID namespace
    assert int(out[1]) <= 6  # bwrap's init, bash, ls, grep: nothing else of the machine
    assert out[2] == "1" and "beside the workspace" not in text  # /tmp is private: only the binds
    assert out[3] == "home-hidden"
    assert out[4] == "shared data"
    assert f"{tmp_path}/visible/x': Read-only file system" in text
    out = [line for line in out if not line.startswith("touch:")]
    assert "scratch-ok" in out and (tmp_path / "scratch" / "ok").read_text() == "w\n"
    assert (ws / "inside.txt").read_text() == "ws\n" and out[-1] == "chainreact-sandbox"


@ONLY_BWRAP
async def test_network_is_off_unless_allowed(ws: Path, bwrap_only: None) -> None:
    hits = 0

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal hits
        hits += 1
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    probe = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
    try:
        closed = create_builtin("bash", {"workDir": str(ws), "sandbox": "bwrap"})
        text, _ = await call(closed, command=probe)
        assert "connected" not in section(text, "stdout") and hits == 0
        open_ = create_builtin("bash", {"workDir": str(ws), "sandbox": "bwrap", "network": True})
        text, _ = await call(open_, command=probe)
        assert section(text, "stdout") == "connected"
        for _ in range(100):
            if hits:
                break
            await asyncio.sleep(0.02)
        assert hits == 1
    finally:
        server.close()
        await server.wait_closed()


async def test_environment_is_the_scrubbed_one(ws: Path, monkeypatch: pytest.MonkeyPatch,
                                               sandbox_mode: str) -> None:
    monkeypatch.setenv("CHAINREACT_TEST_SECRET", "s3cret")
    bash = create_builtin("bash", {"workDir": str(ws), "sandbox": sandbox_mode, "env": {"MY_VAR": "x"}})
    text, _ = await call(bash, command="env | cut -d= -f1 | sort | tr '\\n' ' '")
    names = set(section(text, "stdout").split())
    assert names <= {"PATH", "HOME", "PWD", "LANG", "TERM", "NO_COLOR", "MY_VAR", "SHLVL", "_", "OLDPWD"}
    assert "MY_VAR" in names and os.environ["CHAINREACT_TEST_SECRET"] not in text


def test_path_entries_that_would_expose_too_much_are_not_bound(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    dirs = ["/", "/root", "/usr/local/bin", "relative/bin", str(tmp_path / "bin"), str(tmp_path / "none")]
    assert sandbox_mod._outside_system(dirs) == [str((tmp_path / "bin").resolve())]
