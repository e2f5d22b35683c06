"""Issue 25, "Never silent", durable: `chainreact run --temporal` with no worker on the task queue says so
within seconds and keeps waiting (a worker started later takes the run), or gives up when no worker took
it within `--wait` seconds (exit 5);
a durable run that stops for approval prints a `durable answer` command that works as printed, and
`durable answer` / `durable status` print the run's answer. Every command is a subprocess; the model is
FakeLLM on loopback, Temporal the tests' dev server, workers `chainreact worker` processes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from chainreact.durable import DevServer
from chainreact.testing import FakeLLM

from ..cli.support import CALL_WEATHER, agent_doc, printed_command, weather_tool

SRC = Path(__file__).resolve().parents[2] / "src"

def _env(tmp: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "RAN_FILE": str(tmp / "ran.txt")}
    env.pop("CHAINREACT_DEBUG", None)
    return env


def cli(argv: list[str], tmp: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chainreact", *argv], capture_output=True, text=True,
                          env=_env(tmp), stdin=subprocess.DEVNULL, timeout=timeout)


def write_agent(tmp: Path, approval: bool) -> Path:
    return agent_doc(tmp, [weather_tool(approval)], name="weatherman")


def test_no_worker_is_said_and_the_run_waits_for_one(temporal_server: DevServer, task_queue: str,
                                                     tmp_path: Path, worker_processes: Any) -> None:
    with FakeLLM([CALL_WEATHER, {"text": "21 C in Lyon."}]) as llm:
        doc = write_agent(tmp_path, approval=False)
        conn = ["--temporal", temporal_server.address, "--task-queue", task_queue]
        err = tmp_path / "run.err"
        with open(err, "w") as fh:
            proc = subprocess.Popen([sys.executable, "-m", "chainreact", "run", str(doc), "weather?", *conn,
                                     "--global", f"url={llm.url}"], stdout=subprocess.PIPE, stderr=fh,
                                    text=True, env=_env(tmp_path), stdin=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 60
                while "no worker polls" not in err.read_text():
                    assert proc.poll() is None, err.read_text()
                    assert time.monotonic() < deadline, err.read_text()
                    time.sleep(0.1)
                said = err.read_text()
                assert f"no worker polls task queue {task_queue!r}" in said
                assert f"chainreact worker {doc} --temporal {temporal_server.address}" in said
                assert proc.poll() is None  # it keeps waiting
                worker_processes([str(doc), *conn, "--global", f"url={llm.url}"],
                                 env={"RAN_FILE": str(tmp_path / "ran.txt")})
                out, _ = proc.communicate(timeout=90)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    assert proc.returncode == 0, err.read_text()
    assert out == "21 C in Lyon.\n"
    assert "a worker polls task queue" in err.read_text()


def test_wait_gives_up_and_the_run_stays_queued(temporal_server: DevServer, task_queue: str,
                                                tmp_path: Path) -> None:
    doc = write_agent(tmp_path, approval=False)
    r = cli(["run", str(doc), "weather?", "--temporal", temporal_server.address, "--task-queue", task_queue,
             "--global", "url=http://127.0.0.1:9/v1", "--wait", "4"], tmp_path)
    assert r.returncode == 5, r.stderr
    assert r.stdout == ""
    assert f"no worker polls task queue {task_queue!r}" in r.stderr
    run_id = re.search(r"error: no worker took run (\S+) within --wait 4 s; it stays queued", r.stderr)
    assert run_id, r.stderr
    # status answers at once for a run no worker took (a query would wait for a worker)
    status = cli(["durable", "status", run_id.group(1), "--temporal", temporal_server.address], tmp_path,
                 timeout=20)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout) == {"status": "queued", "questions": [], "step": 0}


def test_approval_prints_a_durable_answer_command_that_works_and_status_shows_the_answer(
        temporal_server: DevServer, task_queue: str, tmp_path: Path, worker_processes: Any) -> None:
    with FakeLLM([CALL_WEATHER, {"text": "21 C in Lyon."}]) as llm:
        doc = write_agent(tmp_path, approval=True)
        conn = ["--temporal", temporal_server.address, "--task-queue", task_queue]
        worker_processes([str(doc), *conn, "--global", f"url={llm.url}"],
                         env={"RAN_FILE": str(tmp_path / "ran.txt")})
        first = cli(["run", str(doc), "weather in Lyon?", *conn, "--global", f"url={llm.url}"], tmp_path)
        assert first.returncode == 3, first.stderr
        assert first.stdout == ""
        assert "approval of tool weather" in first.stderr and '{"city":"Lyon"}' in first.stderr
        assert "no worker" not in first.stderr
        argv = printed_command(first.stderr)
        assert argv[:2] == ["durable", "answer"] and "approve" in argv
        assert task_queue in argv
        done = cli(argv, tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "21 C in Lyon.\n"
        status = cli(["durable", "status", argv[2], "--temporal", temporal_server.address], tmp_path)
    assert status.returncode == 0, status.stderr
    got = json.loads(status.stdout)
    assert got["status"] == "done" and got["answer"] == "21 C in Lyon."
    assert (tmp_path / "ran.txt").read_text() == "Lyon\n"
