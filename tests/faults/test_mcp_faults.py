"""Fault suite, MCP servers: what a misbehaving stdio server does to the session (issue 10 item 7).

A hand-rolled stdio server (no SDK, so it can write any bytes) misbehaves on request: invalid UTF-8 on
stdout (inside and outside a response), non-JSON noise, hanging without reading, dying mid-call. Each case
checks what the user sees: later calls answer at once, the SDK's tracebacks stay off the terminal, a call
that may have run is not sent twice unless the tool opts in.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from chainreact.errors import ToolError
from chainreact.tools.mcp import MCPServer

pytestmark = pytest.mark.mcp

RAW_SERVER = textwrap.dedent('''
    import json, os, sys, time
    out = sys.stdout.buffer
    calls = sys.argv[1]

    def send(obj):
        out.write(json.dumps(obj).encode() + b"\\n")
        out.flush()

    names = ("ping", "garble", "garble_reply", "noise", "hang", "die", "write")
    tools = [{"name": n, "description": n, "inputSchema": {"type": "object"}} for n in names]
    tools.append({"name": "lookup", "description": "read only", "inputSchema": {"type": "object"},
                  "annotations": {"readOnlyHint": True}})
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools}})
        elif method == "tools/call":
            name = msg["params"]["name"]
            n = (msg["params"].get("arguments") or {}).get("n", 1)
            with open(calls, "a") as f:
                f.write(f"{os.getpid()} {name}\\n")
            if name == "garble":
                out.write(b"\\xff\\xfe\\xfd not even text\\n")
            elif name == "garble_reply":
                out.write(b'{"jsonrpc": "2.0", "id": %d, "result": {"content": '
                          b'[{"type": "text", "text": "caf\\xe9 \\xff!"}]}}\\n' % mid)
                out.flush()
                continue
            elif name == "noise":
                out.write(b"Traceback (most recent call last): not json\\n" * n)
            elif name == "hang":
                time.sleep(3600)  # stops reading and answering: pings too
            elif name in ("die", "write", "lookup") and n == 0:
                os._exit(3)  # dies after receiving the call, before answering
            out.flush()
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": name}]}})
        elif mid is not None:
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
''')


@pytest.fixture
def raw(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    script = tmp_path / "raw_server.py"
    script.write_text(RAW_SERVER)
    calls = tmp_path / "calls.log"
    desc = {"type": "mcp", "name": "raw",
            "config": {"command": sys.executable, "args": [str(script), str(calls)], "listTimeout": 60}}
    return desc, calls


def calls_of(log: Path) -> list[tuple[int, str]]:
    if not log.exists():
        return []
    return [(int(p), n) for p, n in (line.split() for line in log.read_text().splitlines())]


async def test_invalid_utf8_outside_a_response_does_not_wedge_the_session(raw: Any) -> None:
    desc, calls = raw
    desc["config"]["callTimeout"] = 30
    async with MCPServer.from_descriptor(desc) as server:
        assert await server.call_tool("garble") == "garble"
        t0 = time.monotonic()
        assert [await server.call_tool("ping") for _ in range(3)] == ["ping"] * 3
        assert time.monotonic() - t0 < 10  # answered, not waited out (the timeout is 30 s)
    assert len({pid for pid, _ in calls_of(calls)}) == 1  # one session throughout


async def test_invalid_utf8_inside_a_response_is_replaced(raw: Any) -> None:
    desc, _ = raw
    async with MCPServer.from_descriptor(desc) as server:
        assert await server.call_tool("garble_reply") == "caf\ufffd \ufffd!"
        assert await server.call_tool("ping") == "ping"


def test_noisy_server_prints_no_tracebacks(raw: Any, tmp_path: Path) -> None:
    """In a fresh interpreter without logging configured (what a CLI user has): 2,000 non-JSON lines on
    the server's stdout give one warning line on stderr, no traceback."""
    desc, _ = raw
    script = tmp_path / "noisy_client.py"
    script.write_text(textwrap.dedent(f'''
        import asyncio
        from chainreact.tools.mcp import MCPServer

        async def main():
            async with MCPServer.from_descriptor({desc!r}) as server:
                print(await server.call_tool("noise", {{"n": 2000}}))
                print(await server.call_tool("ping"))

        asyncio.run(main())
    '''))
    src = Path(__file__).resolve().parents[2] / "src"
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["noise", "ping"]
    assert "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "Failed to parse JSONRPC message from server" in lines[0], lines


