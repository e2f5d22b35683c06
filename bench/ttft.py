"""Time to the first text delta: chainreact per streamToolCallCheck mode against the raw stream.

    python bench/ttft.py --url URL [--iterations 40]

The server (started by the suite with `--steps 0 --chunk-delay 0.005`) answers every request with a
streamed plain text in ~20 paced chunks. Per iteration, in the same process, in a shuffled order so drift
hits every variant alike: a bare httpx read of the same request's raw bytes (the raw stream) and chainreact
in each mode. Each measures from the request's start to the first non-empty text; the overhead is the
variant's median minus the raw median. By design `drain` waits for the whole stream and `auto` with tools
holds text for its window (0.5 s) or until the stream ends, whichever is first; `firstContent` releases
the first text at once. Prints `BENCH_RESULT {json}`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "frameworks"))
import _harness as h
from run_bare_httpx import TOOLS

VARIANTS = {  # name -> (streamToolCallCheck, tools configured)
    "firstContent, tools": ("firstContent", True),
    "drain, tools": ("drain", True),
    "auto, tools": ("auto", True),
    "no tools": ("", False),
}


async def raw_first_text(client: Any, with_tools: bool) -> float:
    body: dict[str, Any] = {"model": "fake-model", "stream": True,
                            "messages": [{"role": "system", "content": h.SYSTEM_PROMPT},
                                         {"role": "user", "content": h.PROMPT}]}
    if with_tools:
        body["tools"] = TOOLS
    t0 = time.perf_counter()
    first: float | None = None
    buf = b""
    async with client.stream("POST", "/chat/completions", json=body) as r:
        # Raw bytes split on event boundaries: the least work that can find the first text delta.
        async for data in r.aiter_raw():
            if first is not None:
                continue
            buf += data
            *events, buf = buf.split(b"\n\n")
            for ev in events:
                payload = ev.partition(b"data:")[2].strip()
                if not payload or payload == b"[DONE]":
                    continue
                for ch in json.loads(payload).get("choices") or ():
                    if (ch.get("delta") or {}).get("content"):
                        first = time.perf_counter() - t0
                        break
                if first is not None:
                    break
    if first is None:
        raise RuntimeError("raw stream carried no text")
    return first


async def agent_first_text(agent: Any) -> tuple[float, str]:
    t0 = time.perf_counter()
    first: float | None = None
    final = ""
    async for ev in agent.stream(h.PROMPT):
        if first is None and ev.type == "text_delta" and ev.text:
            first = time.perf_counter() - t0
        elif ev.type == "final":
            final = ev.content
    if first is None:
        raise RuntimeError("the agent streamed no text delta")
    return first, final


async def main_async(url: str, iterations: int, warmup: int) -> dict[str, Any]:
    import httpx

    from chainreact.agent import Agent
    from chainreact.tools import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return h.add(a, b)

    agents = {name: Agent(name="ttft", instruction=h.SYSTEM_PROMPT, url=url, model="fake-model", key="x",
                          tools=[add] if with_tools else [], stream_tool_call_check=mode)
              for name, (mode, with_tools) in VARIANTS.items()}
    samples: dict[str, list[float]] = {"raw": [], **{n: [] for n in VARIANTS}}
    answers_ok = 0
    answers = 0
    async with httpx.AsyncClient(base_url=url, headers={"authorization": "Bearer x"}, timeout=60) as client:
        order = ["raw", *agents]
        for i in range(warmup + iterations):
            # A fixed order would favour whichever variant always runs right after another one.
            random.Random(i).shuffle(order)
            row = {}
            for name in order:
                if name == "raw":
                    row[name] = await raw_first_text(client, True)
                    continue
                row[name], final = await agent_first_text(agents[name])
                answers += 1
                answers_ok += final.startswith("All 0 tool steps are done")
            if i >= warmup:
                for name, v in row.items():
                    samples[name].append(v)
    for agent in agents.values():
        await agent.aclose()
    raw_med = statistics.median(samples["raw"])
    out: dict[str, Any] = {"raw_ms": raw_med * 1e3, "iterations": iterations, "variants": {},
                           "answers": answers, "answers_ok": answers_ok}
    for name, (mode, with_tools) in VARIANTS.items():
        med = statistics.median(samples[name])
        out["variants"][name] = {"mode": mode or "auto", "tools": with_tools, "ttft_ms": med * 1e3,
                                 "overhead_ms": (med - raw_med) * 1e3}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description="time to first text delta per streamToolCallCheck mode")
    p.add_argument("--url", required=True)
    p.add_argument("--iterations", type=int, default=40)
    p.add_argument("--warmup", type=int, default=3)
    args = p.parse_args()
    try:
        result = {"status": "ok", **asyncio.run(main_async(args.url, args.iterations, args.warmup))}
        if result["answers_ok"] != result["answers"]:
            result.update(status="error", reason=f"{result['answers_ok']}/{result['answers']} runs returned "
                                                 "the scripted answer")
    except Exception as e:
        result = {"status": "error", "reason": f"{type(e).__name__}: {e}"}
    print(h.MARKER + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
