"""The benchmark suite: chainreact and its peers, same agent, same scripted server, one command.

    bench/run [--quick] [--rounds 3] [--only chainreact,agno] [--workloads sync,stream] [--no-docs]

Rounds interleave the frameworks (A B C A B C ...: every round runs each framework once per workload), so
the drift of a shared machine hits each alike; every figure is published as the median over the rounds
with its spread, the lowest and the highest round (bench/stats.py). Every framework runs in its own
process against a scripted OpenAI-compatible server in another process,
one fresh server per (framework, workload) so its request counts check that runner alone. Results go to
bench/results/<stamp>.json (and latest.json); the tables and charts into docs/performance.md and
docs/img/. A framework that did not complete every run is a failure of the suite (exit 1), never a
fast-looking number.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import imports
import scale
import stats
from procs import BENCH, Server, run_runner, verify

# Runner file suffix -> display name; baselines first.
FRAMEWORKS = {
    "bare_httpx": "bare httpx",
    "bare_openai": "bare openai SDK",
    "chainreact": "chainreact",
    "pydantic_ai": "pydantic-ai",
    "openai_agents": "openai-agents",
    "langgraph": "langgraph",
    "agno": "agno",
}
PEERS = ("pydantic_ai", "openai_agents", "langgraph", "agno")
RUNNER_WORKLOADS = ("sync", "stream", "concurrent", "build")  # run by bench/frameworks/run_<name>.py
WORKLOADS = ("sync", "stream", "concurrent", "build", "imports", "ttft", "flows", "server", "durable",
             "scale")

# Sized to finish in about 25 minutes on 2 shared cores (24.8 on 2026-12-01; the slowest peers cost ~20 ms
# CPU per request): per round, the median of `reps` repetitions; the published figure is the median over
# `rounds` rounds.
FULL = {"rounds": 3, "runs": 10, "reps": 2, "warmup": 1, "conc_runs": 500, "conc_reps": 1,
        "agents": 10_000, "build_budget": 20.0, "import_repeat": 5, "ttft_iterations": 30}
QUICK = {"rounds": 1, "runs": 4, "reps": 2, "warmup": 1, "conc_runs": 100, "conc_reps": 1, "agents": 500,
         "build_budget": 20.0, "import_repeat": 3, "ttft_iterations": 8}
# The suite's scale workload: chainreact alone. The peers and baselines take minutes each at 10,000 runs in
# flight (pydantic-ai ~30 s at 500 on a loaded 2-core machine, ~20x that at 10,000), which would take
# `make bench` far past its 19-45 minutes; bench/README.md gives the `bench/scale.py --only ...` run that
# measures them beside chainreact.
SCALE_FRAMEWORKS = ("chainreact",)
SCALE_BUDGET_S = 300.0
# The figures of a runner's result that are combined over rounds (median, spread); the rest is the first
# round's (versions, notes) or, for `partial`, true when any round hit the build's time budget.
FIGURES = ("cpu_per_request_ms", "wall_per_run_ms", "peak_rss_mb", "wall_s", "cpu_per_agent_us",
           "wall_per_agent_us", "kib_per_agent", "agents")
LATENCY = 0.1  # seconds per request in the concurrent workload


def machine() -> dict[str, Any]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "load_avg_start": list(os.getloadavg())}


def run_workload(fw: str, workload: str, cfg: dict[str, Any]) -> dict[str, Any]:
    if workload == "concurrent":
        args = ["--runs", str(cfg["conc_runs"]), "--reps", str(cfg["conc_reps"]), "--warmup", "1"]
    elif workload == "build":
        args = ["--agents", str(cfg["agents"]), "--budget", str(cfg["build_budget"])]
    else:
        args = ["--runs", str(cfg["runs"]), "--reps", str(cfg["reps"]), "--warmup", str(cfg["warmup"])]
    t0 = time.perf_counter()
    with Server.start(latency=LATENCY if workload == "concurrent" else 0.0) as srv:
        result = run_runner(fw, srv.url, workload, args, timeout=600)
        counts = srv.stop()
    result["server_counts"] = counts
    result["elapsed_s"] = time.perf_counter() - t0
    problems = verify(result, counts)
    if problems:
        result["status"] = "failed"
        result["reason"] = "; ".join(problems)
    return result


def run_ttft(cfg: dict[str, Any]) -> dict[str, Any]:
    import subprocess

    from procs import MARKER, PYTHON, ROOT, bench_env

    with Server.start(steps=0, chunk_delay=0.005) as srv:
        cp = subprocess.run([PYTHON, str(BENCH / "ttft.py"), "--url", srv.url, "--iterations",
                             str(cfg["ttft_iterations"])], capture_output=True, text=True, timeout=600,
                            env=bench_env(), cwd=ROOT)
        counts = srv.stop()
    for line in reversed(cp.stdout.splitlines()):
        if line.startswith(MARKER):
            out: dict[str, Any] = json.loads(line[len(MARKER):])
            out["server_counts"] = counts
            if out.get("status") == "ok" and counts.get("non_streamed", 1) != 0:
                out.update(status="failed", reason=f"server saw non-streaming requests: {counts}")
            return out
    return {"status": "error", "reason": f"ttft exited {cp.returncode}: {cp.stderr[-1500:]}"}


def run_flows(quick: bool) -> dict[str, Any]:
    """bench/flows.py (chat-flow turn overhead against stored history) in its own process."""
    import subprocess
    import tempfile

    from procs import PYTHON, ROOT, bench_env

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "flows.json"
        cmd = [PYTHON, str(BENCH / "flows.py"), "--json", str(out), *(["--quick"] if quick else [])]
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=bench_env(), cwd=ROOT)
        if not out.exists():
            return {"status": "error", "reason": f"flows.py exited {cp.returncode}: {cp.stderr[-1500:]}"}
        result: dict[str, Any] = json.loads(out.read_text())
    if result.get("problems"):
        result["reason"] = "; ".join(result["problems"])
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/run", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="few runs: checks the suite works, numbers are rough")
    p.add_argument("--rounds", type=int, help="rounds interleaving the frameworks (default 3; --quick: 1)")
    p.add_argument("--only", default="", help=f"comma list of frameworks: {', '.join(FRAMEWORKS)}")
    p.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma list of {', '.join(WORKLOADS)}")
    p.add_argument("--no-docs", action="store_true", help="don't write docs/performance.md and charts")
    p.add_argument("--out", type=Path, default=BENCH / "results", help="directory for the JSON results")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in FRAMEWORKS]
    workloads = [s.strip() for s in args.workloads.split(",") if s.strip()]
    bad_w = [w for w in workloads if w not in WORKLOADS]
    if unknown or bad_w:
        print(f"bench/run: unknown framework(s) {unknown} / workload(s) {bad_w}; "
              f"frameworks: {', '.join(FRAMEWORKS)}; workloads: {', '.join(WORKLOADS)}", file=sys.stderr)
        return 2
    fws = only or list(FRAMEWORKS)
    cfg = dict(QUICK if args.quick else FULL)
    if args.rounds is not None:
        cfg["rounds"] = max(1, args.rounds)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "meta": {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "quick": args.quick,
                 "settings": cfg, "latency_s": LATENCY, "machine": machine()},
        "frameworks": {fw: {} for fw in fws},
    }
    rounds: dict[tuple[str, str], list[dict[str, Any]]] = {}
    imp_rounds: list[dict[str, Any]] = []
    ttft_rounds: list[dict[str, Any]] = []
    for rnd in range(int(cfg["rounds"])):  # A B C A B C ...: each round runs every framework once
        for workload in workloads:
            if workload not in RUNNER_WORKLOADS:  # the others have their own scripts, below
                continue
            for fw in fws:
                print(f"[bench] round {rnd + 1} {workload:<10} {FRAMEWORKS[fw]:<16}", end=" ", flush=True)
                r = run_workload(fw, workload, cfg)
                rounds.setdefault((fw, workload), []).append(r)
                print(_summary(workload, r), flush=True)
        # Imports and time to first text are measured once per round too, so they have a spread.
        if "imports" in workloads:
            print(f"[bench] round {rnd + 1} imports", flush=True)
            imp_rounds.append(imports.measure(int(cfg["import_repeat"]), {FRAMEWORKS[f] for f in fws}))
        if "ttft" in workloads and "chainreact" in fws:
            print(f"[bench] round {rnd + 1} time to first text delta", flush=True)
            ttft_rounds.append(run_ttft(cfg))
            print("        " + _ttft_summary(ttft_rounds[-1]), flush=True)
    for (fw, workload), rs in rounds.items():
        results["frameworks"][fw][workload] = combine(rs)
    if imp_rounds:
        results["imports"] = combine_imports(imp_rounds)
    if ttft_rounds:
        results["ttft"] = combine_ttft(ttft_rounds)
    if "flows" in workloads and "chainreact" in fws:
        print("[bench] chat-flow turn overhead against stored messages", flush=True)
        results["flows"] = run_flows(args.quick)
        f = results["flows"]
        line = (", ".join(f"{n} stored: {v:.2f} ms CPU/turn" for n, v in f["cpu_per_turn_ms"].items())
                if f.get("status") == "ok" else f"{f.get('status')}: {f.get('reason')}")
        print("        " + line, flush=True)
    if "server" in workloads and {"chainreact", "agno"} & set(fws):
        import server_bench  # chainreact serve against agno's AgentOS (its own section of the doc)

        print("[bench] server overhead", flush=True)
        results["server"] = server_bench.measure(
            dict(server_bench.QUICK if args.quick else server_bench.FULL, quick=args.quick),
            [f for f in server_bench.FRAMEWORKS if f in fws])
        server_bench.print_summary(results["server"])  # the target lines: added TTFT and CPU
    if "durable" in workloads and set(fws) & {"chainreact", "pydantic_ai", "openai_agents"}:
        import durable_bench  # durable runs on Temporal against the peers' integrations (own section)

        print("[bench] durable runs (Temporal)", flush=True)
        results["durable"] = durable_bench.measure(
            dict(durable_bench.QUICK if args.quick else durable_bench.FULL, quick=args.quick),
            [f for f in durable_bench.FRAMEWORKS  # chainreact: with and without the workflow sandbox
             if f in fws or (f == "chainreact_sandboxed" and "chainreact" in fws)])
    if "scale" in workloads and set(fws) & set(SCALE_FRAMEWORKS):
        print("[bench] scale: runs in flight in one process", flush=True)
        results["scale"] = scale.measure(
            scale.QUICK if args.quick else dict(scale.FULL, budget_s=SCALE_BUDGET_S),
            [f for f in SCALE_FRAMEWORKS if f in fws])
    results["meta"]["duration_s"] = time.perf_counter() - started
    results["meta"]["machine"]["load_avg_end"] = list(__import__("os").getloadavg())
    failures = _failures(results)
    results["failures"] = failures

    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for name in (f"{stamp}.json", "latest.json"):
        tmp = args.out / (name + ".tmp")
        tmp.write_text(json.dumps(results, indent=1))
        tmp.replace(args.out / name)  # never a half-written results file
    print(f"[bench] results: {args.out / (stamp + '.json')} ({results['meta']['duration_s']:.0f} s)")
    if failures:
        print("[bench] FAILED: these did not complete every run as scripted:", file=sys.stderr)
        for f in failures:
            print(f"  - {f}", file=sys.stderr)
        print("[bench] docs/performance.md left unchanged (a failed run must not look fast)", file=sys.stderr)
        return 1
    if not args.no_docs:
        import report

        written = report.write(results)
        if results.get("flows", {}).get("status") == "ok":
            import flows

            written += flows.write_docs(results["flows"])
        if "server" in results:
            import server_report

            written += server_report.write(results["server"])
        if "durable" in results:
            import durable_report

            written += durable_report.write(results["durable"])
        if "scale" in results:
            import scale_report

            written.append(scale_report.write(results["scale"]))
        print(f"[bench] wrote {', '.join(str(p) for p in written)}")
    return 0


def _median_of(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    """The first row with each key's median over the rows, and `spread[key]` (stats.spread)."""
    out = dict(rows[0], spread={})
    for key in keys:
        sp = stats.spread(r.get(key) for r in rows)
        if sp is not None:
            out[key] = sp["median"]
            out["spread"][key] = sp
    return out


