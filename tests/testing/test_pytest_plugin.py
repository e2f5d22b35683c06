"""The `fake_llm` fixture, provided through the `pytest11` entry point."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx

from chainreact.testing import FakeLLM


def test_fixture_returns_a_started_server(fake_llm: Callable[..., FakeLLM]) -> None:
    srv = fake_llm([{"text": "from the fixture"}], model="fixture-model")
    other = fake_llm([{"text": "second server"}])
    with httpx.Client(timeout=10) as c:
        r = c.post(srv.url + "/chat/completions", json={"messages": []})
        r2 = c.post(other.url + "/chat/completions", json={"messages": []})
    assert r.json()["choices"][0]["message"]["content"] == "from the fixture"
    assert r.json()["model"] == "fixture-model"
    assert r2.json()["choices"][0]["message"]["content"] == "second server"
    assert srv.port != other.port


def test_plugin_loads_in_a_fresh_pytest_and_stops_servers_at_teardown(tmp_path: Path) -> None:
    # A separate pytest process with no conftest: the fixture can only come from the entry point.
    (tmp_path / "test_inner.py").write_text(
        "import socket, pytest\n"
        "PORTS = []\n"
        "def test_a(fake_llm):\n"
        "    srv = fake_llm([{'text': 'x'}])\n"
        "    PORTS.append(srv.port)\n"
        "    socket.create_connection(('127.0.0.1', srv.port), timeout=5).close()\n"
        "def test_b():\n"
        "    with pytest.raises(ConnectionRefusedError):\n"
        "        socket.create_connection(('127.0.0.1', PORTS[0]), timeout=5)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_inner.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
