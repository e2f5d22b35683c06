"""`chainreact worker FOLDER` reads a folder as `chainreact serve` does (issue 25): its agents, chains and
flows, each by its shape (an agent document in a folder used to fail with "not a rule chain document")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from chainreact.durable import DevServer

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHAINREACT_"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    return {**env, **extra}


def test_worker_serves_the_examples_folder_as_serve_does(temporal_server: DevServer, task_queue: str,
                                                         tmp_path: Path, worker_processes: Any,
                                                         fake_llm: Any) -> None:
    llm = fake_llm(lambda body: {"text": "5, from the worker's model"})
    env = _env(OPENAI_BASE_URL=llm.url, OPENAI_API_KEY="sk-worker")
    state = f"sqlite:///{tmp_path / 'state.db'}"
    connection = ["--temporal", temporal_server.address, "--task-queue", task_queue]
    worker = worker_processes([str(ROOT / "examples"), *connection, "--state", state], env=env)
    ready = next(line for line in worker.log.read_text().splitlines() if "worker ready" in line)
    names = set(ready.split("worker ready: ", 1)[1].split(" on task queue", 1)[0].split(", "))
    assert {"demo-adder", "alarm", "assistant", "flow support"} <= names  # an agent, chains, a flow

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "chainreact", *args, *connection], capture_output=True,
                              text=True, env=env, cwd=ROOT, timeout=120)

    run = cli("run", "examples/demo-agent.json", "What is 2 + 3?")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "5, from the worker's model"
    chain = cli("chain", "run", "examples/chains/alarm.json", "--data", '{"temperature": 71}', "--meta",
                "room=kitchen", "--json")
    assert chain.returncode == 0, chain.stderr
    assert [e["msg"]["data"] for e in json.loads(chain.stdout)["ends"]] == ["KITCHEN: 71 is too hot"]
    # the agent's model call went where OPENAI_BASE_URL points, with OPENAI_API_KEY
    assert [r.headers.get("authorization") for r in llm.chat_requests] == ["Bearer sk-worker"]
