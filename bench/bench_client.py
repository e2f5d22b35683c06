"""Model-client overhead: CPU per request and per SSE chunk, and 500 concurrent streams.

Compares, in one process run and against the same scripted server (FakeLLM in ANOTHER process, so only
client CPU is measured with time.process_time):
  - bare:      a minimal httpx loop (POST, iterate lines, orjson each `data:` line, join the text)
  - chainreact: ModelClient.call (streaming) / ModelClient.complete (non-streaming)
  - openai:    the official SDK's AsyncOpenAI with the same requests
Per-chunk cost is the slope between a 10-chunk and a 200-chunk stream; per-request cost is the
non-streaming call. Then 500 concurrent streaming requests: wall time and client CPU for bare httpx with
its default pool, bare httpx with large limits, and chainreact.

    .venv/bin/python bench/bench_client.py [--requests 40] [--rounds 8] [--concurrency 500]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

from chainreact.config import AgentConfig
from chainreact.llm import ModelClient
from chainreact.types import Message

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stats

PROMPT = [{"role": "user", "content": "Tell me a story."}]
WORDS = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do",
         "eiusmod", "tempor"]


def story(n_words: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(n_words))


class Server:
    """`python -m chainreact.testing.cli --script F --loop` in a subprocess; stdout line 1 is the URL."""

    def __init__(self, turn: dict[str, Any]) -> None:
        fd, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump([turn], f)
        self.script = path
        cmd = [sys.executable, "-m", "chainreact.testing.cli", "--script", path, "--loop"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            raise RuntimeError(f"fake server did not start: {self.url!r}")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        os.unlink(self.script)


# --- the three clients -------------------------------------------------------------------------------

def bare_body(stream: bool) -> bytes:
    body: dict[str, Any] = {"model": "m", "messages": PROMPT, "temperature": 0.7, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    return orjson.dumps(body)


async def bare_stream(http: httpx.AsyncClient, url: str) -> str:
    parts: list[str] = []
    async with http.stream("POST", url + "/chat/completions", content=bare_body(True),
                           headers={"Authorization": "Bearer k", "Content-Type": "application/json"}) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                obj = orjson.loads(line[6:])
                for ch in obj.get("choices") or ():
                    c = ch["delta"].get("content")
                    if c:
                        parts.append(c)
    return "".join(parts)


async def bare_sync(http: httpx.AsyncClient, url: str) -> str:
    r = await http.post(url + "/chat/completions", content=bare_body(False),
                        headers={"Authorization": "Bearer k", "Content-Type": "application/json"})
    r.raise_for_status()
    return str(orjson.loads(r.content)["choices"][0]["message"]["content"])


def chainreact_client(url: str) -> ModelClient:
    return ModelClient.from_config(AgentConfig.model_validate({"url": url, "key": "k", "model": "m",
                                                               "maxRetries": -1}))


async def cr_stream(client: ModelClient) -> str:
    text = ""
    async for item in client.call([Message("user", "Tell me a story.")], stream=True):
        if not hasattr(item, "text"):
            text = item.message.text  # type: ignore[union-attr]
    return text


async def cr_sync(client: ModelClient) -> str:
    return (await client.complete([Message("user", "Tell me a story.")])).message.text


def openai_client(url: str) -> Any:
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=url, api_key="k", max_retries=0)


async def oa_stream(client: Any) -> str:
    parts = []
    stream = await client.chat.completions.create(model="m", messages=PROMPT, temperature=0.7, stream=True,
                                                  stream_options={"include_usage": True})
    async for chunk in stream:
        for ch in chunk.choices:
            if ch.delta.content:
                parts.append(ch.delta.content)
    return "".join(parts)


async def oa_sync(client: Any) -> str:
    r = await client.chat.completions.create(model="m", messages=PROMPT, temperature=0.7)
    return str(r.choices[0].message.content)


# --- measurement ------------------------------------------------------------------------------------

async def cpu_per_call(fn: Callable[[], Awaitable[str]], n: int) -> float:
    gc.collect()
    t0 = time.process_time()
    for _ in range(n):
        await fn()
    return (time.process_time() - t0) / n


async def sequential(short_url: str, long_url: str, n: int, rounds: int, n_short: int, n_long: int,
                     short_text: str, long_text: str) -> dict[str, Any]:
    """CPU per call for every (client, case), measured in interleaved rounds (client A B C, A B C, ...),
    so a shared machine's drift hits each alike: median over rounds and the lowest and highest round."""
    out: dict[str, Any] = {}
    async with httpx.AsyncClient(timeout=60) as http:
        cr_s, cr_l = chainreact_client(short_url), chainreact_client(long_url)
        oa_s, oa_l = openai_client(short_url), openai_client(long_url)
        cases: dict[str, dict[str, Callable[[], Awaitable[str]]]] = {
            "bare": {"sync": lambda: bare_sync(http, short_url),
                     "short": lambda: bare_stream(http, short_url),
                     "long": lambda: bare_stream(http, long_url)},
            "chainreact": {"sync": lambda: cr_sync(cr_s), "short": lambda: cr_stream(cr_s),
                           "long": lambda: cr_stream(cr_l)},
            "openai": {"sync": lambda: oa_sync(oa_s), "short": lambda: oa_stream(oa_s),
                       "long": lambda: oa_stream(oa_l)},
        }
        expect = {"sync": short_text, "short": short_text, "long": long_text}
        samples: dict[tuple[str, str], list[float]] = {}
        for name, fns in cases.items():  # warm-up and correctness check
            for case, fn in fns.items():
                for _ in range(5):
                    assert await fn() == expect[case], (name, case)
        for _ in range(rounds):
            for name, fns in cases.items():
                for case, fn in fns.items():
                    calls = n if case != "long" else max(5, n // 4)
                    samples.setdefault((name, case), []).append(await cpu_per_call(fn, calls))
        for name in cases:
            # Per round: each case's CPU per call and the per-chunk slope; published as median [range].
            per_round = [{case: samples[(name, case)][i] * 1e6 for case in ("sync", "short", "long")}
                         for i in range(rounds)]
            for r in per_round:
                r["chunk"] = (r["long"] - r["short"]) / (n_long - n_short)
            out[name] = {"rounds": per_round, **{k: stats.spread(r[k] for r in per_round)
                                                 for k in ("sync", "short", "long", "chunk")}}
            print(f"{name:>10}: sync request {stats.fmt(out[name]['sync'], 0, ' us')}  "
                  f"stream({n_short}) {stats.fmt(out[name]['short'], 0, ' us')}  "
                  f"stream({n_long}) {stats.fmt(out[name]['long'], 0, ' us')}  "
                  f"per chunk {stats.fmt(out[name]['chunk'], 1, ' us')}", flush=True)
        await cr_s.aclose()
        await cr_l.aclose()
        await oa_s.close()
        await oa_l.close()
    return out


async def concurrent(url: str, n: int, rounds: int, expect: str) -> dict[str, Any]:
    """n concurrent streaming requests per client, in interleaved rounds (wall: min and median)."""
    out: dict[str, Any] = {}

    async def run(label: str, call: Callable[[], Awaitable[str]]) -> None:
        await asyncio.gather(*(call() for _ in range(20)))  # warm the pool
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        results = await asyncio.gather(*(call() for _ in range(n)), return_exceptions=True)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        errors = [r for r in results if isinstance(r, BaseException)]
        bad = sum(1 for r in results if not isinstance(r, BaseException) and r != expect)
        row = out.setdefault(label, {"wall_s": [], "cpu_s": [], "errors": 0, "wrong": 0, "first_error": None})
        row["wall_s"].append(wall)
        row["cpu_s"].append(cpu)
        row["errors"] += len(errors)
        row["wrong"] += bad
        if errors and not row["first_error"]:
            row["first_error"] = repr(errors[0])[:200]
        print(f"{label:>28}: {n} concurrent streams  wall {wall:6.2f} s  client CPU {cpu:6.2f} s  "
              f"errors {len(errors)}  wrong {bad}", flush=True)

    default_http = httpx.AsyncClient(timeout=120)  # httpx defaults: 100 connections, 20 keep-alive
    big_http = httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=None,
                                                                  max_keepalive_connections=1000))
    client = chainreact_client(url)
    for _ in range(rounds):
        await run("bare httpx (default pool)", lambda: bare_stream(default_http, url))
        await run("bare httpx (unlimited pool)", lambda: bare_stream(big_http, url))
        await run("chainreact", lambda: cr_stream(client))
    await client.aclose()
    await default_http.aclose()
    await big_http.aclose()
    for row in out.values():
        for key in ("wall_s", "cpu_s"):
            vals = sorted(row[key])
            row[key] = {"min": vals[0], "median": vals[len(vals) // 2], "all": row[key]}
    return out


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=40, help="calls per measurement round")
    ap.add_argument("--rounds", type=int, default=8, help="interleaved rounds (median [range] reported)")
    ap.add_argument("--concurrency", type=int, default=500)
    ap.add_argument("--concurrency-rounds", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "client.json"))
    args = ap.parse_args()
    n_short, n_long = 10, 200
    short_text, long_text = story(40), story(400)
    short = Server({"text": short_text, "chunks": n_short})
    long = Server({"text": long_text, "chunks": n_long})
    conc = Server({"text": story(100), "chunks": 50})
    try:
        print(f"CPU per call (client process only), median [range] of {args.rounds} rounds of "
              f"{args.requests} calls", flush=True)
        seq = await sequential(short.url, long.url, args.requests, args.rounds, n_short, n_long, short_text,
                               long_text)
        print(f"\n{args.concurrency} concurrent streaming requests (50 chunks each)", flush=True)
        con = await concurrent(conc.url, args.concurrency, args.concurrency_rounds, story(100))
    finally:
        for s in (short, long, conc):
            s.close()
    # A ratio is the median of each round's ratio (both clients measured in the same round).
    ratios = {f"{case}_vs_{other}": stats.ratios((c[case], x[case]) for c, x in
                                                 zip(seq["chainreact"]["rounds"], seq[other]["rounds"],
                                                     strict=True))
              for case in ("sync", "short", "long", "chunk") for other in ("bare", "openai")}
    print("\nratios chainreact / other, median [lowest-highest round] (targets: <= 1.2 vs bare, <= 0.5 vs "
          "openai)")
    for k, v in ratios.items():
        print(f"  {k:>16}: {stats.fmt(v, 2)}")
    import openai

    result = {"python": sys.version.split()[0], "httpx": httpx.__version__, "openai": openai.__version__,
              "cpus": os.cpu_count(), "requests": args.requests, "rounds": args.rounds,
              "chunks": [n_short, n_long],
              "sequential": seq, "ratios": ratios, "load_avg": os.getloadavg(),
              "concurrent": {"n": args.concurrency, **con},
              "when": time.strftime("%Y-%m-%d %H:%M:%S")}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    asyncio.run(main())
