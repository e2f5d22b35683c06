"""The embedded model's latency on this machine: docs/local-model.md's "Latency" table.

    python bench/local_latency.py [--rounds 5] [--json]

Per round, in this order: a fresh llama.cpp server started until `GET /v1/models` answers 200; on it a
text reply of 32 and one of 128 tokens (non-streaming, temperature 0, `max_tokens` 32 or 128; the token
count the server reports is printed at the end, since a reply may stop early); one bench task
(bench/local_model.py's first sum: a tool call, the tool, the answer); the server stopped; then
`chainreact run examples/demo-agent.json "What is 17 + 25? Use the add tool."` end to end in a fresh
process (its own server start included). Published: median [lowest-highest round].
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stats

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo-agent.json"
PROMPT = "Write a short story about a lighthouse keeper and a storm."


async def reply(base: str, model: str, tokens: int) -> tuple[float, int]:
    import httpx

    body = {"model": model, "temperature": 0, "max_tokens": tokens,
            "messages": [{"role": "user", "content": PROMPT}]}
    async with httpx.AsyncClient(timeout=300) as client:
        t0 = time.perf_counter()
        r = await client.post(f"{base}/chat/completions", json=body)
        took = time.perf_counter() - t0
    r.raise_for_status()
    return took, int(r.json()["usage"]["completion_tokens"])


async def one_round() -> dict[str, Any]:
    import local_model

    from chainreact.local import server as local

    srv = local.LocalServer(model_path=local.find_model_path())
    t0 = time.perf_counter()
    srv.start()
    try:
        await srv.wait_ready()
        out: dict[str, Any] = {"start_s": time.perf_counter() - t0}
        out["reply32_s"], out["reply32_tokens"] = await reply(srv.base_url, srv.model_name, 32)
        out["reply128_s"], out["reply128_tokens"] = await reply(srv.base_url, srv.model_name, 128)
        os.environ[local.LOCAL_URL_ENV] = srv.base_url  # the task's agent uses this server
        try:
            row = await local_model.run_task(local_model.TASKS[0], all_tools=False)
        finally:
            os.environ.pop(local.LOCAL_URL_ENV, None)
        if not row["ok"]:
            raise RuntimeError(f"the bench task failed: {row}")
        out["task_s"] = row["seconds"]
    finally:
        srv.stop()
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    cli = [sys.executable, "-m", "chainreact", "run", str(DEMO), "What is 17 + 25? Use the add tool."]
    t0 = time.perf_counter()
    done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=300, check=False)
    out["demo_s"] = time.perf_counter() - t0
    if done.returncode != 0 or "42" not in done.stdout:
        raise RuntimeError(f"the demo run failed (exit {done.returncode}): {done.stdout[-300:]} "
                           f"{done.stderr[-300:]}")
    return out


ROWS = (("start_s", "Server start to healthy (`GET /v1/models` 200)"),
        ("reply32_s", "Text reply, 32 tokens, non-streaming"),
        ("reply128_s", "Text reply, 128 tokens, non-streaming"),
        ("task_s", "A bench task: tool call, tool, answer (2 model calls)"),
        ("demo_s", "`chainreact run examples/demo-agent.json …` end to end (a fresh process, server start "
                   "included)"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    load = os.getloadavg()[0]
    rounds = []
    for i in range(args.rounds):
        rounds.append(asyncio.run(one_round()))
        print(f"[local-latency] round {i + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in rounds[-1].items()),
              file=sys.stderr, flush=True)
    summary = {k: stats.spread(r[k] for r in rounds) for k, _ in ROWS}
    if args.json:
        print(json.dumps({"rounds": rounds, "summary": summary}, indent=1))
        return 0
    print(f"{args.rounds} rounds, load average {load:.1f} / {os.getloadavg()[0]:.1f} (start / end), "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print("| What | Time, s |\n|---|---|")
    for key, what in ROWS:
        print(f"| {what} | {stats.fmt(summary[key])} |")
    toks = sorted({r['reply32_tokens'] for r in rounds} | {r['reply128_tokens'] for r in rounds})
    print(f"\ncompletion tokens reported: {toks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
