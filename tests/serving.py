"""`chainreact serve` as a user starts it, for tests: a subprocess on a free loopback port, up when /readyz
answers, stopped with SIGTERM (as a deployer would) when the test is done."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    base: str
    ready: dict[str, Any]
    stderr: str = field(default="")  # filled in when the server has stopped


@contextmanager
def serve(*args: str, env: dict[str, str] | None = None, start_timeout: float = 60) -> Iterator[Served]:
    """`chainreact serve ARGS --port P` from the repository root, with the environment minus OPENAI_* and
    CHAINREACT_* variables plus `env`."""
    port = free_port()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHAINREACT_"))}
    full_env.update(env or {})
    proc = subprocess.Popen([sys.executable, "-m", "chainreact", "serve", *args, "--port", str(port)],
                            cwd=ROOT, stderr=subprocess.PIPE, text=True, env=full_env)
    base = f"http://127.0.0.1:{port}"
    served = Served(base, {})
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                served.ready = httpx.get(base + "/readyz", timeout=2).json()
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "serve did not come up"
                time.sleep(0.2)
        yield served
    finally:
        proc.send_signal(signal.SIGTERM)
        _, served.stderr = proc.communicate(timeout=60)


def ask_every_id(served: Served, question: str, timeout: float) -> dict[str, tuple[int, Any]]:
    """One chat completion to every id /v1/models lists (after checking the server loaded everything and
    everything can run): id -> (HTTP status, JSON body)."""
    assert served.ready["problems"] == [] and served.ready["cannot_run"] == []
    ids = [m["id"] for m in httpx.get(served.base + "/v1/models", timeout=10).json()["data"]]
    answers = {}
    for ident in ids:
        r = httpx.post(served.base + "/v1/chat/completions", timeout=timeout, json={
            "model": ident, "user": "newcomer", "messages": [{"role": "user", "content": question}]})
        answers[ident] = (r.status_code, r.json())
    return answers
