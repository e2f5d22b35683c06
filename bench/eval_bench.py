"""Evals of 200 cases against the scripted model: `chainreact eval` (chainreact.evals) against pydantic-evals.

    .venv/bin/python bench/eval_bench.py [--cases 200] [--concurrency 4] [--rounds 3] [--only ...]

Every case asks the agent to add with its `add` tool and report the total; the scripted server
(bench/server.py, its own process) answers one tool call, then the final text: 2 model requests a case.
Each case has the same two checks in both harnesses: the answer contains the scripted final text, and the
`add` tool was called. Variants, each a fresh process per round, rounds interleaved:

- `chainreact`: `run_eval(cases, AgentTarget(agent))`, the chainreact agent of the suite
  (bench/frameworks/run_chainreact.py); checks `contains` and `tool_called` (from the case's recording);
- `pydantic-evals`: `Dataset.evaluate(task)` with the suite's Pydantic AI agent as the task
  (bench/frameworks/run_pydantic_ai.py); `Contains` and an evaluator over the tools the run called (read
  from its messages): each harness with its own framework's agent;
- `pydantic-evals+chainreact`: pydantic-evals running the chainreact agent: the harness alone compared.

Measured in the client process: wall time (cases per second) and CPU (`time.process_time`) per case,
`max_concurrency`/`concurrency` cases at a time; every case must pass, else the run fails. Results:
printed, and bench/results/eval_bench.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "frameworks"))

VARIANTS = ("chainreact", "pydantic-evals", "pydantic-evals+chainreact")
ANSWER = "All 1 tool steps are done"  # the scripted final text (chainreact.testing.responders)


def prompts(n: int) -> list[str]:
    return [f"Case {i}: add the numbers with the add tool and report the total." for i in range(n)]


async def run_chainreact(url: str, n: int, concurrency: int) -> tuple[int, float, float]:
    import run_chainreact

    from chainreact.evals import AgentTarget, Case, run_eval

    adapter = run_chainreact.adapter()
    agent = adapter.make_agent(url, False)
    expect = {"contains": ANSWER, "tool_called": "add"}
    cases = [Case(f"case {i}", p, expect, i) for i, p in enumerate(prompts(n))]
    await run_eval(cases[:4], AgentTarget(agent), concurrency=concurrency)  # warm-up: connections, imports
    c0, w0 = time.process_time(), time.perf_counter()
    result = await run_eval(cases, AgentTarget(agent), concurrency=concurrency)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    assert adapter.aclose is not None
    await adapter.aclose(agent)
    return result.passed, cpu, wall


async def run_pydantic_evals(url: str, n: int, concurrency: int, own_agent: bool) -> tuple[int, float, float]:
    from dataclasses import dataclass

    from pydantic_evals import Case, Dataset
    from pydantic_evals.evaluators import Contains, Evaluator, EvaluatorContext

    @dataclass
    class ToolCalled(Evaluator[str, dict[str, Any]]):
        name: str = "add"

        def evaluate(self, ctx: EvaluatorContext[str, dict[str, Any]]) -> bool:
            return self.name in ctx.output["tools"]

    if own_agent:
        import run_pydantic_ai
        from pydantic_ai.messages import ToolCallPart

        agent = run_pydantic_ai.adapter().make_agent(url, False)

        async def task(prompt: str) -> dict[str, Any]:
            result = await agent.run(prompt)
            tools = [p.tool_name for m in result.all_messages() for p in m.parts
                     if isinstance(p, ToolCallPart)]
            return {"answer": str(result.output), "tools": tools}
        close = None
    else:
        import run_chainreact

        adapter = run_chainreact.adapter()
        cr_agent = adapter.make_agent(url, False)

        async def task(prompt: str) -> dict[str, Any]:
            result = await cr_agent.run(prompt)
            tools = [c.name for m in result.messages if m.tool_calls for c in m.tool_calls]
            return {"answer": result.content, "tools": tools}
        close = adapter.aclose

    def dataset(ps: list[str]) -> Any:
        return Dataset(name="bench", cases=[Case(name=f"case {i}", inputs=p) for i, p in enumerate(ps)],
                       evaluators=[Contains(value=ANSWER, as_strings=True), ToolCalled()])

    await dataset(prompts(4)).evaluate(task, max_concurrency=concurrency, progress=False)  # warm-up
    ds = dataset(prompts(n))
    c0, w0 = time.process_time(), time.perf_counter()
    report = await ds.evaluate(task, max_concurrency=concurrency, progress=False)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    passed = sum(1 for c in report.cases if all(a.value is True for a in c.assertions.values()))
    if close is not None:
        await close(cr_agent)
    return passed, cpu, wall


def child(args: argparse.Namespace) -> None:
    if args.variant == "chainreact":
        res = asyncio.run(run_chainreact(args.url, args.cases, args.concurrency))
    else:
        res = asyncio.run(run_pydantic_evals(args.url, args.cases, args.concurrency,
                                             own_agent=args.variant == "pydantic-evals"))
    passed, cpu, wall = res
    print("RESULT " + json.dumps({"passed": passed, "cpu_s": cpu, "wall_s": wall}), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default=",".join(VARIANTS))
    p.add_argument("--out", default=str(BENCH / "results"), help="folder for eval_bench.json")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--variant", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return 0
    from procs import PYTHON, ROOT, Server, bench_env

    variants = [v for v in args.only.split(",") if v]
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    failed = False
    srv = Server.start(steps=1)
    try:
        for _ in range(args.rounds):
            for v in variants:  # interleaved: a busy spell of the machine hits every variant
                cmd = [PYTHON, __file__, "--child", "--variant", v, "--url", srv.url,
                       "--cases", str(args.cases), "--concurrency", str(args.concurrency)]
                out = subprocess.run(cmd, capture_output=True, text=True, env=bench_env(), cwd=ROOT)
                line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
                if line is None:
                    print(f"{v}: {out.stderr[-3000:]}", file=sys.stderr)
                    failed = True
                    continue
                r = json.loads(line[7:])
                failed |= r["passed"] != args.cases
                results[v].append(r)
    finally:
        srv.stop()
    import stats

    summary: dict[str, Any] = {"cases": args.cases, "concurrency": args.concurrency, "variants": {}}
    base = results.get("chainreact") or []
    print(f"median of {args.rounds} rounds [lowest-highest]; x chainreact: the median of each round's ratio")
    for v, rs in results.items():
        if not rs:
            continue
        rate = stats.spread(args.cases / r["wall_s"] for r in rs)
        cpu = stats.spread(r["cpu_s"] / args.cases * 1e3 for r in rs)
        ratio = stats.ratios((r["cpu_s"], b["cpu_s"]) for r, b in zip(rs, base, strict=False))
        summary["variants"][v] = {"cases_per_s": rate, "cpu_ms_per_case": cpu, "x_chainreact": ratio,
                                  "rounds": rs}
        print(f"{v:28} {stats.fmt(rate, 1)} cases/s, {stats.fmt(cpu, 2)} CPU ms/case, "
              f"{stats.fmt(ratio, 2, 'x')} chainreact's; passed {min(r['passed'] for r in rs)}")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "eval_bench.json").write_text(json.dumps(summary, indent=1))
    if failed:
        print("some cases did not pass as scripted", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
