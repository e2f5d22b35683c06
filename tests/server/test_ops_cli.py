"""`chainreact serve` with the operations flags, as a process: JSON access lines on stderr without
secrets, the watched folder reloaded, rate limits and CORS from the command line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from chainreact.server.background import free_port as _free_port

from .ops_support import key, wait_until


def test_serve_flags_log_limit_cors_and_watch(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "served"}])
    folder = tmp_path / "agents"
    folder.mkdir()
    doc = {"id": "bot", "configuration": {"url": "${global.url}", "key": "k", "model": "fake-model"}}
    (folder / "bot.json").write_text(json.dumps(doc))
    keys = [key("cli", "sk-CLI-SECRET", permissions=["admin"]),
            key("poller", "sk-POLL", permissions=["read"], rateLimit="unlimited")]  # its own rate wins
    (tmp_path / "keys.json").write_text(json.dumps({"keys": keys}))
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "chainreact", "serve", str(folder), "--port", str(port),
                             "--global", f"url={llm.url}", "--keys", str(tmp_path / "keys.json"),
                             "--rate-limit", "4/minute", "--cors-origin", "http://ui.example",
                             "--access-log"],
                            stderr=subprocess.PIPE, text=True)
    url, auth = f"http://127.0.0.1:{port}", {"Authorization": "Bearer sk-CLI-SECRET"}
    try:
        def up() -> bool:
            assert proc.poll() is None, "serve exited"
            try:
                return httpx.get(url + "/healthz", timeout=1).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(up, "serve to come up", 30)
        r = httpx.post(url + "/v1/chat/completions", headers={**auth, "Origin": "http://ui.example"},
                       json={"model": "bot", "messages": [{"role": "user", "content": "hi"}]}, timeout=30)
        assert r.json()["choices"][0]["message"]["content"] == "served"
        assert r.headers["access-control-allow-origin"] == "http://ui.example"
        (folder / "second.json").write_text(json.dumps({**doc, "id": "second"}))
        poll = {"Authorization": "Bearer sk-POLL"}
        wait_until(lambda: "second" in [m["id"] for m in httpx.get(url + "/v1/models", headers=poll).json()
                                        ["data"]], "the added agent")
        statuses = [httpx.get(url + "/v1/models", headers=auth).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]  # --rate-limit 4/minute, one spent on the chat
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err
    assert "watching" in err and "reloaded 'second'" in err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert any(x["route"] == "/healthz" and x["status"] == 200 for x in lines)
    chat = [x for x in lines if x["path"] == "/v1/chat/completions"]
    assert len(chat) == 1 and chat[0]["status"] == 200 and chat[0]["key"] == "cli"
    assert any(x["status"] == 429 for x in lines)
    assert "CLI-SECRET" not in err and "Bearer" not in err


def test_no_access_log_and_no_watch(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "served"}])
    doc = {"id": "bot", "configuration": {"url": llm.url, "key": "k", "model": "fake-model"}}
    (tmp_path / "bot.json").write_text(json.dumps(doc))
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "chainreact", "serve", str(tmp_path), "--port", str(port),
                             "--no-access-log", "--no-watch"], stderr=subprocess.PIPE, text=True)
    try:
        def up() -> bool:
            assert proc.poll() is None, "serve exited"
            try:
                return httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(up, "serve to come up", 30)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert "serving agent 'bot'" in err
    assert "watching" not in err and '{"ts"' not in err
