"""Worker processes (`chainreact worker`) on the real dev server: the CLI's durable run, a worker killed
with SIGKILL between two tool steps, and many runs spread over two workers."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from chainreact.durable import DevServer, DurableAgent, DurableOptions
from chainreact.testing import FakeLLM

TOOLS = '''
import os

def record(n: int) -> str:
    """Record step n (a side effect: one line per execution, with the worker's pid)."""
    with open(os.environ["DURABLE_TOOL_LOG"], "a") as f:
        f.write(f"{n} {os.getpid()}\\n")
    return f"recorded {n}"
'''


def steps_responder(n: int, slow_step: int | None = None, delay: float = 0.0) -> Any:
    """Stateless: with k tool results in the request, ask for record(k) until k == n, then answer."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        k = sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
        turn: dict[str, Any] = ({"tool_calls": [{"id": f"call_{k}", "name": "record", "arguments": {"n": k}}]}
                                if k < n else {"text": f"recorded {n} steps"})
        if k == slow_step:
            turn["delay"] = delay
        return turn

    return respond


def write_agent(tmp: Path, llm: FakeLLM) -> Path:
    (tmp / "durable_tools.py").write_text(TOOLS)
    doc = {"id": "recorder", "type": "ai/agent", "name": "recorder", "configuration": {
        "url": llm.url, "model": "m", "systemPrompt": "Record the steps.", "maxRetries": 2,
        "tools": [{"type": "python", "name": "record", "config": {"function": "durable_tools:record"}}]}}
    path = tmp / "recorder.json"
    path.write_text(json.dumps(doc))
    return path


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chainreact", *args], capture_output=True, text=True,
                          env=env, timeout=60)


def _env(tmp: Path) -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
            "DURABLE_TOOL_LOG": str(tmp / "tool.log")}


def _tool_lines(tmp: Path) -> list[tuple[int, int]]:
    path = tmp / "tool.log"
    if not path.exists():
        return []
    return [(int(a), int(b)) for a, b in (line.split() for line in path.read_text().splitlines())]


def test_cli_durable_run_prints_the_same_json_as_in_process(temporal_server: DevServer, task_queue: str,
                                                           tmp_path: Path, worker_processes: Any) -> None:
    env = _env(tmp_path)
    with FakeLLM(steps_responder(2)) as llm:
        doc = write_agent(tmp_path, llm)
        worker_processes([str(doc), "--temporal", temporal_server.address, "--task-queue", task_queue],
                         env=env)
        local = _cli("run", str(doc), "go", "--json", env=env)
        durable = _cli("run", str(doc), "go", "--json", "--temporal", temporal_server.address,
                       "--task-queue", task_queue, env=env)
    assert local.returncode == 0, local.stderr
    assert durable.returncode == 0, durable.stderr
    a, b = json.loads(local.stdout), json.loads(durable.stdout)
    assert b["metadata"].pop("run_id").startswith("recorder-")
    a["metadata"].pop("run_id")
    assert a == b and b["content"] == "recorded 2 steps"
    pids = {pid for _, pid in _tool_lines(tmp_path)}
    assert len(pids) == 2  # the in-process run's tools ran in its process, the durable run's in the worker


async def test_worker_killed_between_tool_steps(temporal_server: DevServer, temporal_client: Any,
                                                task_queue: str, tmp_path: Path,
                                                worker_processes: Any) -> None:
    env = _env(tmp_path)
    args = ["--temporal", temporal_server.address, "--task-queue", task_queue]
    # Step 2's model call is slow: the worker dies while it is in flight, after tool step 1 completed.
    with FakeLLM(steps_responder(3, slow_step=1, delay=2.0)) as llm:
        doc = write_agent(tmp_path, llm)
        first = worker_processes([str(doc), *args], name="first", env=env)
        durable = DurableAgent("recorder", client=temporal_client, task_queue=task_queue,
                               options=DurableOptions(heartbeat_timeout=2.0))
        run = await durable.start("go")
        deadline = time.monotonic() + 30
        while len(llm.chat_requests) < 2:
            assert time.monotonic() < deadline, "the run did not reach its second model call"
            await asyncio.sleep(0.02)
        assert [n for n, _ in _tool_lines(tmp_path)] == [0]
        first.kill9()
        second = worker_processes([str(doc), *args], name="second", env=env)
        result = await asyncio.wait_for(run.result(), 60)
        requests = [sum(1 for m in r.messages if m.get("role") == "tool") for r in llm.chat_requests]
        attempts = await _model_attempts(temporal_client, run.run_id)
    assert result.stop_reason == "stop" and result.content == "recorded 3 steps"
    lines = _tool_lines(tmp_path)
    assert [n for n, _ in lines] == [0, 1, 2]  # every tool call ran exactly once
    assert lines[0][1] == first.proc.pid and {pid for _, pid in lines[1:]} == {second.proc.pid}
    # Only the model call in flight when the worker died ran again. A completed call never does: each
    # step's calls are at most its activity's attempts, which a loaded machine may raise above one (a
    # heartbeat later than 2 s retries a call in flight), never a replay.
    counts = Counter(requests)
    assert sorted(counts) == [0, 1, 2, 3] and len(attempts) == 4, (counts, attempts)
    assert counts[1] >= 2 and attempts[1] >= 2
    assert all(1 <= counts[k] <= attempts[k] for k in range(4)), (counts, attempts)
    assert [m.text for m in result.messages if m.role == "tool"] == ["recorded 0", "recorded 1", "recorded 2"]


async def _model_attempts(client: Any, run_id: str) -> list[int]:
    """The attempts of each model activity of the run (in step order), from its workflow's history."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    steps: dict[int, int] = {}  # scheduled event id -> step
    attempts: dict[int, int] = {}
    for ev in history.events:
        if ev.HasField("activity_task_scheduled_event_attributes") and \
                ev.activity_task_scheduled_event_attributes.activity_type.name == "chainreact.agent.model":
            steps[ev.event_id] = len(steps)
        if ev.HasField("activity_task_started_event_attributes"):
            started = ev.activity_task_started_event_attributes
            if started.scheduled_event_id in steps:
                attempts[steps[started.scheduled_event_id]] = started.attempt
    return [attempts.get(k, 0) for k in range(len(steps))]


async def _many(temporal_server: DevServer, client: Any, queue: str, tmp: Path, start: Any,
                runs: int) -> None:
    env = _env(tmp)
    args = ["--temporal", temporal_server.address, "--task-queue", queue]
    with FakeLLM(steps_responder(2)) as llm:
        doc = write_agent(tmp, llm)
        workers = [start([str(doc), *args], name=f"w{i}", env=env, ready=False) for i in range(2)]
        for w in workers:  # started together, then awaited: their imports overlap
            w.wait_ready()
        durable = DurableAgent("recorder", client=client, task_queue=queue)
        results = await asyncio.gather(*(durable.run(f"go {i}") for i in range(runs)))
        assert len(llm.chat_requests) == 3 * runs
    assert [r.content for r in results] == ["recorded 2 steps"] * runs
    lines = _tool_lines(tmp)
    assert len(lines) == 2 * runs  # no tool call lost or repeated
    per_worker = Counter(pid for _, pid in lines)
    assert set(per_worker) == {w.proc.pid for w in workers}  # both workers did work


async def test_200_runs_over_two_workers(temporal_server: DevServer, temporal_client: Any, task_queue: str,
                                         tmp_path: Path, worker_processes: Any) -> None:
    # The figure; docs/durable.md, "Performance", has where its time goes.
    await _many(temporal_server, temporal_client, task_queue, tmp_path, worker_processes, 200)

