"""Fault cases of issue 23 for JavaScript nodes: user code that ran outside QuickJS's limits (converting
a result: toJSON, getters, Proxy traps; formatting a thrown value: its toString; the engine's own
errors through patched prototypes) froze the event-loop thread for good, and `chainreact serve` stopped
answering /healthz and ignored SIGTERM. Each case runs in a child process with a time limit, so a
regression fails instead of freezing the suite; each failed (froze) before the fix."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
CHILD_LIMIT = 120.0  # seconds; the fixed code needs a few

CASES = {
    "toJSON": ("return {toJSON() { while (true) {} }};", "time limit"),
    "getter": ("return {get a() { while (true) {} }};", "time limit"),
    "Proxy trap": ("return new Proxy({}, {ownKeys() { while (true) {} }});", "time limit"),
    "thrown toString": ("throw {toString() { while (true) {} }};", "time limit"),
    "thrown message getter": ("const e = new Error('x'); Object.defineProperty(e, 'message', "
                              "{get() { while (true) {} }}); throw e;", "time limit"),
    "Error.prototype.toString": ("Error.prototype.toString = function () { while (true) {} }; "
                                 "while (true) {}", "read-only"),
    "InternalError name": ("Object.defineProperty(InternalError.prototype, 'name', "
                           "{get() { while (true) {} }}); while (true) {}", "not configurable"),
    "prepareStackTrace": ("Error.prepareStackTrace = function () { while (true) {} }; while (true) {}",
                          "read-only"),
    "Object.prototype stack": ("Object.defineProperty(Object.prototype, 'stack', "
                               "{get() { while (true) {} }}); while (true) {}", "time limit"),
    "toJSON allocating": ("return {toJSON() { const a = []; "
                          "while (true) a.push('x'.repeat(1000) + a.length); }};", "memory limit"),
    "BigInt result": ("return {n: 10n};", "cannot be converted to JSON"),
}


def run_child(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                              text=True, timeout=CHILD_LIMIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child process did not finish within {CHILD_LIMIT:g} s (frozen)")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_entry_into_javascript_is_under_the_limits() -> None:
    out = run_child(f"""
        import asyncio, json, time
        from chainreact.chains import RuleEngine, RuleMsg
        CASES = {json.dumps({k: v for k, v in CASES.items()})}

        async def main():
            engine = RuleEngine()
            engine.js_memory_limit = 16 * 1024 * 1024
            for name, (script, needle) in CASES.items():
                # wall-clock for a slow call: filling 16 MB on a loaded machine can take longer than 0.5 s
                engine.js_time_limit = 20.0 if needle == "memory limit" else 0.5
                engine.load({{"ruleChain": {{"id": "c"}}, "metadata": {{"nodes": [
                    {{"id": "t", "type": "jsTransform", "configuration": {{"jsScript": script}}}}]}}}})
                ticks = 0
                async def ticker():
                    nonlocal ticks
                    while True:
                        await asyncio.sleep(0.01)
                        ticks += 1
                task = asyncio.create_task(ticker())
                ends = await engine.run("c", RuleMsg(type="T", data="{{}}"))
                task.cancel()
                # the engine keeps serving: the next message through a fresh, working script
                engine.load({{"ruleChain": {{"id": "ok"}}, "metadata": {{"nodes": [
                    {{"id": "t", "type": "jsFilter",
                      "configuration": {{"jsScript": "return msg.a === 1;"}}}}]}}}})
                ok = await engine.run("ok", RuleMsg(type="T", data='{{"a": 1}}'))
                print(json.dumps({{"name": name, "relations": [e.relation for e in ends],
                                  "error": ends[0].error, "ticks": ticks, "next": ok[0].relation}}))

        asyncio.run(main())
    """)
    results = {r["name"]: r for r in map(json.loads, out.splitlines())}
    assert set(results) == set(CASES)
    for name, (_, needle) in CASES.items():
        r = results[name]
        assert r["relations"] == ["Failure"], (name, r)
        assert needle in (r["error"] or ""), (name, r)
        assert r["next"] == "True", (name, r)
        if needle == "time limit":
            assert r["ticks"] > 0, f"{name}: the event loop did not run while the script did"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_answers_healthz_and_sigterm_while_a_script_runs_away(tmp_path: Path) -> None:
    chain = {"ruleChain": {"id": "spin"}, "metadata": {"nodes": [
        {"id": "t", "type": "jsTransform",
         "configuration": {"jsScript": "return {toJSON() { while (true) {} }};"}}]}}
    (tmp_path / "spin.json").write_text(json.dumps(chain))
    port = _port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([sys.executable, "-m", "chainreact", "serve", str(tmp_path), "--port", str(port)],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.1)
        with httpx.Client(timeout=60) as client:
            import threading

            answer: list[httpx.Response] = []
            t = threading.Thread(target=lambda: answer.append(
                client.post(f"{base}/api/v1/rules/spin/execute/T?_ends=true", content=b"{}")))
            t.start()
            seen_in_flight = 0
            while t.is_alive():
                health = httpx.get(f"{base}/healthz", timeout=30)
                assert health.status_code == 200
                if t.is_alive():
                    seen_in_flight += 1
                time.sleep(0.05)
            t.join()
        ends = answer[0].json()["ends"]
        assert [e["relation"] for e in ends] == ["Failure"]
        assert "time limit of 2 s" in ends[0]["error"]
        assert seen_in_flight > 0, "/healthz never answered while the script ran"
        # and SIGTERM is honoured while another one spins
        httpx.post(f"{base}/api/v1/rules/spin/notify/T", content=b"{}", timeout=30)
        time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail("serve ignored SIGTERM while a script ran")
