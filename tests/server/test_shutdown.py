"""`chainreact serve` and SIGTERM with runs in flight: they finish within the grace period, or are cancelled
with their state saved; the process exits 0 either way."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from chainreact.state import open_store
from tests.server.runs_helpers import agent_doc
from tests.server.test_serve_cli import _port


def _start(tmp_path: Path, llm_url: str, grace: float) -> tuple[subprocess.Popen[str], str, str]:
    (tmp_path / "helper.json").write_text(json.dumps(agent_doc(llm_url)))
    state = f"sqlite:///{tmp_path}/state.db"
    port = _port()
    proc = subprocess.Popen([sys.executable, "-m", "chainreact", "serve", str(tmp_path / "helper.json"),
                             "--port", str(port), "--state", state, "--grace", str(grace)],
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url, state
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "serve did not come up"
        time.sleep(0.1)


def _runs(state: str) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        async with await open_store(state) as store:
            return {r.run_id: await store.get_run(r.run_id) for r in await store.runs()}
    return asyncio.run(read())


def _in_flight(url: str) -> tuple[str, httpx.Client, Any]:
    """A detached run, and a streaming chat completion whose first bytes were read (both mid-model-call)."""
    run_id = httpx.post(f"{url}/api/v1/agents/helper/runs", json={"input": "slow", "detached": True},
                        timeout=10).json()["id"]
    client = httpx.Client(timeout=60)
    stream = client.stream("POST", f"{url}/v1/chat/completions", json={
        "model": "helper", "stream": True, "user": "s1",
        "messages": [{"role": "user", "content": "slow too"}]})
    resp = stream.__enter__()
    return run_id, client, (stream, resp)


def test_sigterm_lets_runs_in_flight_finish(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "finished anyway"}], loop=True, latency=1.0)
    proc, url, state = _start(tmp_path, llm.url, grace=30)
    try:
        run_id, client, (stream, resp) = _in_flight(url)
        chat_run = resp.headers["x-run-id"]
        proc.send_signal(signal.SIGTERM)
        body = resp.read().decode()  # the stream in flight goes on to its end
        stream.__exit__(None, None, None)
        client.close()
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    chunks = [json.loads(line[6:]) for line in body.split("\n") if line.startswith("data: {")]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "finished anyway"
    assert body.endswith("data: [DONE]\n\n")
    runs = _runs(state)
    assert runs[run_id].status == "done" and runs[run_id].snapshot["extra"]["content"] == "finished anyway"
    assert runs[chat_run].status == "done"


def test_sigterm_past_the_grace_period_cancels_and_saves(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "too late"}], loop=True, latency=30.0)
    proc, url, state = _start(tmp_path, llm.url, grace=0.5)
    try:
        run_id, client, (stream, resp) = _in_flight(url)
        chat_run = resp.headers["x-run-id"]
        deadline = time.monotonic() + 30
        while len(llm.chat_requests) < 2:  # both runs are waiting on the model
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        try:
            resp.read()
        except httpx.HTTPError:
            pass  # the server cut the stream at the end of the grace period
        stream.__exit__(None, None, None)
        client.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    runs = _runs(state)
    for rid in (run_id, chat_run):
        assert runs[rid].status == "cancelled", (rid, runs[rid].status)
        msgs = runs[rid].snapshot["messages"]
        assert msgs[0]["role"] == "system" and msgs[-1]["role"] == "user"
    assert "cancelled at shutdown" in err

    async def history() -> list[str]:
        async with await open_store(state) as store:
            return [m.content or "" for m in await store.history("agent:helper:s1")]
    assert asyncio.run(history()) == ["slow too"]
