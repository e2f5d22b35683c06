"""A newcomer starting chainreact (issue 25, "Starting and serving"), as processes: `chainreact --version`;
`chainreact serve` saying where it listens, that the playground is there, which documents did not load and
which cannot run, and `/readyz` saying the same."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHAINREACT_"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    return {**env, **extra}


def test_version_flag_prints_what_the_version_command_prints() -> None:
    flag = subprocess.run([sys.executable, "-m", "chainreact", "--version"], capture_output=True, text=True,
                          timeout=60, env=_env())
    command = subprocess.run([sys.executable, "-m", "chainreact", "version"], capture_output=True, text=True,
                             timeout=60, env=_env())
    assert flag.returncode == 0, flag.stderr
    assert flag.stdout == command.stdout and flag.stdout.startswith("chainreact ")


class Serving:
    """`chainreact serve ARGS --port 0` with its stderr read line by line as it comes."""

    def __init__(self, args: list[str], env: dict[str, str]):
        self.proc = subprocess.Popen([sys.executable, "-m", "chainreact", "serve", *args, "--port", "0"],
                                     stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line.rstrip("\n"))

    def until(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            for line in self.seen:
                m = re.search(pattern, line)
                if m:
                    return m
            try:
                self.seen.append(self.lines.get(timeout=max(0.1, deadline - time.monotonic())))
            except queue.Empty:
                raise AssertionError(f"no {pattern!r} on stderr:\n" + "\n".join(self.seen)) from None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


def _chain_with_agent(url: str) -> dict[str, Any]:
    return {"ruleChain": {"id": "needs-url", "name": "needs a url"},
            "metadata": {"nodes": [{"id": "ask", "type": "ai/agent", "name": "ask",
                                    "configuration": {"url": url, "model": "m"}}], "connections": []}}


def test_serve_says_where_it_listens_what_did_not_load_and_what_cannot_run(tmp_path: Path) -> None:
    served = tmp_path / "docs"
    served.mkdir()
    (served / "bot.json").write_text(json.dumps({"id": "bot", "configuration": {"url": "http://127.0.0.1:9",
                                                                                "model": "m"}}))
    (served / "broken.json").write_text(json.dumps({"id": "broken", "configuration": {"maxStep": "many"}}))
    (served / "needs-url.json").write_text(json.dumps(_chain_with_agent("${global.llm_url}/v1")))
    (served / "package.json").write_text('{"name": "not-a-document"}')
    (served / "typo.yaml").write_text("id: typo\nconfiguration: [unclosed\n")  # does not parse: said too
    srv = Serving([str(served), "--no-watch"], _env())
    try:
        base = srv.until(r"^listening on (http://127\.0\.0\.1:(\d+)/) \(OpenAI base URL \1v1\)$").group(1)
        srv.until(rf"^playground: open {re.escape(base)} in a browser")
        # the rest was said before it listened: each document, one line each
        srv.until(r"^serving agent 'bot' \(")
        srv.until(r"^serving chain 'needs-url' \(")
        srv.until(r"^model: a document that names no endpoint uses the embedded local model, started on its "
                  r"first call \(OPENAI_BASE_URL / OPENAI_API_KEY point it elsewhere\)$")
        broken = srv.until(r"^not loaded: (.*broken\.json): (.*)$")
        assert "maxStep" in broken.group(2)
        assert "YAML" in srv.until(r"^not loaded: .*typo\.yaml: (.*)$").group(1)
        srv.until(r"^cannot run: chain 'needs-url' \(.*needs-url\.json\): node 'ask' url is "
                  r"'\$\{global\.llm_url\}/v1': global\.llm_url is not defined "
                  r"\(give it: --global llm_url=\.\.\.\)$")
        assert not any("package.json" in line for line in srv.seen)  # no document of ours: skipped quietly
        ready = httpx.get(base + "readyz", timeout=10).json()
        assert ready["status"] == "ready" and ready["agents"] == 1 and ready["chains"] == 1
        assert sorted(p.split(": ")[0].rsplit("/", 1)[1] for p in ready["problems"]) == ["broken.json",
                                                                                         "typo.yaml"]
        assert ready["cannot_run"] == [{
            "id": "needs-url", "kind": "chain", "source": str(served / "needs-url.json"),
            "why": "node 'ask' url is '${global.llm_url}/v1': global.llm_url is not defined "
                   "(give it: --global llm_url=...)"}]
        assert httpx.get(base, timeout=10).status_code == 200  # the playground is where it says
    finally:
        srv.stop()


def test_a_chain_given_its_global_can_run(tmp_path: Path) -> None:
    (tmp_path / "needs-url.json").write_text(json.dumps(_chain_with_agent("${global.llm_url}/v1")))
    srv = Serving([str(tmp_path), "--no-watch", "--global", "llm_url=http://127.0.0.1:9"], _env())
    try:
        base = srv.until(r"^listening on (\S+) ").group(1)
        ready = httpx.get(base + "readyz", timeout=10).json()
        assert ready["cannot_run"] == [] and ready["problems"] == []
        assert not any(line.startswith("cannot run") for line in srv.seen)
    finally:
        srv.stop()


def test_a_port_in_use_is_said_before_anything_loads(tmp_path: Path) -> None:
    # Before: uvicorn's own "[Errno 98] error while attempting to bind", after every document had loaded,
    # and exit 3 (the code of a run that waits for an answer).
    import socket

    (tmp_path / "bot.json").write_text(json.dumps({"id": "bot", "configuration": {"url": "http://127.0.0.1:9",
                                                                                  "model": "m"}}))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = [sys.executable, "-m", "chainreact", "serve", str(tmp_path), "--port", str(port)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=_env(), cwd=ROOT)
    assert proc.returncode == 1
    assert proc.stderr == (f"error: cannot listen on 127.0.0.1:{port}: something else listens there; "
                           "stop it, or serve on another port with --port N\n")


def test_a_port_out_of_range_is_a_usage_error() -> None:
    # Before: --port 70000 served on port 4464 (70000 - 65536), without a word.
    proc = subprocess.run([sys.executable, "-m", "chainreact", "serve", "examples/", "--port", "70000"],
                          capture_output=True, text=True, timeout=60, env=_env(), cwd=ROOT)
    assert proc.returncode == 2 and proc.stdout == ""
    said = "argument --port: must be a port number from 0 to 65535 (0: a free one), got '70000'"
    assert said in proc.stderr