async def test_sdk_records_go_to_the_chainreact_logger_once(raw: Any,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    desc, _ = raw
    with caplog.at_level(logging.DEBUG, logger="chainreact.tools.mcp"):
        async with MCPServer.from_descriptor(desc) as server:
            assert await server.call_tool("noise", {"n": 50}) == "noise"
            assert await server.call_tool("noise", {"n": 50}) == "noise"
    ours = [r for r in caplog.records if r.name == "chainreact.tools.mcp" and "MCP SDK" in r.getMessage()]
    warned = [r for r in ours if r.levelno == logging.WARNING]
    assert len(warned) <= 1  # once per process: an earlier test may have had the first one
    assert sum("Failed to parse JSONRPC" in r.getMessage() for r in ours) == 100
    # Nothing reaches the root logger (the terminal) from the SDK's loggers. (pytest's capture handler
    # attaches itself to non-propagating loggers too, so caplog still sees them.)
    assert logging.getLogger("mcp").propagate is False


async def test_a_server_that_stops_answering_is_dropped_and_later_calls_reconnect(raw: Any) -> None:
    desc, calls = raw
    desc["config"]["callTimeout"] = 1
    desc["config"]["listTimeout"] = 30
    async with MCPServer.from_descriptor(desc) as server:
        assert await server.call_tool("ping") == "ping"
        with pytest.raises(ToolError, match="did not answer within 1 s"):
            await server.call_tool("hang")
        t0 = time.monotonic()
        assert await server.call_tool("ping") == "ping"  # a new session, not another 1 s wait
        assert time.monotonic() - t0 < 30
        pids = [pid for pid, _ in calls_of(calls)]
    assert len(set(pids)) == 2 and pids[-1] != pids[0]


async def test_a_call_lost_after_it_was_sent_is_not_sent_again(raw: Any) -> None:
    desc, calls = raw
    async with MCPServer.from_descriptor(desc) as server:
        with pytest.raises(ToolError, match=r"may or may not have run, so it was not sent again.*"
                                            r"retryNonIdempotent"):
            await server.call_tool("write", {"n": 0})
        assert [n for _, n in calls_of(calls)] == ["write"]  # exactly once
        assert await server.call_tool("ping") == "ping"  # the next call reconnects


@pytest.mark.parametrize(("opt_in", "tool"), [(["die"], "die"), (True, "die"), (False, "lookup")])
async def test_opted_in_or_idempotent_tools_are_sent_again(raw: Any, opt_in: Any, tool: str) -> None:
    desc, calls = raw
    desc["config"]["retryNonIdempotent"] = opt_in
    async with MCPServer.from_descriptor(desc) as server:
        await server.list_tools()  # the annotations (readOnlyHint) come with the listing
        with pytest.raises(ToolError, match="again after re-initialising"):
            await server.call_tool(tool, {"n": 0})
    assert [n for _, n in calls_of(calls)] == [tool, tool]  # sent once more, on a new session


async def test_a_session_lost_before_the_call_was_sent_is_retried(raw: Any) -> None:
    desc, calls = raw
    async with MCPServer.from_descriptor(desc) as server:
        assert await server.call_tool("ping") == "ping"
        [(pid, _)] = calls_of(calls)
        subprocess.run(["kill", "-9", str(pid)], check=True)
        backend: Any = server._backend
        for _ in range(500):  # wait until the session has noticed (ordering, not timing)
            if backend._owner is None or backend._owner.closed:
                break
            await asyncio.sleep(0.01)
        assert await server.call_tool("write") == "write"  # never sent to the dead one: safe to send
    assert [n for _, n in calls_of(calls)] == ["ping", "write"]
