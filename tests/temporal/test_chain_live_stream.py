"""Durable rule chains stream their agent nodes' Stream frames while the chain runs: `chainreact chain run
--stream --temporal --state` and `chainreact serve --temporal` (chat completions with `stream: true`, and
the runs API's SSE) read them from the store the `chainreact worker` process logs them to, as durable
agent runs' events. The proof is by order, not time: the chain's second agent node gets its model answer
only once the client has seen the first node's text (a gate the test opens), so text that came only at
the chain's end could never arrive, and the chain would answer with the gate's timeout text instead."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import orjson

from chainreact.durable import DevServer
from chainreact.durable.chain_plan import FRAME_EVENT, frames_log
from chainreact.state import open_store
from chainreact.testing import FakeLLM
from tests.temporal.test_chain_workers import _env
from tests.temporal.test_serve_temporal import serve_process, sse  # noqa: F401 (a fixture)

FIRST = "The first node streams this answer live."
SECOND = " Then the second node ends it."
GATE_TIMEOUT = 60.0  # seconds the second node's model waits for the client's first text


class GatedModel:
    """The scripted model's responder, two calls per chain run: the first node's call streams FIRST in
    chunks; the second node's waits for this round's gate (opened by the test once it saw text)."""

    def __init__(self, rounds: int):
        self.gates = [threading.Event() for _ in range(rounds)]
        self.calls = 0

    def open(self, round_: int) -> None:
        self.gates[round_].set()

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        if self.calls % 2 == 1:
            return {"text": FIRST, "chunks": 6, "chunk_delay": 0.05}
        gate = self.gates[self.calls // 2 - 1]
        if not await asyncio.to_thread(gate.wait, GATE_TIMEOUT):
            return {"text": " (the client saw no text before the chain's end)"}
        return {"text": SECOND, "chunks": 2}


def two_agent_chain(url: str) -> dict[str, Any]:
    agent = {"url": url, "key": "unused", "model": "fake-model", "maxRetries": -1,
             "systemPrompt": "Be brief."}
    return {"ruleChain": {"id": "live", "name": "live"},
            "metadata": {"nodes": [{"id": "a", "type": "ai/agent", "configuration": agent},
                                   {"id": "b", "type": "ai/agent", "configuration": agent}],
                         "connections": [{"fromId": "a", "toId": "b", "type": "Success"}]}}


def _setup(tmp_path: Path, url: str, temporal_server: DevServer, task_queue: str) -> tuple[Path, list[str]]:
    doc = tmp_path / "live.json"
    doc.write_bytes(orjson.dumps(two_agent_chain(url)))
    state = f"sqlite:///{tmp_path / 'state.db'}"
    return doc, ["--temporal", temporal_server.address, "--task-queue", task_queue, "--state", state]


async def test_cli_chain_run_streams_frames_while_the_chain_runs(
        temporal_server: DevServer, task_queue: str, tmp_path: Path, worker_processes: Any) -> None:
    model = GatedModel(1)
    with FakeLLM(model) as llm:
        doc, temporal = _setup(tmp_path, llm.url, temporal_server, task_queue)
        worker_processes([str(doc), *temporal])
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "chainreact", "chain", "run", str(doc), "--data-type", "TEXT",
            "--data", "hi", "--stream", "--jsonl", *temporal, env=_env(tmp_path), cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        lines: list[dict[str, Any]] = []
        gate_opened_at = None
        try:
            while line := await asyncio.wait_for(proc.stdout.readline(), GATE_TIMEOUT + 30):
                lines.append(json.loads(line))
                if gate_opened_at is None and lines[-1]["event"] == "stream" and lines[-1]["msg"]["data"]:
                    gate_opened_at = len(lines)  # the first text: now the second node may answer
                    model.open(0)
            code = await asyncio.wait_for(proc.wait(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
        err = (await proc.stderr.read()).decode()
    assert code == 0, err
    frames = [ln["msg"] for ln in lines if ln["event"] == "stream"]
    ends = [ln for ln in lines if ln["event"] == "end"]
    # The first text came while the chain ran (the second node had no answer yet), before its end.
    assert gate_opened_at == 1 and lines[0]["msg"]["metadata"]["chunk"] == "true"
    assert "".join(f["data"] for f in frames if f["metadata"].get("chunk") == "true") == FIRST + SECOND
    assert len([f for f in frames if f["metadata"].get("stream_completed") == "true"]) == 2
    assert [(e["relation"], e["msg"]["data"]) for e in ends] == [("Success", SECOND)]
    assert lines[-1] is ends[-1]


async def test_serve_temporal_streams_a_chain_while_it_runs(
        temporal_server: DevServer, task_queue: str, tmp_path: Path, serve_process: Any,  # noqa: F811
        worker_processes: Any) -> None:
    from openai import AsyncOpenAI

    model = GatedModel(2)
    with FakeLLM(model) as llm:
        doc, temporal = _setup(tmp_path, llm.url, temporal_server, task_queue)
        worker_processes([str(doc), *temporal])
        server = await serve_process([str(doc), *temporal]).ready()

        # Chat completions, streamed (the openai SDK): the first text chunk opens the gate.
        sdk = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused")
        stream = await sdk.chat.completions.create(model="live", stream=True,
                                                   messages=[{"role": "user", "content": "hi"}])
        chunks: list[str] = []
        finish = None
        async for chunk in stream:
            if not chunk.choices:
                continue
            if chunk.choices[0].delta.content:
                chunks.append(chunk.choices[0].delta.content)
                model.open(0)
            finish = chunk.choices[0].finish_reason or finish
        await sdk.close()

        # The runs API's SSE of a chain run: text_delta events while it runs, then final.
        events: list[dict[str, Any]] = []
        async with httpx.AsyncClient(timeout=GATE_TIMEOUT + 30) as http, \
                http.stream("POST", f"{server.url}/api/v1/rules/live/runs",
                            json={"input": "hi", "stream": True}) as resp:
            run_id = resp.headers["x-run-id"]
            async for f in sse(resp):
                events.append(f)
                if f["event"] == "text_delta":
                    model.open(1)
    assert "".join(chunks) == FIRST + SECOND and finish == "stop"
    assert len(chunks) > 2  # chunk by chunk, not the whole text at once
    kinds = [f["event"] for f in events]
    assert kinds[0] == "run_start" and kinds[-2:] == ["final", "end"]
    text = "".join(f["data"]["text"] for f in events if f["event"] == "text_delta")
    assert text == FIRST + SECOND and events[-2]["data"]["content"] == SECOND
    assert events[-1]["data"]["status"] == "done"
    # The workers' frames log (the run's workflow id), marked done (the workflow's end, its reader); it
    # holds the run's timeline too (node events: test_serve_temporal_chain_trace.py).
    async with await open_store(temporal[-1]) as store:
        rec = await store.get_run(frames_log(run_id))
        logged = await store.events(frames_log(run_id))
    assert rec is not None and rec.status == "done" and rec.snapshot == {"frames_of": run_id}
    assert "".join(e.data["msg"]["data"] for e in logged if e.type == FRAME_EVENT) == FIRST + SECOND
