"""Shared by the runs/sessions tests: agent documents, raw SSE reading, a store URL per backend."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson


def agent_doc(url: str, ident: str = "helper", **extra: Any) -> dict[str, Any]:
    return {"id": ident, "type": "ai/agent", "name": ident,
            "configuration": {"url": url, "key": "unused", "model": "fake-model", "maxRetries": -1,
                              "systemPrompt": "You help.", **extra}}


class SseFrames:
    """An SSE parser fed line by line: `feed` returns each complete {"id", "event", "data"} frame (id None
    when the frame has no id line), else None. For sync and async line sources alike."""

    def __init__(self) -> None:
        self.frame: dict[str, Any] = {"id": None, "event": "message", "data": ""}

    def feed(self, line: str) -> dict[str, Any] | None:
        frame = self.frame
        if line == "":
            self.frame = {"id": None, "event": "message", "data": ""}
            if frame["data"]:
                frame["data"] = orjson.loads(frame["data"])
                return frame
        elif line.startswith("id: "):
            frame["id"] = int(line[4:])
        elif line.startswith("event: "):
            frame["event"] = line[7:]
        elif line.startswith("data: "):
            frame["data"] += line[6:]
        return None


def sse_events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """Raw SSE lines -> {"id", "event", "data"} per frame (id None when the frame has no id line)."""
    parser = SseFrames()
    for line in lines:
        frame = parser.feed(line)
        if frame is not None:
            yield frame


def wait_status(url: str, run_id: str, *, headers: dict[str, str] | None = None,
                until: tuple[str, ...] = ("done", "failed", "cancelled", "interrupted"),
                deadline: float = 30.0) -> dict[str, Any]:
    """GET the run until its status is one of `until` (a bound against hanging, not a timing check)."""
    end = time.monotonic() + deadline
    while True:
        view = httpx.get(f"{url}/api/v1/runs/{run_id}", headers=headers, timeout=10).json()
        if view["status"] in until and not view["live"]:
            return dict(view)
        assert time.monotonic() < end, f"run {run_id} still {view['status']} after {deadline}s"
        time.sleep(0.05)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serve(args: list[str], port: int) -> subprocess.Popen[str]:
    """`chainreact serve ARGS --port PORT` as a process (its stderr piped), once /healthz answers."""
    proc = subprocess.Popen([sys.executable, "-m", "chainreact", "serve", *args, "--port", str(port)],
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"serve did not come up: {proc.communicate()[1][-2000:]}")
        time.sleep(0.1)
