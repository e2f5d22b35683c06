"""A durable chain run is not the server's to lose: a `chainreact serve --temporal` process stopped
(SIGTERM, grace period 0) while a chain run of its runs API is in flight leaves the run to the workers
instead of cancelling it; the run completes in the `chainreact worker` process, whose last activity
records its end in the shared store (durable/chain_end.py), where a second server reads it. The
store-side handshake between the leaving server and the workflow's end is tested in both orders."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import orjson
from temporalio.client import WorkflowExecutionStatus

from chainreact.durable import DevServer
from chainreact.durable.chain_end import ENDED, LEFT, finish, leave
from chainreact.durable.chain_plan import frames_log
from chainreact.state import open_store
from chainreact.testing import FakeLLM
from tests.temporal.test_serve_temporal import serve_process, sse  # noqa: F401 (a fixture)
from tests.temporal.test_serve_temporal_chains import ANSWER, chat_chain

GATE_TIMEOUT = 60.0


class HeldModel:
    """The scripted model: its answer waits until the test opens the gate."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.entered.set()
        if not await asyncio.to_thread(self.gate.wait, GATE_TIMEOUT):
            return {"text": "the gate was never opened"}
        return {"text": ANSWER, "chunks": 3}


async def test_a_chain_run_in_flight_is_left_to_the_workers_at_shutdown(
        temporal_server: DevServer, temporal_client: Any, task_queue: str, tmp_path: Path,
        serve_process: Any, worker_processes: Any) -> None:  # noqa: F811
    model = HeldModel()
    state = f"sqlite:///{tmp_path / 'state.db'}"
    with FakeLLM(model) as llm:
        doc = tmp_path / "chat.json"
        doc.write_bytes(orjson.dumps(chat_chain(llm.url)))
        temporal = ["--temporal", temporal_server.address, "--task-queue", task_queue, "--state", state]
        worker_processes([str(doc), *temporal])
        first = await serve_process([str(doc), *temporal]).ready()
        async with httpx.AsyncClient(timeout=60) as http:
            started = await http.post(f"{first.url}/api/v1/rules/chat/runs",
                                      json={"input": "hello", "detached": True})
            run_id = started.json()["id"]
            assert await asyncio.to_thread(model.entered.wait, 30), "the agent node did not call the model"
            # SIGTERM with the model call held in the worker: the grace period (0 s) is over at once.
            code = first.stop()
            handle = temporal_client.get_workflow_handle(run_id)
            running = (await handle.describe()).status
            async with await open_store(state) as store:
                left = await store.get_run(run_id)
            model.gate.set()
            out = await asyncio.wait_for(handle.result(), 60)
            second = await serve_process([str(doc), *temporal]).ready()
            view = (await http.get(f"{second.url}/api/v1/runs/{run_id}")).json()
            events = [f async for f in sse(await http.send(
                http.build_request("GET", f"{second.url}/api/v1/runs/{run_id}/events"), stream=True))]
        async with await open_store(state) as store:
            frames = await store.get_run(frames_log(run_id))
            record = await store.get_run(run_id)
        llm.assert_all_consumed()
    assert started.status_code == 202 and code == 0
    # The server left the run running: its workflow went on, its record was not marked cancelled.
    assert running == WorkflowExecutionStatus.RUNNING
    assert left is not None and left.status == "running" and left.snapshot.get(LEFT) is True
    assert "left to the workers" in (tmp_path / "serve-0.log").read_text()
    # It completed in the worker, which recorded its end: a second server reads it done, with its answer.
    assert [e["msg"]["data"] for e in out["ends"]] == [ANSWER.upper()]
    assert record is not None and record.status == "done"
    assert (view["status"], view["kind"], view["chain"], view["live"]) == ("done", "chain", "chat", False)
    assert view["result"] == {"content": ANSWER.upper(), "stop_reason": "stop"}
    kinds = [f["event"] for f in events]
    assert kinds[0] == "run_start" and kinds[-2:] == ["final", "end"] and "cancelled" not in kinds
    assert events[-2]["data"]["content"] == ANSWER.upper()
    assert events[-1]["data"] == {"id": run_id, "status": "done"}
    assert frames is not None and frames.status == "done"  # its frames log is closed too


async def _recorded(store: Any, run_id: str) -> None:
    await store.save_run(run_id, {"format": "temporal", "workflow_id": run_id,
                                  "extra": {"target": "chat", "kind": "chain"}}, status="running")
    await store.append_events(run_id, [("run_start", {"type": "run_start", "run_id": run_id})])


async def test_the_end_is_written_once_whoever_comes_last(tmp_path: Path) -> None:
    done = {"status": "done", "content": "ok", "usage": {"total_tokens": 3}}
    async with await open_store(f"sqlite:///{tmp_path / 'state.db'}") as store:
        # The server leaves, then the workflow ends: the workflow writes the end.
        await _recorded(store, "a")
        await leave(store, "a")
        marked = await store.get_run("a")
        await finish(store, "a", done, record=True, streamed=False)
        # The workflow ends first (its end marked for the following server), then the server leaves.
        await _recorded(store, "b")
        await finish(store, "b", {"status": "failed", "error": "boom"}, record=True, streamed=False)
        ended = await store.get_run("b")
        await leave(store, "b")
        # A server that follows the run to its end: the workflow only marks it, the server writes it.
        await _recorded(store, "c")
        await finish(store, "c", done, record=True, streamed=False)
        followed = await store.get_run("c")
        a, b = await store.get_run("a"), await store.get_run("b")
        logs = {r: [(e.type, e.data) for e in await store.events(r)] for r in "abc"}
    assert marked is not None and marked.status == "running" and marked.snapshot[LEFT] is True
    assert a is not None and a.status == "done"
    assert a.snapshot["extra"] == {"target": "chat", "kind": "chain", "content": "ok", "stop_reason": "stop"}
    assert logs["a"][-1] == ("final", {"type": "final", "run_id": "a", "content": "ok",
                                       "usage": {"total_tokens": 3}})
    assert ended is not None and ended.status == "running" and ended.snapshot[ENDED]["error"] == "boom"
    assert b is not None and b.status == "failed" and b.snapshot["extra"]["error"] == "boom"
    assert logs["b"][-1] == ("error", {"type": "error", "run_id": "b", "error": "boom"})
    assert followed is not None and followed.status == "running" and ENDED in followed.snapshot
    assert [t for t, _ in logs["c"]] == ["run_start"]  # nothing logged: the following server does that
