"""Processes of the suite: the scripted server and one runner, each in its own process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PYTHON = sys.executable
MARKER = "BENCH_RESULT "

# Peers phone home by default (telemetry, tracing); the benchmark talks to 127.0.0.1 only.
QUIET_ENV = {
    "AGNO_TELEMETRY": "false",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "DO_NOT_TRACK": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}


def bench_env() -> dict[str, str]:
    env = {**os.environ, **QUIET_ENV}
    env.pop("OPENAI_BASE_URL", None)  # a user's setting must not redirect a peer away from the server
    return env


@dataclass
class Server:
    """`bench/server.py` in a child process; `stop()` returns its request counts."""

    proc: subprocess.Popen[str]
    url: str

    @classmethod
    def start(cls, steps: int = 3, latency: float = 0.0, chunk_delay: float = 0.0) -> Server:
        cmd = [PYTHON, str(BENCH / "server.py"), "--steps", str(steps), "--latency", str(latency),
               "--chunk-delay", str(chunk_delay)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=bench_env(), cwd=ROOT)
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            proc.kill()
            _, err = proc.communicate()
            raise RuntimeError(f"bench server did not start (first line {url!r}): {err[-2000:]}")
        return cls(proc, url)

    def stop(self) -> dict[str, Any]:
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            return {"error": f"server did not stop on SIGTERM: {err[-1000:]}"}
        for line in out.splitlines():
            if line.startswith("{"):
                counts: dict[str, Any] = json.loads(line)
                return counts
        return {"error": f"server printed no counts (exit {self.proc.returncode}): {err[-1000:]}"}

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def run_runner(framework: str, url: str, workload: str, args: list[str], timeout: float) -> dict[str, Any]:
    """Run `bench/frameworks/run_<framework>.py` and parse its BENCH_RESULT line."""
    script = BENCH / "frameworks" / f"run_{framework}.py"
    cmd = [PYTHON, str(script), "--url", url, "--workload", workload, *args]
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=bench_env(), cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": "error", "reason": f"runner timed out after {timeout:.0f} s"}
    for line in reversed(cp.stdout.splitlines()):
        if line.startswith(MARKER):
            result: dict[str, Any] = json.loads(line[len(MARKER):])
            if result.get("status") == "error":
                result["stderr_tail"] = cp.stderr[-2000:]
            return result
    return {"status": "error",
            "reason": f"runner exited {cp.returncode} without a result; stderr: {cp.stderr[-1500:]}"}


def verify(result: dict[str, Any], counts: dict[str, Any]) -> list[str]:
    """Why this result can't be trusted (empty when every run completed as scripted)."""
    if result.get("status") != "ok":
        return []
    problems = []
    if result["completed"] != result["runs"]:
        problems.append(f"{result['completed']}/{result['runs']} runs returned the scripted answer"
                        f" ({result.get('problem')})")
    if result.get("tool_calls") != result.get("expected_tool_calls"):
        problems.append(f"tool ran {result.get('tool_calls')} times, "
                        f"expected {result.get('expected_tool_calls')}")
    if "error" in counts:
        problems.append(counts["error"])
    else:
        if counts["requests"] != result["expected_requests"]:
            problems.append(f"server answered {counts['requests']} model requests, "
                            f"expected {result['expected_requests']}")
        wrong = counts["non_streamed"] if result["expected_streamed"] else counts["streamed"]
        if wrong:
            kind = "non-streaming" if result["expected_streamed"] else "streaming"
            problems.append(f"{wrong} requests were {kind}")
    return problems