def combine_imports(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """imports.measure once per round -> each figure's median over the rounds with its spread."""
    out = dict(rounds[-1])
    out["rounds"] = len(rounds)
    out["imports"] = {}
    for name, first in rounds[0]["imports"].items():
        rows = [r["imports"].get(name) or {} for r in rounds]
        ok = all(r.get("status") == "ok" for r in rows)
        out["imports"][name] = _median_of(rows, ("ms", "cpu_ms")) if ok else next(
            (r for r in rows if r.get("status") != "ok"), first)
    for key in ("cli_help", "python_startup"):
        rows = [r[key] for r in rounds if key in r]
        if len(rows) == len(rounds):
            out[key] = _median_of(rows, ("ms", "cpu_ms"))
    return out


def combine_ttft(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """ttft.py once per round -> raw and per-variant medians over the rounds with their spread; a round that
    did not complete is the result (never averaged away)."""
    bad = next((r for r in rounds if r.get("status") != "ok"), None)
    if bad is not None:
        return bad
    out = _median_of(rounds, ("raw_ms",))
    out["rounds"] = len(rounds)
    out["variants"] = {name: _median_of([r["variants"][name] for r in rounds], ("ttft_ms", "overhead_ms"))
                       for name in rounds[0]["variants"]}
    return out


def combine(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One (framework, workload) over its rounds: the first round that did not complete (a failure is never
    averaged away), else the first round's result with each figure replaced by its median over the rounds
    and `spread[figure]` = stats.spread (median, lowest, highest, every round's value)."""
    bad = next((r for r in rounds if r.get("status") != "ok"), None)
    if bad is not None:
        return dict(bad, rounds_run=len(rounds))
    out = dict(rounds[0])
    out["spread"] = {}
    for key in FIGURES:
        s = stats.spread(r.get(key) for r in rounds)
        if s is not None and all(key in r for r in rounds):
            out[key] = s["median"]
            out["spread"][key] = s
    if any("partial" in r for r in rounds):
        out["partial"] = any(r.get("partial") for r in rounds)
    out["rounds_run"] = len(rounds)
    out["elapsed_s"] = sum(r.get("elapsed_s", 0.0) for r in rounds)
    return out


def _failures(results: dict[str, Any]) -> list[str]:
    out = []
    for fw, per in results["frameworks"].items():
        for workload, r in per.items():
            if r.get("status") in ("failed", "error"):
                out.append(f"{FRAMEWORKS[fw]} / {workload}: {r.get('reason')}")
    t = results.get("ttft")
    if t and t.get("status") != "ok":
        out.append(f"ttft: {t.get('reason')}")
    f = results.get("flows")
    if f and f.get("status") != "ok":
        out.append(f"flows: {f.get('reason')}")
    out += [f"server: {why}" for why in (results.get("server") or {}).get("failures", [])]
    out += [f"durable: {why}" for why in (results.get("durable") or {}).get("failures", [])]
    out += [f"scale: {why}" for why in (results.get("scale") or {}).get("failures", [])]
    return out


def _summary(workload: str, r: dict[str, Any]) -> str:
    st = r.get("status")
    if st != "ok":
        return f"{st}: {r.get('reason')}"
    if workload == "build":
        return (f"{r['cpu_per_agent_us']:.0f} us CPU/agent, {r['kib_per_agent']:.1f} KiB/agent"
                f"{' (partial)' if r['partial'] else ''}  [{r['elapsed_s']:.0f} s]")
    if workload == "concurrent":
        return (f"wall {r['wall_s']:.2f} s, {r['cpu_per_request_ms']:.2f} ms CPU/req, "
                f"peak RSS {r['peak_rss_mb']:.0f} MB  [{r['elapsed_s']:.0f} s]")
    return (f"{r['cpu_per_request_ms']:.2f} ms CPU/req, peak RSS {r['peak_rss_mb']:.0f} MB  "
            f"[{r['elapsed_s']:.0f} s]")


def _ttft_summary(t: dict[str, Any]) -> str:
    if t.get("status") != "ok":
        return f"{t.get('status')}: {t.get('reason')}"
    parts = [f"raw {t['raw_ms']:.2f} ms"]
    parts += [f"{n}: {v['overhead_ms']:+.2f} ms" for n, v in t["variants"].items()]
    return ", ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
