"""Server overhead: what serving an agent over HTTP adds to the same agent run in-process.

    python bench/server_bench.py [--quick] [--only chainreact,agno] [--no-docs] [--out DIR]
    (also `bench/run --workloads server`, part of `make bench`)

For each framework, at 1 stream and at 500 concurrent streams, in fresh processes: a scripted model server
(bench/server.py, its own process; 3 tool steps, then a text streamed in ~20 chunks), the serving process
(`chainreact serve` on the agent's document; agno's `AgentOS` app on uvicorn, streaming from its own
`POST /agents/{id}/runs`), and a worker (`bench/server_load.py pair`) that runs, batch by batch in turn:

- **in-process**: the same agent in the worker: time from the start of a run to its first answer text
  (TTFT), and the worker's CPU per run;
- **served**: the run over HTTP through the serving process: TTFT as the client sees it (from before it
  connects), and the serving process's CPU per request.

Overhead = served minus in-process, for TTFT p50/p99 and CPU, per round; the medians over rounds are
reported. Every run's answer is checked and the model server's
request count compared with the runs made; a variant that did not complete every run fails the bench
(exit 1) and docs/performance.md is left unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "frameworks"))
import _harness as h
import stats
from procs import BENCH, MARKER, PYTHON, ROOT, Server, bench_env, verify

FRAMEWORKS = ("chainreact", "agno")
# seq_runs: runs per mode at 1 stream; waves: batches of `concurrency` runs per mode.
FULL = {"seq_runs": 200, "concurrency": 500, "waves": 2, "warmup": 5, "rounds": 3}  # make bench < 15 min
QUICK = {"seq_runs": 20, "concurrency": 50, "waves": 1, "warmup": 2, "rounds": 1}
TOOLS_PY = '''"""The benchmark agent's tool (the document loads it by module name, next to the document)."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''


def agent_document() -> dict[str, Any]:
    """The chainreact agent both the server and the in-process baseline load: the suite's agent.
    `firstContent`: text is released as it arrives (the default `auto` holds it up to 500 ms when tools
    are configured, which would measure that window rather than the server)."""
    return {"id": "bench", "type": "ai/agent", "name": "bench",
            "configuration": {"url": "${global.url}", "key": "x", "model": "fake-model", "maxRetries": -1,
                              "systemPrompt": h.SYSTEM_PROMPT, "streamToolCallCheck": "firstContent",
                              "tools": [{"type": "python", "name": "add", "description": "Add two integers.",
                                         "config": {"function": "bench_tools:add"}}]}}


