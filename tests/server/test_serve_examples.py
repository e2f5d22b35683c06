"""The README's `chainreact serve examples/`: everything in examples/ loads and is served, nothing broken."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_examples_folder_as_the_readme_says() -> None:
    port = _port()
    proc = subprocess.Popen([sys.executable, "-m", "chainreact", "serve", "examples/", "--port", str(port)],
                            cwd=ROOT, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                ready = httpx.get(base + "/readyz", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "serve did not come up"
                time.sleep(0.2)
        assert ready.json()["problems"] == []
        models = {m["id"]: m["owned_by"] for m in httpx.get(base + "/v1/models", timeout=10).json()["data"]}
        # The README names demo-adder; the examples' chains and flow are served next to it.
        assert models["demo-adder"] == "chainreact-agent"
        assert models["alarm"] == models["assistant"] == "chainreact-chain"
        assert models["support"] == "chainreact-flow"
        # A chain that needs no model runs through RuleGo's route, as in the README's `chain run` line.
        r = httpx.post(base + "/api/v1/rules/alarm/execute/TELEMETRY?room=kitchen", json={"temperature": 71},
                       timeout=30)
        assert r.status_code == 200, r.text
        assert r.text == "KITCHEN: 71 is too hot"  # RuleGo's answer: the out message's data
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert "serving agent 'demo-adder'" in err
