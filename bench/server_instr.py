"""Server overhead in instructions: what serving an agent adds, counted by valgrind's callgrind.

    python bench/server_instr.py [--only chainreact,agno] [--runs 20] [--warmup 5]
    (also `python bench/server_bench.py --instr`, which puts the figures in docs/performance.md)

The wall-clock and CPU-time figures of bench/server_bench.py move with the machine's load; instruction
counts do not. For each framework, in fresh processes under `valgrind --tool=callgrind` (instrumentation
switched on only for the measured runs): the serving process while it answers `--runs` streamed requests
one after another, and a worker running the same agent in-process as many times. Both against the
scripted model server (bench/server.py, native). Reported: instructions per request served, per run
in-process, and the difference (what the server adds: HTTP, routing, the registry, SSE encoding...).
Every answer is checked. Needs valgrind (Debian: apt-get install valgrind); takes a few minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "frameworks"))
import _harness as h
from procs import BENCH, MARKER, PYTHON, ROOT, Server, bench_env

FRAMEWORKS = ("chainreact", "agno")
VALGRIND = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null"]


def _control(pid: int, *args: str) -> str:
    cp = subprocess.run(["callgrind_control", *args, str(pid)], capture_output=True, text=True, timeout=300)
    return cp.stdout


def _count(pid: int) -> int:
    """Instructions counted since the counters were zeroed, all threads."""
    out = _control(pid, "-e", "Ir")
    counts = [int(m.replace(",", "")) for m in re.findall(r"^\s*Th\s+\d+\s+([\d,]+)", out, re.M)]
    if not counts:
        raise RuntimeError(f"callgrind_control gave no counts for pid {pid}: {out[-500:]}")
    return sum(counts)


class Counted:
    """Switches counting on for a block and reads the instructions it took."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.instructions = 0

    def __enter__(self) -> Counted:
        _control(self.pid, "-i", "on")
        _control(self.pid, "-z")
        return self

    def __exit__(self, *exc: object) -> None:
        self.instructions = _count(self.pid)
        _control(self.pid, "-i", "off")


def served(framework: str, model_url: str, folder: Path, runs: int, warmup: int,
           serve_args: list[str] | None = None) -> dict[str, Any]:
    import server_bench as sb
    import server_load as sl

    port = sb._port()
    if framework == "chainreact":
        cmd = [*VALGRIND, PYTHON, "-m", "chainreact", "serve", str(folder), "--port", str(port),
               "--global", f"url={model_url}", "--no-watch", *(serve_args or [])]
        health = "/readyz"
    else:
        cmd = [*VALGRIND, PYTHON, str(BENCH / "server_load.py"), "agentos", "--url", model_url,
               "--port", str(port)]
        health = "/health"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=bench_env(), cwd=ROOT)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_healthy(proc, base + health)
        run = sl.client_run(framework, base)
        checker = h.Checker()

        async def go(n: int) -> None:
            for _ in range(n):
                _, text = await run()
                checker.check(text)

        async def both() -> int:
            await go(warmup)
            with Counted(proc.pid) as c:
                await go(runs)
            return c.instructions

        instructions = asyncio.run(both())
    finally:
        err = sb.stop_server(proc)
    if checker.ok != runs + warmup or "Traceback" in err:
        raise RuntimeError(f"{framework} served: {checker.ok}/{runs + warmup} answers right "
                           f"({checker.first_problem}); {err[-800:]}")
    return {"instructions": instructions, "runs": runs}


def _wait_healthy(proc: subprocess.Popen[str], url: str) -> None:
    import httpx

    deadline = time.monotonic() + 600  # the interpreter starts slowly under valgrind
    while True:
        try:
            if httpx.get(url, timeout=30).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            raise RuntimeError(f"the server under valgrind did not come up: {err[-1500:]}")
        time.sleep(0.5)


def inproc(framework: str, model_url: str, folder: Path, runs: int, warmup: int) -> dict[str, Any]:
    """The worker (this file's `worker` role) under callgrind: warm-up runs, then it waits for a line on
    stdin, runs `runs` runs, and prints how many answers were right."""
    cmd = [*VALGRIND, PYTHON, __file__, "worker", framework, model_url, str(folder), str(runs), str(warmup)]
    instructions, ok = counted_worker(cmd, "in-process worker")
    if ok != runs:
        raise RuntimeError(f"{framework} in-process: {ok}/{runs} answers right")
    return {"instructions": instructions, "runs": runs}


