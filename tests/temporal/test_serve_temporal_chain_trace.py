"""A durable chain run of the runs API logs the timeline an in-process one logs (chains/trace.py): every
node's IN/OUT (`node` events) and its agent node's model calls, read back from the run's events. Real
processes: a `chainreact serve` without Temporal, then `chainreact serve --temporal` with a `chainreact
worker chain.json` process, on the same chain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson

from chainreact.durable import DevServer
from chainreact.testing import FakeLLM
from tests.temporal.test_serve_temporal import serve_process, sse  # noqa: F401 (a fixture)
from tests.temporal.test_serve_temporal_chains import ANSWER, chat_chain


async def _run(url: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A chain run through the runs API (streamed), and its events read back from the store."""
    async with httpx.AsyncClient(timeout=60) as http:
        async with http.stream("POST", f"{url}/api/v1/rules/chat/runs",
                               json={"input": "hello", "stream": True}) as resp:
            run_id = resp.headers["x-run-id"]
            live = [f async for f in sse(resp)]
        stored = [f async for f in sse(await http.send(
            http.build_request("GET", f"{url}/api/v1/runs/{run_id}/events"), stream=True))]
    return live, stored


def _timeline(frames: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for f in frames:
        d = f["data"]
        if f["event"] == "node":
            out.append(("node", d["chainId"], d["nodeId"], d["flow"], d["relation"], d["error"]))
        elif f["event"] == "model_call_end":
            out.append(("model_call_end", d["chain"], d["node"]))
    return out


async def test_a_durable_chain_run_logs_its_nodes_as_in_process(
        temporal_server: DevServer, task_queue: str, tmp_path: Path, serve_process: Any,  # noqa: F811
        worker_processes: Any) -> None:
    with FakeLLM([{"text": ANSWER, "chunks": 3}] * 2) as llm:
        doc = tmp_path / "chat.json"
        doc.write_bytes(orjson.dumps(chat_chain(llm.url)))
        local = await serve_process([str(doc), "--state", f"sqlite:///{tmp_path / 'local.db'}"]).ready()
        expected, _ = await _run(local.url)
        local.stop()
        temporal = ["--temporal", temporal_server.address, "--task-queue", task_queue,
                    "--state", f"sqlite:///{tmp_path / 'state.db'}"]
        worker_processes([str(doc), *temporal])
        server = await serve_process([str(doc), *temporal]).ready()
        live, stored = await _run(server.url)
        llm.assert_all_consumed()
    want = _timeline(expected)
    assert want == [("node", "chat", "a", "IN", "", None), ("model_call_end", "chat", "a"),
                    ("node", "chat", "a", "OUT", "Success", None), ("node", "chat", "t", "IN", "", None),
                    ("node", "chat", "t", "OUT", "Success", None)]
    # The durable run's timeline: the same events in the same order, live and in its stored log.
    assert _timeline(live) == _timeline(stored) == want
    nodes = [f["data"] for f in stored if f["event"] == "node"]
    assert nodes[-1]["msg"]["data"] == ANSWER.upper() and all(n["ts"] > 0 for n in nodes)
    assert all(n["durationMs"] >= 0 for n in nodes if n["flow"] == "OUT")
    call = next(f["data"] for f in stored if f["event"] == "model_call_end")
    assert call["agent_run_id"] and call["finish_reason"] == "stop" and call["message"]["content"] == ANSWER
    kinds = [f["event"] for f in stored]
    assert kinds[0] == "run_start" and kinds[-2:] == ["final", "end"]
    assert kinds.index("text_delta") > kinds.index("node")  # the agent node's text after its IN
    ids = [f["id"] for f in stored if f["id"] is not None]
    assert ids == list(range(1, len(ids) + 1))
