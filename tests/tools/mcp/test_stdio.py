"""Real MCP servers over stdio: mcp-server-time, mcp-server-git (PyPI), server-filesystem and
server-everything (npm), plus an in-test crashing server for session loss."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys

import pytest

from chainreact.errors import ToolError
from chainreact.tools.base import ToolContext, ToolOutput
from chainreact.tools.mcp import MCPServer, load_mcp_tools

from .mcp_testkit import SPAWN, alive, pids, time_descriptor

pytestmark = pytest.mark.mcp
CTX = ToolContext()


async def test_time_server_list_and_call():
    async with MCPServer.from_descriptor(time_descriptor()) as server:
        tools = {t.name: t for t in await server.list_tools()}
        assert {"get_current_time", "convert_time"} <= set(tools)
        assert tools["convert_time"].parameters["required"] == ["source_timezone", "time", "target_timezone"]
        out = await tools["convert_time"].run(
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}, CTX
        )
        assert isinstance(out, str)
        assert '"datetime": "' in out and "T21:00:00+09:00" in out  # Tokyo is UTC+9, no DST


async def test_server_error_result_is_an_error_output():
    async with MCPServer.from_descriptor(time_descriptor()) as server:
        out = await server.call_tool("get_current_time", {"timezone": "Nowhere/Atlantis"})
        assert isinstance(out, ToolOutput) and out.is_error
        assert out.content.startswith("Error: ") and "Nowhere/Atlantis" in out.content


async def test_git_server_list_and_call(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "a.txt").write_text("hello\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first commit"], check=True)
    (repo / "b.txt").write_text("untracked\n")

    desc = {
        "type": "mcp",
        "name": "git",
        "config": {"command": sys.executable, "args": ["-m", "mcp_server_git"], **SPAWN},
    }
    async with MCPServer.from_descriptor(desc) as server:
        tools = {t.name: t for t in await server.list_tools()}
        assert {"git_status", "git_log"} <= set(tools)
        status = await tools["git_status"].run({"repo_path": str(repo)}, CTX)
        assert isinstance(status, str) and "b.txt" in status
        log = await tools["git_log"].run({"repo_path": str(repo)}, CTX)
        assert isinstance(log, str) and "first commit" in log


async def test_filesystem_server_with_filters(filesystem_cmd, tmp_path):
    (tmp_path / "notes.txt").write_text("line one\nline two\n")
    base = {
        "type": "mcp",
        "name": "fs",
        "config": {"command": filesystem_cmd, "args": [str(tmp_path)], **SPAWN},
    }

    async with MCPServer.from_descriptor(base) as server:
        every = [t.name for t in await server.list_tools()]
        assert {"read_text_file", "write_file", "list_directory"} <= set(every)
        text = await server.call_tool("read_text_file", {"path": str(tmp_path / "notes.txt")})
        assert text == "line one\nline two\n"
        # outside the allowed directory: the server refuses with an error result
        denied = await server.call_tool("read_text_file", {"path": "/etc/hostname"})
        assert isinstance(denied, ToolOutput) and denied.is_error

    async def listed(**extra):
        d = {**base, **extra}
        async with MCPServer.from_descriptor(d) as s:
            return [t.name for t in await s.list_tools()]

    assert await listed(config={**base["config"], "tools": ["read_text_file", "list_directory"]}) == [
        "read_text_file",
        "list_directory",
    ]
    assert await listed(mcpClient={"toolFilter": {"type": "all"}}) == every
    assert await listed(mcpClient={"toolFilter": {"type": "include", "includedTools": ["write_file"]}}) == [
        "write_file"
    ]
    excluded = await listed(
        mcpClient={"toolFilter": {"type": "exclude", "excludedTools": ["write_file", "edit_file"]}}
    )
    assert excluded == [n for n in every if n not in ("write_file", "edit_file")]
    per_tool = await listed(
        mcpClient={"toolFilter": {"type": "expression", "expression": '.name | startswith("read_")'}}
    )
    assert per_tool == [n for n in every if n.startswith("read_")] and len(per_tool) >= 3
    list_form = await listed(
        mcpClient={
            "toolFilter": {"type": "expression", "expression": 'map(select(.name | endswith("directory")))'}
        }
    )
    assert list_form == [n for n in every if n.endswith("directory")] and "list_directory" in list_form


async def test_everything_server_image_placeholder_and_echo(everything_cmd):
    desc = {"type": "mcp", "config": {"command": everything_cmd, **SPAWN}}
    async with MCPServer.from_descriptor(desc) as server:
        assert server.name == "mcp-server-everything"
        tools = {t.name: t for t in await server.list_tools()}
        assert await tools["echo"].run({"message": "hi there"}, CTX) == "Echo: hi there"
        out = await tools["get-tiny-image"].run({}, CTX)
        assert isinstance(out, ToolOutput) and not out.is_error
        images = [p for p in out.data if p.get("type") == "image"]
        assert len(images) == 1
        import base64

        size = len(base64.b64decode(images[0]["data"]))
        assert f"[image: {images[0]['mimeType']}, {size} bytes]" in out.content
        structured = await tools["get-structured-content"].run({"location": "New York"}, CTX)
        assert isinstance(structured, str) and structured


async def test_killed_stdio_server_is_reinitialised_once(tmp_path):
    pidfile = tmp_path / "time.pids"
    async with MCPServer.from_descriptor(time_descriptor(pidfile=pidfile)) as server:
        tools = {t.name: t for t in await server.list_tools()}
        [first] = pids(pidfile)
        os.kill(first, signal.SIGKILL)
        while alive(first):
            await asyncio.sleep(0.01)
        out = await tools["get_current_time"].run({"timezone": "UTC"}, CTX)
        assert isinstance(out, str) and '"timezone": "UTC"' in out
        second = pids(pidfile)
        assert len(second) == 2 and second[1] != first and alive(second[1])
    assert not alive(second[1])  # aclose ended the new process too


async def test_server_dying_again_after_reinit_gives_tool_error(crashy):
    desc, pidfile = crashy
    desc["config"]["retryNonIdempotent"] = ["crash"]  # else a call lost after sending is not re-sent
    async with MCPServer.from_descriptor(desc) as server:
        assert await server.call_tool("ping") == "pong"
        with pytest.raises(ToolError, match=r"lost .* again after re-initialising"):
            await server.call_tool("crash")
        assert len(pids(pidfile)) == 2  # one re-initialisation, one retry, no more
        assert await server.call_tool("ping") == "pong"  # and the next call reconnects lazily
        assert len(pids(pidfile)) == 3


async def test_open_in_one_task_close_in_another_ends_the_process(tmp_path):
    pidfile = tmp_path / "time.pids"
    server = MCPServer.from_descriptor(time_descriptor(pidfile=pidfile))
    tools = await asyncio.create_task(server.list_tools())
    out = await asyncio.create_task(tools[0].run({"timezone": "UTC"}, CTX))
    assert "UTC" in str(out)
    [pid] = pids(pidfile)
    assert alive(pid)
    await asyncio.create_task(server.aclose())  # a different task than the one that connected
    assert not alive(pid)


async def test_closing_every_tool_closes_the_connection(tmp_path):
    pidfile = tmp_path / "time.pids"
    tools = await load_mcp_tools([time_descriptor(pidfile=pidfile)])
    [pid] = pids(pidfile)
    await tools[0].aclose()
    assert alive(pid)  # another tool still uses the session
    for t in tools[1:]:
        await t.aclose()
    assert not alive(pid)


async def test_call_timeout_cancels_the_call_and_keeps_the_session(crashy):
    desc, pidfile = crashy
    desc["config"]["callTimeout"] = 0.5
    async with MCPServer.from_descriptor(desc) as server:
        with pytest.raises(ToolError, match=r"did not answer within 0.5 s \(config.callTimeout\)"):
            await server.call_tool("sleep", {"seconds": 30})
        assert await server.call_tool("ping") == "pong"
        assert len(pids(pidfile)) == 1  # a timeout is not a session loss


async def test_caller_cancellation_does_not_break_the_session(crashy):
    desc, pidfile = crashy
    async with MCPServer.from_descriptor(desc) as server:
        task = asyncio.create_task(server.call_tool("sleep", {"seconds": 30}))
        await server.call_tool("ping")  # connected and serving concurrently
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await server.call_tool("ping") == "pong"
        assert len(pids(pidfile)) == 1


async def test_bad_command_is_a_tool_error_naming_it():
    desc = {"type": "mcp", "name": "ghost", "config": {"command": "/nonexistent/mcp-server-ghost"}}
    server = MCPServer.from_descriptor(desc)
    with pytest.raises(ToolError) as ei:
        await server.list_tools()
    msg = str(ei.value)
    assert "'ghost'" in msg and "/nonexistent/mcp-server-ghost" in msg and "config.command" in msg


async def test_server_exiting_at_start_reports_its_stderr(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text("import sys\nprint('fatal: missing API key FOO', file=sys.stderr)\nsys.exit(2)\n")
    server = MCPServer.from_descriptor(
        {"type": "mcp", "config": {"command": sys.executable, "args": [str(script)]}}
    )
    with pytest.raises(ToolError, match="fatal: missing API key FOO"):
        await server.list_tools()


async def test_concurrent_calls_share_one_session(crashy):
    desc, pidfile = crashy
    async with MCPServer.from_descriptor(desc) as server:
        results = await asyncio.gather(*(server.call_tool("sleep", {"seconds": 0.2}) for _ in range(8)))
        assert results == ["slept"] * 8
        assert len(pids(pidfile)) == 1


async def test_stderr_of_a_server_dying_mid_session_is_not_lost(tmp_path):
    script = tmp_path / "noisy.py"
    script.write_text(
        "import sys\n"
        "for i in range(3000):\n"
        "    print(f'noise line {i}', file=sys.stderr)\n"
        "print('last words', file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    server = MCPServer.from_descriptor(
        {"type": "mcp", "config": {"command": sys.executable, "args": [str(script)]}}
    )
    with pytest.raises(ToolError) as ei:
        await server.list_tools()
    assert "last words" in str(ei.value) and "noise line 2999" in str(ei.value)


async def test_aclose_during_a_call_fails_it_without_reconnecting(crashy):
    desc, pidfile = crashy
    server = MCPServer.from_descriptor(desc)
    assert await server.call_tool("ping") == "pong"
    call = asyncio.create_task(server.call_tool("sleep", {"seconds": 30}))
    await asyncio.sleep(0.3)  # let the request reach the server (ordering only, nothing is timed)
    await server.aclose()
    with pytest.raises(ToolError, match="was closed while calling tool 'sleep'"):
        await call
    [pid] = pids(pidfile)  # no re-initialisation after a deliberate close
    assert not alive(pid)


async def test_aclose_while_connecting_fails_the_waiting_call(tmp_path):
    pidfile = tmp_path / "time.pids"
    server = MCPServer.from_descriptor(time_descriptor(pidfile=pidfile))
    listing = asyncio.create_task(server.list_tools())
    while not pids(pidfile):  # the process has started; initialize is still pending
        await asyncio.sleep(0.01)
    await server.aclose()
    with pytest.raises(ToolError, match="was closed while connecting"):
        await listing
    assert not alive(pids(pidfile)[0])


async def test_rulego_server_command_line_and_client_info(crashy, tmp_path):
    """RuleGo's form: `server` is a command line (quotes group words); client_name/version are sent."""
    desc, pidfile = crashy
    script = desc["config"]["args"][0]
    wire = tmp_path / "wire.jsonl"
    line = f"sh -c 'tee {wire} | {sys.executable} {script} {pidfile}'"
    rulego = {"type": "mcp", "config": {"server": line, "tools": "*", "timeout": 90,
                                        "client_name": "RuleGo AI Agent", "client_version": "1.0.0"}}
    async with MCPServer.from_descriptor(rulego) as server:
        assert (server.config.command, server.config.args[0]) == ("sh", "-c")
        tools = {t.name: t for t in await server.list_tools()}
        assert {"ping", "crash", "sleep"} <= set(tools)
        assert await tools["ping"].run({}, CTX) == "pong"
    init = next(m for m in map(json.loads, wire.read_text().splitlines()) if m.get("method") == "initialize")
    assert init["params"]["clientInfo"] == {"name": "RuleGo AI Agent", "version": "1.0.0"}
