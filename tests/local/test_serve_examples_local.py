"""Issue 25's "with nothing set": `chainreact serve examples/` with no OPENAI_* variables runs every
document on the embedded model, and every id it lists answers a chat completion (HTTP 200, a non-empty
answer). What is asserted is that each answers, not what a 135M model says.

The `team` flow is the hard case: its desk node has tools, a billing collaborator and an `output.schema`;
before the embedded server wrote the answer from the schema when tools were offered too, the answer was
free text, missed the schema three times and the request failed with HTTP 500.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from chainreact.local import local_extra_available

ROOT = Path(__file__).resolve().parents[2]
_missing = local_extra_available()
if _missing and os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    raise RuntimeError(f"CI must run the embedded-model tests, but module {_missing!r} is not installed")

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(bool(_missing), reason=f"the 'local' extra is not installed (no {_missing!r} module)"),
]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_every_example_answers_on_the_embedded_model_with_nothing_set() -> None:
    port = _port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHAINREACT_"))}
    proc = subprocess.Popen([sys.executable, "-m", "chainreact", "serve", "examples/", "--port", str(port),
                             "--no-watch"], cwd=ROOT, stderr=subprocess.PIPE, text=True, env=env)
    base = f"http://127.0.0.1:{port}"
    answers: dict[str, tuple[int, Any]] = {}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                ready = httpx.get(base + "/readyz", timeout=2).json()
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "serve did not come up"
                time.sleep(0.2)
        assert ready["problems"] == [] and ready["cannot_run"] == []
        ids = [m["id"] for m in httpx.get(base + "/v1/models", timeout=10).json()["data"]]
        assert {"demo-adder", "alarm", "assistant", "support", "team"} <= set(ids)
        for ident in ids:
            r = httpx.post(base + "/v1/chat/completions", timeout=600, json={
                "model": ident, "user": "newcomer",
                "messages": [{"role": "user", "content": "Where is my order 1234?"}]})
            answers[ident] = (r.status_code, r.json())
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    for ident, (status, body) in answers.items():
        assert status == 200, (ident, body)
        assert body["choices"][0]["message"]["content"].strip(), (ident, body)
    assert "Traceback" not in err, err