def write_agent(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench.json").write_text(json.dumps(agent_document(), indent=1))
    (folder / "bench_tools.py").write_text(TOOLS_PY)
    return folder


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(framework: str, model_url: str, folder: Path,
                 serve_args: list[str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """The serving process (uvicorn in both cases, same settings), once it answers its health route.
    `serve_args`: more arguments of `chainreact serve` (e.g. --loop asyncio --http h11)."""
    import httpx

    port = _port()
    if framework == "chainreact":
        cmd = [PYTHON, "-m", "chainreact", "serve", str(folder), "--port", str(port),
               "--global", f"url={model_url}", *(serve_args or [])]
        health = "/readyz"
    else:
        cmd = [PYTHON, str(BENCH / "server_load.py"), "agentos", "--url", model_url, "--port", str(port)]
        health = "/health"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=bench_env(), cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(base + health, timeout=2).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            raise RuntimeError(f"{framework} server did not come up: {err[-2000:]}")
        time.sleep(0.1)


def stop_server(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err or ""


def worker(args: list[str], timeout: float = 600) -> dict[str, Any]:
    cmd = [PYTHON, str(BENCH / "server_load.py"), *args]
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=bench_env(), cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": "error", "reason": f"worker timed out after {timeout:.0f} s"}
    for line in reversed(cp.stdout.splitlines()):
        if line.startswith(MARKER):
            out: dict[str, Any] = json.loads(line[len(MARKER):])
            return out
    return {"status": "error", "reason": f"worker exited {cp.returncode}: {cp.stderr[-1500:]}"}


def cell(framework: str, concurrency: int, batches: int, warmup: int, folder: Path,
         serve_args: list[str] | None = None) -> dict[str, Any]:
    """One measurement in fresh processes: a model server, the serving process, and the worker that runs
    the agent in-process and through the server, batch by batch in turn."""
    with Server.start(steps=h.STEPS) as model:
        try:
            proc, base = start_server(framework, model.url, folder, serve_args)
        except RuntimeError as e:
            return {"status": "error", "reason": str(e)}
        try:
            result = worker(["pair", "--framework", framework, "--url", model.url, "--agent-dir", str(folder),
                             "--base", base, "--pid", str(proc.pid), "--concurrency", str(concurrency),
                             "--batches", str(batches), "--warmup", str(warmup)])
        finally:
            err = stop_server(proc)
        if "Traceback" in err and result.get("status") == "ok":
            result.update(status="failed", reason=f"the server logged a traceback: {err[-1500:]}")
        counts = model.stop()
    result["server_counts"] = counts
    problems = verify(result, counts)
    if problems:
        result.update(status="failed", reason="; ".join(problems))
    return result


def available(framework: str) -> str | None:
    """Why `framework` can't run here (None when it can)."""
    if framework == "agno":
        try:
            import agno.os  # noqa: F401
        except ImportError as e:
            return f"agno's AgentOS is not installed ({e}); pip install 'chainreact[bench]'"
    return None


KEYS = ("ttft_p50_ms", "ttft_p99_ms", "cpu_per_run_ms")


def summarise(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over rounds of one (framework, concurrency): in-process, served, and the added cost (the
    median of each round's served minus in-process: the two were measured side by side)."""
    ok = [r for r in rounds if r.get("status") == "ok"]
    out: dict[str, Any] = {}
    for key in KEYS:
        pairs = [(r["inproc"][key], r["served"][key]) for r in ok
                 if key in r["inproc"] and key in r["served"]]
        if not pairs:
            out[key] = {"inproc": None, "served": None, "added": None}
            continue
        out[key] = {"inproc": statistics.median(p[0] for p in pairs),
                    "served": statistics.median(p[1] for p in pairs),
                    "added": statistics.median(p[1] - p[0] for p in pairs),
                    "added_spread": stats.spread(p[1] - p[0] for p in pairs)}
    out["server_peak_rss_mb"] = max((r["server_peak_rss_mb"] for r in ok), default=None)
    return out


def uvicorn_setup(serve_args: list[str]) -> str:
    """The event loop and HTTP parser uvicorn runs with ("auto" takes uvloop / httptools when installed)."""
    import importlib.util

    def pick(flag: str, fast: str, plain: str) -> str:
        choice = serve_args[serve_args.index(flag) + 1] if flag in serve_args[:-1] else "auto"
        if choice == "auto":
            return fast if importlib.util.find_spec(fast) is not None else plain
        return choice

    return f"{pick('--loop', 'uvloop', 'asyncio')} + {pick('--http', 'httptools', 'h11')}"


def measure(cfg: dict[str, Any], frameworks: list[str]) -> dict[str, Any]:
    """Run the server benchmark; returns its results (also what `suite.py --workloads server` stores)."""
    started = time.perf_counter()
    results: dict[str, Any] = {
        "meta": {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "settings": cfg,
                 "steps": h.STEPS, "load_avg": [round(os.getloadavg()[0], 1)],
                 "uvicorn": uvicorn_setup(cfg.get("serve_args") or [])},
        "frameworks": {}, "failures": [],
    }
    levels = [1, int(cfg["concurrency"])]
    with tempfile.TemporaryDirectory(prefix="chainreact-server-bench-") as tmp:
        folder = write_agent(Path(tmp) / "agent")
        runnable = []
        for fw in frameworks:
            why = available(fw)
            if why:
                results["frameworks"][fw] = {"status": "n/a", "reason": why}
            else:
                runnable.append(fw)
                results["frameworks"][fw] = {"status": "ok",
                                             "levels": {str(c): {"rounds": []} for c in levels}}
        for rnd in range(int(cfg["rounds"])):
            for conc in levels:
                batches = int(cfg["seq_runs"]) if conc == 1 else int(cfg["waves"])
                for fw in runnable:
                    print(f"[server-bench] round {rnd + 1} {fw:<10} {conc:>3} stream(s)", end=" ", flush=True)
                    r = cell(fw, conc, batches, int(cfg["warmup"]), folder, cfg.get("serve_args"))
                    results["frameworks"][fw]["levels"][str(conc)]["rounds"].append(r)
                    print(_line(r), flush=True)
                    if r.get("status") != "ok":
                        results["failures"].append(f"{fw} at {conc} stream(s): {r.get('reason')}")
    for fw in runnable:
        for level in results["frameworks"][fw]["levels"].values():
            level["summary"] = summarise(level["rounds"])
    results["meta"]["duration_s"] = time.perf_counter() - started
    results["meta"]["load_avg"].append(round(os.getloadavg()[0], 1))
    return results


def _line(r: dict[str, Any]) -> str:
    if r.get("status") != "ok":
        return f"{r.get('status')}: {r.get('reason')}"
    nan = float("nan")
    parts = []
    for mode in ("inproc", "served"):
        m = r[mode]
        parts.append(f"{mode} TTFT p50 {m.get('ttft_p50_ms', nan):.2f} "
                     f"p99 {m.get('ttft_p99_ms', nan):.2f} ms, CPU {m['cpu_per_run_ms']:.2f} ms/run")
    return " | ".join(parts) + f"  [{r['wall_s']:.1f} s]"


def print_summary(results: dict[str, Any]) -> None:
    """The figures the targets are about, one line each (what the docs' table says, for the terminal)."""
    import server_report

    print(f"[server-bench] load average at start / end: {results['meta']['load_avg']}")
    for target, measured, met in server_report.targets(results):
        print(f"[server-bench] {target}: {measured} ({met.strip('*')})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/server_bench.py", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="few runs, 50 streams instead of 500: rough numbers")
    p.add_argument("--only", default=",".join(FRAMEWORKS), help="comma list of: chainreact, agno")
    p.add_argument("--runs", type=int, help="runs per mode at 1 stream (overrides the preset)")
    p.add_argument("--waves", type=int, help="waves per mode at N streams (overrides the preset)")
    p.add_argument("--concurrency", type=int, help="streams at once (overrides the preset's 500/50)")
    p.add_argument("--rounds", type=int, help="rounds (overrides the preset)")
    p.add_argument("--warmup", type=int, help="warm-up runs per mode (overrides the preset)")
    p.add_argument("--serve-args", default="",
                   help="more arguments of `chainreact serve`, e.g. '--loop asyncio --http h11' (an A/B)")
    p.add_argument("--instr", action="store_true",
                   help="also count instructions per request under valgrind (bench/server_instr.py; a few "
                        "minutes more; load-independent)")
    p.add_argument("--no-docs", action="store_true", help="don't write docs/performance.md and the chart")
    p.add_argument("--out", type=Path, default=BENCH / "results", help="directory for the JSON results")
    args = p.parse_args(argv)
    fws = [s.strip() for s in args.only.split(",") if s.strip()]
    if not fws or any(f not in FRAMEWORKS for f in fws):
        print(f"server_bench: --only takes {', '.join(FRAMEWORKS)}", file=sys.stderr)
        return 2
    cfg = dict(QUICK if args.quick else FULL)
    overrides = {"seq_runs": args.runs, "waves": args.waves, "concurrency": args.concurrency,
                 "rounds": args.rounds, "warmup": args.warmup}
    for key, val in overrides.items():
        if val is not None:
            cfg[key] = val
    cfg["quick"] = args.quick
    if args.serve_args:
        cfg["serve_args"] = args.serve_args.split()
    results = measure(cfg, fws)
    if args.instr:
        import server_instr

        print("[server-bench] instructions per request (callgrind)", flush=True)
        results["instr"] = server_instr.measure(fws, serve_args=cfg.get("serve_args"))
        for fw, r in results["instr"]["frameworks"].items():
            if r.get("status") != "ok":
                results["failures"].append(f"{fw} instructions: {r.get('reason')}")
    print_summary(results)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "server-latest.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1))
    tmp.replace(path)
    print(f"[server-bench] results: {path} ({results['meta']['duration_s']:.0f} s)")
    if results["failures"]:
        print("[server-bench] FAILED (docs/performance.md left unchanged):", file=sys.stderr)
        for f in results["failures"]:
            print(f"  - {f}", file=sys.stderr)
        return 1
    if not args.no_docs:
        import server_report

        for written in server_report.write(results):
            print(f"[server-bench] wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