def counted_worker(cmd: list[str], what: str) -> tuple[int, int]:
    """A worker under callgrind that prints "ready" after its warm-up, runs when a line arrives on stdin,
    prints MARKER {"ok": N} and waits for another line before it closes and exits: the instructions its
    runs took, and N (its right answers)."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=bench_env(), cwd=ROOT)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"{what} failed: {proc.communicate()[1][-1500:]}")
        with Counted(proc.pid) as c:
            proc.stdin.write("go\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        # The worker waits for this before it closes anything: a count read while its main thread was
        # already exiting missed that thread's instructions (0.1 M per run instead of 10.8 M, at random).
        _, err = proc.communicate("stop\n", timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    if not line.startswith(MARKER):
        raise RuntimeError(f"{what} failed: {err[-1500:]}")
    return c.instructions, int(json.loads(line[len(MARKER):])["ok"])


def worker(framework: str, model_url: str, folder: str, runs: int, warmup: int) -> None:
    import server_load as sl

    run, close = sl.inproc_run(framework, model_url, folder)
    checker = h.Checker()

    async def go() -> None:
        for _ in range(warmup):
            await run()
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        for _ in range(runs):
            _, text = await run()
            checker.check(text)
        print(MARKER + json.dumps({"ok": checker.ok}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # counted: may close
        await close()

    asyncio.run(go())


def measure(frameworks: list[str], runs: int = 20, warmup: int = 5,
            serve_args: list[str] | None = None, repeat: int = 3) -> dict[str, Any]:
    """{framework: {inproc_per_run, served_per_request, added} in instructions: medians over `repeat`
    measurements in fresh processes, the frameworks taking turns, with `spread` per figure}, or
    {framework: {status, reason}} for one that could not be measured."""
    import server_bench as sb
    import stats

    out: dict[str, Any] = {"runs": runs, "repeat": repeat, "frameworks": {}}
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        out["error"] = "valgrind is not installed"
        return out
    each: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="chainreact-server-instr-") as tmp:
        folder = sb.write_agent(Path(tmp) / "agent")
        for rnd in range(repeat):  # A B A B: the frameworks take turns
            for fw in frameworks:
                if fw in out["frameworks"]:  # n/a or failed: not measured again
                    continue
                why = sb.available(fw)
                if why:
                    out["frameworks"][fw] = {"status": "n/a", "reason": why}
                    continue
                try:
                    with Server.start(steps=h.STEPS) as model:
                        ip = inproc(fw, model.url, folder, runs, warmup)
                        sv = served(fw, model.url, folder, runs, warmup, serve_args)
                        model.stop()
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    out["frameworks"][fw] = {"status": "error", "reason": str(e)}
                    continue
                a, b = ip["instructions"] / runs, sv["instructions"] / runs
                each.setdefault(fw, []).append({"inproc_per_run": a, "served_per_request": b, "added": b - a})
                print(f"[server-instr] {rnd + 1}/{repeat} {fw:<10} instructions: in-process {a / 1e6:.2f} "
                      f"M/run, served {b / 1e6:.2f} M/request, added {(b - a) / 1e6:+.2f} M", flush=True)
    for fw, rows in each.items():
        if fw in out["frameworks"]:
            continue
        spread = {k: stats.spread(r[k] for r in rows) for k in rows[0]}
        out["frameworks"][fw] = {"status": "ok", **{k: v["median"] for k, v in spread.items() if v},
                                 "spread": spread}
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        fw, url, folder, runs, warmup = argv[1:6]
        worker(fw, url, folder, int(runs), int(warmup))
        return 0
    p = argparse.ArgumentParser(prog="bench/server_instr.py", description=__doc__.splitlines()[0])
    p.add_argument("--only", default="chainreact", help="comma list of: chainreact, agno")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeat", type=int, default=3, help="measurements in fresh processes (median, spread)")
    p.add_argument("--serve-args", default="", help="more arguments of `chainreact serve`, e.g. "
                                                    "'--loop asyncio --http h11'")
    a = p.parse_args(argv)
    fws = [s.strip() for s in a.only.split(",") if s.strip()]
    res = measure(fws, a.runs, a.warmup, a.serve_args.split(), a.repeat)
    print(json.dumps(res, indent=1))
    return 1 if res.get("error") or any(r.get("status") != "ok" for r in res["frameworks"].values()) else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
