"""Load: 1,000 concurrent streaming chat requests against a real `chainreact serve` process.

Each request carries a unique token. The scripted model (FakeLLM, in this process) reads the token from the
conversation it is sent, asks for two tool calls with it, then streams a text that quotes the token and
what the tool returned for it. So a stream whose text is not exactly its own request's answer means the
server (or the agent under it) mixed up or lost conversations. The first model call of every run waits
until all 1,000 runs have made theirs, which proves they are in flight at the same time (none queued
behind another) before any finishes. Loopback only; the test starts and stops every process itself.
"""

from __future__ import annotations

import asyncio
import json
import re
import resource
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from chainreact.testing import FakeLLM

RUNS = 1000
STEPS = 2  # tool calls per run before the final text: STEPS + 1 model calls per run
CHUNKS = 8  # text chunks the model streams
TOKEN = re.compile(r"tok-[0-9a-f]{16}")
TOOLS_PY = '''
def stamp(token: str, step: int) -> str:
    """Return the token stamped with the step."""
    return f"{token}#{step}"
'''


def expected_answer(token: str) -> str:
    return f"answer for {token}; tools said " + ",".join(f"{token}#{k}" for k in range(STEPS))


class Model:
    """The scripted model: stateless per request (everything comes from the conversation it is sent)."""

    def __init__(self, runs: int) -> None:
        self.runs = runs
        self.first_calls = 0
        self.calls = 0
        self.problems: list[str] = []
        self.all_in: asyncio.Event | None = None  # created on the FakeLLM's loop

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1  # the FakeLLM's loop runs one responder step at a time: no lock needed
        msgs = body.get("messages") or []
        users = [m.get("content") or "" for m in msgs if m.get("role") == "user"]
        found = TOKEN.findall(" ".join(str(u) for u in users))
        if len(found) != 1:
            self.problems.append(f"a model request with {len(found)} tokens in its user messages: {users!r}")
            return {"text": "no token"}
        token = found[0]
        results = [str(m.get("content")) for m in msgs if m.get("role") == "tool"]
        if not results:
            await self._wait_for_all()
        k = len(results)
        if k < STEPS:
            call = {"id": f"call_{k}", "name": "stamp", "arguments": {"token": token, "step": k}}
            return {"tool_calls": [call]}
        return {"text": f"answer for {token}; tools said " + ",".join(results), "chunks": CHUNKS}

    async def _wait_for_all(self) -> None:
        if self.all_in is None:
            self.all_in = asyncio.Event()
        self.first_calls += 1
        if self.first_calls >= self.runs:
            self.all_in.set()
        try:
            # Generous: on a loaded shared machine 1,000 runs take a while to all get going.
            await asyncio.wait_for(self.all_in.wait(), 180)
        except TimeoutError:
            self.problems.append(f"only {self.first_calls} of {self.runs} runs were in flight at once")
            self.all_in.set()


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _raise_fd_limit(need: int) -> None:
    # This process holds the clients' sockets and the fake model's; `chainreact serve` inherits the limit
    # and holds as many again.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert soft == resource.RLIM_INFINITY or soft >= need, (
        f"RLIMIT_NOFILE hard limit {hard} is below the {need} descriptors this test needs")


def _serve(folder: Path, url: str) -> tuple[subprocess.Popen[str], str]:
    port = _port()
    proc = subprocess.Popen([sys.executable, "-m", "chainreact", "serve", str(folder), "--port", str(port),
                             "--global", f"url={url}"], stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(base + "/readyz", timeout=1).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"chainreact serve did not come up: {proc.communicate()[1][-2000:]}")
        time.sleep(0.1)


async def _one(client: httpx.AsyncClient, token: str) -> tuple[str, list[Any], str]:
    body = {"model": "loadbot", "stream": True,
            "messages": [{"role": "user", "content": f"Stamp {token} twice, then answer."}]}
    async with client.stream("POST", "/v1/chat/completions", json=body) as r:
        raw = (await r.aread()).decode()
        if r.status_code != 200:
            return token, [], f"HTTP {r.status_code}: {raw[:300]}"
    events: list[Any] = []
    for block in raw.split("\n\n"):
        if block.startswith("data: "):
            payload = block[6:]
            events.append(payload if payload == "[DONE]" else orjson.loads(payload))
        elif block.strip():
            return token, events, f"not an SSE data block: {block[:200]!r}"
    return token, events, ""


async def _fire(base: str, tokens: list[str]) -> list[tuple[str, list[Any], str]]:
    limits = httpx.Limits(max_connections=len(tokens), max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=httpx.Timeout(300)) as client:
        return await asyncio.gather(*(_one(client, t) for t in tokens))


def _check(token: str, events: list[Any], problem: str) -> str:
    """Why this stream is wrong ("" when it is its own request's complete answer)."""
    if problem:
        return problem
    if not events or events[-1] != "[DONE]":
        return f"does not end with [DONE]: {events[-2:]!r}"
    chunks = events[:-1]
    errors = [c for c in chunks if "error" in c]
    if errors:
        return f"stream error: {errors[0]!r}"
    if len({c["id"] for c in chunks}) != 1:
        return "chunks of more than one completion id"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    if text != expected_answer(token):
        return f"text {text!r} is not this request's answer {expected_answer(token)!r}"
    if chunks[-1]["choices"][0]["finish_reason"] != "stop":
        return f"last chunk before [DONE] is not the stop chunk: {chunks[-1]!r}"
    return ""


@pytest.mark.slow
def test_a_thousand_concurrent_streams_all_complete_unmixed(tmp_path: Path) -> None:
    _raise_fd_limit(4 * RUNS + 512)
    (tmp_path / "loadtools.py").write_text(TOOLS_PY)
    doc = {"id": "loadbot", "type": "ai/agent", "name": "loadbot",
           "configuration": {"url": "${global.url}", "key": "unused", "model": "fake-model", "maxRetries": -1,
                             "systemPrompt": "You stamp tokens.",
                             "tools": [{"type": "python", "name": "stamp", "description": "Stamp a token.",
                                        "config": {"function": "loadtools:stamp"}}]}}
    (tmp_path / "loadbot.json").write_text(json.dumps(doc))
    model = Model(RUNS)
    tokens = [f"tok-{secrets.token_hex(8)}" for _ in range(RUNS)]
    with FakeLLM(model, record=False, backlog=4096) as llm:
        proc, base = _serve(tmp_path, llm.url)
        try:
            t0 = time.perf_counter()
            results = asyncio.run(_fire(base, tokens))
            elapsed = time.perf_counter() - t0
            # The server still answers after the burst.
            assert httpx.get(base + "/readyz", timeout=10).status_code == 200
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
    assert model.problems == [], model.problems[:5]
    bad = [(t, why) for t, events, p in results if (why := _check(t, events, p))]
    assert not bad, f"{len(bad)} of {RUNS} streams wrong, e.g. {bad[:3]}"
    assert sorted(t for t, _, _ in results) == sorted(tokens)  # one answer per request, none lost
    assert model.first_calls == RUNS and model.calls == RUNS * (STEPS + 1)
    assert proc.returncode == 0 and "Traceback" not in err, err[-3000:]  # a graceful stop exits 0
    print(f"{RUNS} concurrent streams in {elapsed:.1f} s")
