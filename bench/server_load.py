"""The worker processes of the server benchmark (bench/server_bench.py starts them, one per role).

    python bench/server_load.py pair --framework F --url MODEL_URL --agent-dir DIR \
        --base http://127.0.0.1:PORT --pid SERVER_PID [--concurrency C --batches B --warmup W]
    python bench/server_load.py served --base http://127.0.0.1:PORT --pid SERVER_PID [--concurrency C]
    python bench/server_load.py agentos --url MODEL_URL --port PORT

`pair` runs the agent in this process (the baseline, its CPU from `time.process_time`) and, alternating
batch by batch, the same runs over HTTP through the serving process (whose CPU it reads from /proc);
`served` runs only the HTTP side, C streams at once (bench/scale.py's cell of 2,000 SSE clients);
`agentos` serves agno's agent with AgentOS under uvicorn. F is `chainreact` or `agno`, built exactly as
in the serving process: chainreact's agent from the same document through the same `Catalog`, agno's with
the same constructor. Both modes measure, per run, the time from its start (served: before the request is
written) to the first non-empty answer text, and check every run's answer. The HTTP client is a few lines
over asyncio streams with kept-alive connections, the same for both servers, so its own cost is as small
as a client's can be and equal for both. Prints `BENCH_RESULT {json}`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent / "frameworks"))
import _harness as h

MARKER = "BENCH_RESULT "
AGENT_ID = "bench"
# One run: (time to first text in s or None, full answer text)
Run = Callable[[], Awaitable[tuple[float | None, str]]]


def cpu_ticks_s(pid: int) -> float:
    """User + system CPU seconds of a whole process (its exited threads included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


# --- the agents, as the servers build them -------------------------------------------------------

def agno_agent(url: str) -> Any:
    os.environ["AGNO_TELEMETRY"] = "false"
    from agno.agent import Agent
    from agno.models.openai.like import OpenAILike

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    model = OpenAILike(id="fake-model", base_url=url, api_key="x", max_retries=0, timeout=h.TIMEOUT)
    return Agent(id=AGENT_ID, name=AGENT_ID, model=model, instructions=h.SYSTEM_PROMPT, tools=[add],
                 telemetry=False)


def inproc_run(framework: str, url: str, agent_dir: str) -> tuple[Run, Callable[[], Awaitable[None]]]:
    if framework == "chainreact":
        from chainreact.server import Catalog

        catalog = Catalog.load([agent_dir], globals={"url": url})
        agent = catalog.entries[AGENT_ID].obj
        data = {"messages": [{"role": "user", "content": h.PROMPT}]}  # what the server hands the agent

        async def run() -> tuple[float | None, str]:
            t0 = time.perf_counter()
            first = None
            final = ""
            async for ev in agent.stream(data):
                if first is None and ev.type == "text_delta" and ev.text:
                    first = time.perf_counter() - t0
                elif ev.type == "final":
                    final = ev.content
            return first, final

        return run, catalog.aclose

    agent = agno_agent(url)

    async def run_agno() -> tuple[float | None, str]:
        t0 = time.perf_counter()
        first = None
        parts: list[str] = []
        async for ev in agent.arun(h.PROMPT, stream=True):
            if getattr(ev, "event", None) == "RunContent" and isinstance(ev.content, str) and ev.content:
                if first is None:
                    first = time.perf_counter() - t0
                parts.append(ev.content)
        return first, "".join(parts)

    async def nothing() -> None:
        return None

    return run_agno, nothing


# --- the HTTP client -----------------------------------------------------------------------------

def http_request(framework: str, host: str, port: int) -> bytes:
    if framework == "chainreact":
        body = json.dumps({"model": AGENT_ID, "stream": True,
                           "messages": [{"role": "user", "content": h.PROMPT}]}).encode()
        path, ctype = "/v1/chat/completions", "application/json"
    else:  # AgentOS's own run endpoint takes a form
        body = urlencode({"message": h.PROMPT, "stream": "true"}).encode()
        path, ctype = f"/agents/{AGENT_ID}/runs", "application/x-www-form-urlencoded"
    head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\nAccept: text/event-stream\r\n\r\n")
    return head.encode() + body


def event_text(framework: str, event: bytes) -> str | None:
    """The answer text an SSE event carries ("" for none), or None at the end of the answer."""
    if framework == "chainreact":
        payload = event.partition(b"data: ")[2]
        if payload == b"[DONE]":
            return None
        if not payload:
            return ""
        obj = json.loads(payload)
        if "error" in obj:
            raise RuntimeError(f"stream error: {obj['error']}")
        return "".join((c.get("delta") or {}).get("content") or "" for c in obj.get("choices") or ())
    if not event.startswith(b"event: RunContent\n"):  # AgentOS: one named event per line pair
        if event.startswith((b"event: RunError", b"event: RunCancelled")):
            raise RuntimeError(event.decode()[:300])
        return None if event.startswith(b"event: RunCompleted") else ""
    obj = json.loads(event.partition(b"data: ")[2])
    content = obj.get("content")
    return content if isinstance(content, str) else ""


def client_run(framework: str, base: str) -> Run:
    """A run over HTTP: kept-alive connections (one per run in flight), as an SDK client keeps them."""
    hostport = base.removeprefix("http://").rstrip("/")
    host, port = hostport.rsplit(":", 1)
    request = http_request(framework, host, int(port))
    idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
        while idle:
            reader, writer = idle.pop()
            if reader.at_eof():  # the server closed it while idle (uvicorn's keep-alive timeout)
                writer.close()
                continue
            writer.write(request)
            try:
                return reader, writer, await reader.readuntil(b"\r\n\r\n")
            except (ConnectionError, asyncio.IncompleteReadError):
                writer.close()  # closed as we sent: what any client does, again on a new connection
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(request)
        return reader, writer, await reader.readuntil(b"\r\n\r\n")

    async def run() -> tuple[float | None, str]:
        t0 = time.perf_counter()
        reader, writer, head = await connect()
        reusable = False
        try:
            if not head.startswith(b"HTTP/1.1 200") or b"chunked" not in head.lower():
                rest = await reader.read(2000)
                raise RuntimeError(f"unexpected response: {(head + rest).decode(errors='replace')[:500]}")
            first = None
            parts: list[str] = []
            buf = b""
            done = False
            while size := int((await reader.readline()).split(b";")[0], 16):
                buf += (await reader.readexactly(size + 2))[:-2]
                *events, buf = buf.split(b"\n\n")
                for e in events:
                    text = None if done else event_text(framework, e)
                    if text is None:
                        done = True
                    elif text:
                        if first is None:
                            first = time.perf_counter() - t0
                        parts.append(text)
            await reader.readexactly(2)  # the end of the chunked body
            reusable = True
            return first, "".join(parts)
        finally:
            if reusable:
                idle.append((reader, writer))
            else:
                writer.close()

    return run


# --- measuring -----------------------------------------------------------------------------------

def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def server_cpu_s(pid: int) -> float:
    """CPU seconds of the serving process's live threads in ns precision (/proc/PID/task/*/schedstat),
    else its tick-precision total."""
    try:
        return sum(int((t / "schedstat").read_text().split()[0]) for t in Path(f"/proc/{pid}/task").iterdir()
                   ) / 1e9
    except (OSError, ValueError):
        return cpu_ticks_s(pid)


class Mode:
    """One side of the comparison: its runs, their checks, TTFTs and the CPU they cost."""

    def __init__(self, run: Run, cpu: Callable[[], float]) -> None:
        self.run, self.cpu = run, cpu
        self.checker = h.Checker()
        self.ttfts: list[float] = []
        self.cpu_s = 0.0
        self.measured = 0

    async def one(self) -> None:
        try:
            first, text = await self.run()
        except Exception as e:  # one failed run must not hide the others' outcome
            self.checker.error(e)
            return
        self.checker.check(text)
        if first is not None:
            self.ttfts.append(first)

    async def batch(self, n: int) -> None:
        c0 = self.cpu()
        await asyncio.gather(*(self.one() for _ in range(n)))
        self.cpu_s += self.cpu() - c0
        self.measured += n

    def result(self, warmup: int) -> dict[str, Any]:
        out: dict[str, Any] = {"runs": self.measured + warmup, "completed": self.checker.ok,
                               "problem": self.checker.first_problem,
                               "cpu_per_run_ms": self.cpu_s / max(self.measured, 1) * 1e3}
        if self.ttfts:
            out.update(ttft_p50_ms=quantile(self.ttfts, 0.5) * 1e3,
                       ttft_p99_ms=quantile(self.ttfts, 0.99) * 1e3, ttft_n=len(self.ttfts))
        return out


async def measure(inproc: Mode, served: Mode, batches: int, concurrency: int, warmup: int) -> dict[str, Any]:
    """`batches` batches of `concurrency` runs per mode, alternating in-process and served (and which goes
    first), so the machine's drift hits both alike."""
    for _ in range(warmup):  # connections, lazy imports, caches: not the steady state
        await inproc.one()
        await served.one()
    for m in (inproc, served):
        m.ttfts.clear()
    w0 = time.perf_counter()
    for i in range(batches):
        for m in ((inproc, served) if i % 2 == 0 else (served, inproc)):
            await m.batch(concurrency)
    modes = {"inproc": inproc.result(warmup), "served": served.result(warmup)}
    runs = sum(m["runs"] for m in modes.values())
    completed = sum(m["completed"] for m in modes.values())
    problem = modes["inproc"]["problem"] or modes["served"]["problem"]
    return {"status": "ok", "runs": runs, "completed": completed, "problem": problem,
            "expected_requests": runs * h.REQUESTS_PER_RUN, "expected_streamed": True,
            "concurrency": concurrency, "batches": batches, "wall_s": time.perf_counter() - w0, **modes}


SERVE_GC_THRESHOLD = 10_000  # gc.set_threshold of `chainreact serve` (tests/bench check they agree)


async def served_only(base: str, pid: int, concurrency: int, warmup: int) -> dict[str, Any]:
    """`concurrency` streamed runs at once through the serving process, nothing in-process (the scale
    cell of bench/scale.py): time to first text p50/p99 as the clients see it, every failed run by kind,
    the server's CPU per run."""
    served = Mode(client_run("chainreact", base), lambda: server_cpu_s(pid))
    for _ in range(warmup):
        await served.one()
    served.ttfts.clear()
    lag = h.LagProbe()  # this client's own loop: how late it reads what the server sent
    lag.start()
    w0 = time.perf_counter()
    await served.batch(concurrency)
    wall = time.perf_counter() - w0
    client_lag = lag.stop()
    out = served.result(warmup)
    runs = out["runs"]
    return {"status": "ok", "runs": runs, "completed": out["completed"], "problem": out["problem"],
            "failed": served.checker.bad, "failures_by_kind": dict(served.checker.kinds),
            "expected_requests": runs * h.REQUESTS_PER_RUN, "expected_streamed": True,
            "concurrency": concurrency, "wall_s": wall, "client_lag_p99_ms": client_lag["lag_p99_ms"],
            **{k: out[k] for k in ("ttft_p50_ms", "ttft_p99_ms", "ttft_n", "cpu_per_run_ms") if k in out}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("role", choices=["pair", "served", "agentos"])
    p.add_argument("--framework", choices=["chainreact", "agno"], default="chainreact")
    p.add_argument("--url", help="the scripted model server's base URL")
    p.add_argument("--agent-dir", help="chainreact: the folder `chainreact serve` serves")
    p.add_argument("--base", help="pair: the serving process's base URL")
    p.add_argument("--pid", type=int, help="pair: the serving process (its CPU time is read)")
    p.add_argument("--port", type=int, help="agentos: where to listen")
    p.add_argument("--concurrency", type=int, default=1, help="runs at once in a batch")
    p.add_argument("--batches", type=int, default=20, help="batches per mode")
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args(argv)
    if a.role == "agentos":
        import uvicorn
        from agno.os import AgentOS

        app = AgentOS(agents=[agno_agent(a.url)], telemetry=False).get_app()
        # The garbage collector as `chainreact serve` sets its own once loaded (cli/serve_cmds.py tune_gc):
        # what is loaded frozen, young-generation threshold 10,000. Both servers get the same settings.
        gc.collect()
        gc.freeze()
        gc.set_threshold(SERVE_GC_THRESHOLD)
        # As `chainreact serve` runs uvicorn: same loop, same HTTP implementation, access log off.
        uvicorn.run(app, host="127.0.0.1", port=a.port, log_level="warning", timeout_graceful_shutdown=30)
        return 0
    if a.role == "served":
        try:
            result = asyncio.run(served_only(a.base, a.pid, a.concurrency, a.warmup))
            result["server_peak_rss_mb"] = peak_rss_mb(a.pid)
        except Exception as e:
            result = {"status": "error", "reason": f"{type(e).__name__}: {e}",
                      "trace": traceback.format_exc()[-2000:]}
        print(MARKER + json.dumps(result), flush=True)
        return 0
    try:
        run, close = inproc_run(a.framework, a.url, a.agent_dir)
        pid = a.pid

        async def go() -> dict[str, Any]:
            try:
                return await measure(Mode(run, time.process_time),
                                     Mode(client_run(a.framework, a.base), lambda: server_cpu_s(pid)),
                                     a.batches, a.concurrency, a.warmup)
            finally:
                await close()

        result = asyncio.run(go())
        result["server_peak_rss_mb"] = peak_rss_mb(pid)
    except Exception as e:
        result = {"status": "error", "reason": f"{type(e).__name__}: {e}",
                  "trace": traceback.format_exc()[-2000:]}
    print(MARKER + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
