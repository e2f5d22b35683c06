"""Fault cases of issue 23 for the restApiCall node against a misbehaving loopback server: a body
trickled a byte at a time and an endless event stream held the chain forever; a 300 MB body grew the
process by 893 MB and a 300 KB gzip bomb by 935 MB. Each is now a Failure with a clear error, and the
process stays small (measured in a child process). Each test failed (or hung) before the fix."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from chainreact.chains import RuleEngine, RuleMsg

SRC = Path(__file__).resolve().parents[2] / "src"
LIMIT = 30.0  # seconds a case may take before it counts as hung; the fixed code needs a few

SERVER = r'''
import asyncio, gzip, zlib

_bombs = {}

def bomb(mb):
    if mb not in _bombs:  # made once: compressing 300 MB takes seconds of CPU
        z = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
        zero = b"\0" * (1 << 20)
        _bombs[mb] = b"".join([*(z.compress(zero) for _ in range(mb)), z.flush()])
    return _bombs[mb]

DRIPS = {"/trickle": (b"Content-Length: 1000000", b"x", 0.2),
         "/sse": (b"Content-Type: text/event-stream", b"data: tick\n\n", 0.1)}

async def handle(reader, writer):
    head = await reader.readuntil(b"\r\n\r\n")
    path = head.split(b" ", 2)[1].decode()
    lines = head.lower().split(b"\r\n")
    length = int(next((h.split(b":")[1] for h in lines if h.startswith(b"content-length")), 0))
    if length:
        await reader.readexactly(length)
    try:
        if path in DRIPS:  # never ends: a body a byte at a time, an event stream
            head, piece, pause = DRIPS[path]
            writer.write(b"HTTP/1.1 200 OK\r\n" + head + b"\r\n\r\n")
            while True:
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(pause)
        elif path.startswith("/big/"):
            mb = int(path.rsplit("/", 1)[1])
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (mb << 20))
            block = b"y" * (1 << 20)
            for _ in range(mb):
                writer.write(block)
                await writer.drain()
        elif path.startswith("/bomb/"):
            body = bomb(int(path.rsplit("/", 1)[1]))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n")
            writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        elif path == "/gzip-ok":
            body = gzip.compress(b'{"ok": true}')
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n")
            writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()
'''


@pytest.fixture
async def server() -> AsyncIterator[str]:
    scope: dict[str, Any] = {}
    exec(SERVER, scope)
    srv = await asyncio.start_server(scope["handle"], "127.0.0.1", 0)
    yield f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
    srv.close()


def node(url: str, **config: Any) -> dict[str, Any]:
    return {"ruleChain": {"id": "c"}, "metadata": {"nodes": [
        {"id": "n", "type": "restApiCall", "configuration": {"restEndpointUrlPattern": url, **config}}]}}


async def run(engine: RuleEngine) -> list[Any]:
    try:
        return await asyncio.wait_for(engine.run("c", RuleMsg(type="T", data="{}")), LIMIT)
    except TimeoutError:
        pytest.fail(f"the chain was still waiting after {LIMIT:g} s (hung)")


async def test_a_trickled_body_fails_at_the_deadline(server: str) -> None:
    engine = RuleEngine()
    engine.load(node(server + "/trickle", readTimeoutMs=1000))
    ends = await run(engine)
    assert [e.relation for e in ends] == ["Failure"]
    assert "no complete response from" in ends[0].error and "within 1000 ms (readTimeoutMs" in ends[0].error
    assert ends[0].msg.metadata["errorBody"] == ends[0].error


async def test_an_endless_event_stream_ends_at_max_duration(server: str) -> None:
    engine = RuleEngine()
    engine.load(node(server + "/sse", readTimeoutMs=10_000, maxDurationMs=1500,
                     headers={"Accept": "text/event-stream"}))
    ends = await run(engine)
    assert {e.relation for e in ends} == {"Success", "Failure"}
    assert all(e.msg.data == "tick" for e in ends if e.relation == "Success")
    failure = next(e for e in ends if e.relation == "Failure")
    assert "event stream of" in failure.error and "still open after 1500 ms (maxDurationMs)" in failure.error


async def test_sizes_in_and_under_the_caps(server: str) -> None:
    engine = RuleEngine()
    slow_ok = {"requestMethod": "GET", "readTimeoutMs": 30_000}  # a loaded machine: the caps must end these
    engine.load(node(server + "/big/3", maxResponseBytes=2 << 20, **slow_ok))
    ends = await run(engine)
    assert [e.relation for e in ends] == ["Failure"]
    assert "exceeds 2097152 bytes (maxResponseBytes)" in ends[0].error
    engine.load(node(server + "/bomb/8", maxResponseBytes=2 << 20, **slow_ok))
    ends = await run(engine)
    assert "exceeds 2097152 bytes after decompression (Content-Encoding: gzip)" in ends[0].error
    engine.load(node(server + "/gzip-ok", **slow_ok))
    ends = await run(engine)
    assert [e.relation for e in ends] == ["Success"] and json.loads(ends[0].msg.data) == {"ok": True}
    engine.load(node(server + "/big/3", **slow_ok))  # the default cap, 16 MiB
    ends = await run(engine)
    assert [e.relation for e in ends] == ["Success"] and len(ends[0].msg.data) == 3 << 20


def test_a_huge_body_and_a_gzip_bomb_leave_the_process_small() -> None:
    code = SERVER + textwrap.dedent("""
        import json, resource
        from chainreact.chains import RuleEngine, RuleMsg

        async def main():
            bomb(300)  # before anything is measured or timed
            srv = await asyncio.start_server(handle, "127.0.0.1", 0)
            url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
            engine = RuleEngine()
            out = {}
            for case in ("big/300", "bomb/300"):
                config = {"restEndpointUrlPattern": f"{url}/{case}", "requestMethod": "GET",
                          "readTimeoutMs": 120000}  # a loaded machine: the cap, not the clock, must end it
                engine.load({"ruleChain": {"id": "c"}, "metadata": {"nodes": [
                    {"id": "n", "type": "restApiCall", "configuration": config}]}})
                before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                ends = await engine.run("c", RuleMsg(type="T", data=""))
                grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
                out[case] = {"relation": ends[0].relation, "error": ends[0].error, "grew_mib": grew}
            srv.close()
            print(json.dumps(out))

        asyncio.run(main())
    """)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail("the child did not finish")
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.splitlines()[-1])
    for case, r in out.items():
        assert r["relation"] == "Failure" and "exceeds 16777216 bytes" in r["error"], (case, r)
        # the bomb's own compressed body (~300 KB) and one 16 MiB cap's worth; before: +893 / +935 MiB
        assert r["grew_mib"] < 80, (case, r)
