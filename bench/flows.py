"""Chat-flow turn overhead against the size of the stored conversation (issue 13's benchmark).

    python bench/flows.py                  # 10, 100 and 1,000 stored messages; prints a table
    python bench/flows.py --quick          # fewer turns (checks the script, rough numbers)
    python bench/flows.py --json out.json  # also the raw result
    python bench/flows.py --docs           # and the table + chart into docs/performance.md

One `aiagent` node with a message window (`maxMessages` 10) and summarization (`retainedMessages` 2) on
a SQLite state store. For each size N a fresh session is filled with N stored messages, one unmeasured
turn catches up (it folds the N - 2 messages the summary does not cover yet into it: one summary call,
once per session), then T turns are measured: CPU of this process (`time.process_time`) per turn. The
model is a scripted server in its own process (this file with `--serve`) answering at once, so its CPU
is not counted: what is measured is the flow's own work (templates, memory reads and writes, the
session checkpoint, the summary refresh every few turns, building and parsing the model requests).
Rounds interleave the sizes and fresh sessions; the figure is the median per size over the rounds
[lowest-highest round], and the ratio 1,000 / 10 (per round, then the median) says whether the cost
grows with the stored history (it must not: a turn reads at most the window and the messages not yet
summarized).

The server checks the work is what it should be: how many answer and summary requests it got, the
largest number of messages in an answer request (bounded by the window), and the largest summary prompt
after the catch-up (bounded too). A run that does not match is a failure (exit 1), not a number.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stats

SIZES = (10, 100, 1000)
WINDOW = 10
RETAINED = 2
SUMMARY_SYSTEM = "You summarize conversations."
ANSWER = json.dumps({"response": "Noted: your order is on its way and arrives tomorrow."})
SUMMARY = "The user asked about an order several times; the assistant said it arrives tomorrow."
TEXT = "Where is my order {i}? It was supposed to arrive yesterday and I need it for the weekend."
FULL = {"turns": 24, "rounds": 5}
QUICK = {"turns": 6, "rounds": 1}


# -- the scripted server (its own process) -----------------------------------------------------------

class Responder:
    """Answers a flow turn with ANSWER and a summary request with SUMMARY; counts what it saw."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answers = 0
        self.summaries = 0
        self.max_answer_messages = 0
        self.summary_chars: list[int] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        first = messages[0].get("content") if messages else None
        with self.lock:
            if first == SUMMARY_SYSTEM:
                self.summaries += 1
                self.summary_chars.append(sum(len(str(m.get("content") or "")) for m in messages))
                return {"text": SUMMARY}
            self.answers += 1
            self.max_answer_messages = max(self.max_answer_messages, len(messages))
            return {"text": ANSWER}


def serve() -> int:
    from chainreact.testing import FakeLLM

    responder = Responder()
    srv = FakeLLM(responder, record=False)
    srv.start()
    stop = threading.Event()
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, lambda *_: stop.set())
    print(srv.url, flush=True)
    while not stop.wait(0.2):
        pass
    srv.stop()
    print(json.dumps({"answers": responder.answers, "summaries": responder.summaries,
                      "max_answer_messages": responder.max_answer_messages,
                      "summary_chars": responder.summary_chars}), flush=True)
    return 0


class Server:
    def __init__(self) -> None:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self.proc.kill()
            raise RuntimeError(f"bench server did not start: {self.proc.communicate()[1][-2000:]}")

    def stop(self) -> dict[str, Any]:
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=30)
        for line in out.splitlines():
            if line.startswith("{"):
                counts: dict[str, Any] = json.loads(line)
                return counts
        raise RuntimeError(f"bench server printed no counts: {err[-2000:]}")


# -- the measured client -----------------------------------------------------------------------------

def flow_doc(url: str) -> dict[str, Any]:
    return {"id": "bench", "nodes": [{
        "name": "support", "type": "aiagent", "start": True,
        "llmConfig": {"url": url, "apiKey": "unused"},
        "systemMessage": "You help customers of {{user.shop}}.",
        "userMessage": "Customer {{user.name}} says: {{userInput}}",
        "memory": {"maxMessages": WINDOW,
                   "memoryOptimizer": {"summarization": {"retainedMessages": RETAINED}}},
        "output": {"schema": {"type": "object", "properties": {"response": {"type": "string"}},
                              "required": ["response"]}},
    }]}


USER = {"id": "u1", "name": "Ann", "shop": "Shoes&Co"}


async def fill(store: Any, key: str, n: int) -> None:
    """n stored messages (user and assistant in turn), as earlier turns would have left them."""
    from chainreact.types import Message

    batch = [Message("user" if i % 2 == 0 else "assistant",
                     TEXT.format(i=i) if i % 2 == 0 else ANSWER) for i in range(n)]
    for i in range(0, n, 500):
        await store.append(key, batch[i:i + 500])


async def measure(url: str, db: str, sizes: tuple[int, ...], turns: int, rounds: int) -> dict[str, Any]:
    from chainreact.flows import Flow

    per_size: dict[int, list[float]] = {n: [] for n in sizes}
    catch_up: dict[int, list[float]] = {n: [] for n in sizes}
    stored: dict[int, list[int]] = {n: [] for n in sizes}
    answered = 0
    async with Flow.from_dict(flow_doc(url), state=f"sqlite:///{db}") as flow:
        store = await flow.store()
        # One unmeasured session first: imports, the connection pool and SQLite's caches warm up.
        await fill(store, flow.session_key("warm"), 20)
        for i in range(4):
            answered += len((await flow.send("warm", TEXT.format(i=i), user=USER)).messages)
        for r in range(rounds):
            order = list(sizes) if r % 2 == 0 else list(reversed(sizes))
            for n in order:
                session = f"r{r}-n{n}"
                key = flow.session_key(session)
                await fill(store, key, n)
                t0 = time.process_time()
                t = await flow.send(session, TEXT.format(i=n), user=USER)
                catch_up[n].append(time.process_time() - t0)
                answered += len(t.messages)
                t0 = time.process_time()
                for i in range(turns):
                    t = await flow.send(session, TEXT.format(i=i), user=USER)
                    answered += len(t.messages)
                per_size[n].append((time.process_time() - t0) / turns)
                info = await store.session_info(key)
                stored[n].append(info.messages if info is not None else 0)
    return {"per_size": per_size, "catch_up": catch_up, "stored_after": stored, "answered": answered}


def check(result: dict[str, Any], counts: dict[str, Any], sizes: tuple[int, ...], turns: int,
          rounds: int) -> list[str]:
    """What the run must have done; each difference is a problem."""
    problems = []
    sessions = 1 + len(sizes) * rounds
    expected_answers = 4 + len(sizes) * rounds * (1 + turns)
    if counts["answers"] != expected_answers or result["answered"] != expected_answers:
        problems.append(f"expected {expected_answers} answered turns, the server answered "
                        f"{counts['answers']} and the flow returned {result['answered']} messages")
    # Window: the system message, at most WINDOW remembered messages, the user's message.
    if counts["max_answer_messages"] > WINDOW + 2:
        problems.append(f"an answer request held {counts['max_answer_messages']} messages; the window is "
                        f"{WINDOW} (+ system + user)")
    if counts["summaries"] < sessions:
        problems.append(f"{counts['summaries']} summary calls for {sessions} sessions: summarization did "
                        "not run")
    # Summaries are refreshed, not recomputed: apart from the one catch-up per session that had a backlog
    # (and the warm-up session's), every summary prompt is small (the previous summary + a few messages).
    chars = counts["summary_chars"]
    catch_ups = 1 + rounds * sum(1 for n in sizes if n > WINDOW)
    big = [c for c in chars if c > 4 * min(chars, default=0)]
    if len(big) > catch_ups:
        problems.append(f"{len(big)} large summary prompts ({sorted(big)[:5]}... chars) for {catch_ups} "
                        "catch-ups: a summary was recomputed from the whole history")
    for n in sizes:
        for s in result["stored_after"][n]:
            if s != n + 2 * (1 + turns):
                problems.append(f"session of {n}: {s} stored messages after the run, expected "
                                f"{n + 2 * (1 + turns)}")
    return problems


def run(args: argparse.Namespace) -> dict[str, Any]:
    cfg = QUICK if args.quick else FULL
    sizes = tuple(args.sizes)
    server = Server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            result = asyncio.run(measure(server.url, str(Path(tmp) / "flows.db"), sizes, cfg["turns"],
                                         cfg["rounds"]))
    finally:
        counts = server.stop()
    problems = check(result, counts, sizes, cfg["turns"], cfg["rounds"])
    med = {n: statistics.median(result["per_size"][n]) for n in sizes}
    base = med[sizes[0]]
    out = {
        "settings": {**cfg, "sizes": list(sizes), "window": WINDOW, "retained": RETAINED,
                     "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                     "load_avg": list(os.getloadavg())},
        "cpu_per_turn_ms": {str(n): med[n] * 1000 for n in sizes},
        "cpu_per_turn_ms_all": {str(n): [v * 1000 for v in result["per_size"][n]] for n in sizes},
        "ratio_to_smallest": {str(n): med[n] / base for n in sizes},
        "catch_up_turn_ms": {str(n): statistics.median(result["catch_up"][n]) * 1000 for n in sizes},
        # Published: median [lowest-highest round]; a ratio is each round's (both sizes in that round).
        "spread": {str(n): {
            "cpu_per_turn_ms": stats.spread(v * 1000 for v in result["per_size"][n]),
            "ratio_to_smallest": stats.ratios(zip(result["per_size"][n], result["per_size"][sizes[0]],
                                                  strict=True)),
            "catch_up_turn_ms": stats.spread(v * 1000 for v in result["catch_up"][n])} for n in sizes},
        "server": {k: v for k, v in counts.items() if k != "summary_chars"},
        "summary_prompt_chars": {"min": min(counts["summary_chars"], default=0),
                                 "max": max(counts["summary_chars"], default=0)},
        "problems": problems,
        "status": "failed" if problems else "ok",
    }
    return out


def table(r: dict[str, Any]) -> str:
    sizes = r["settings"]["sizes"]
    lines = ["| stored messages | CPU per turn | x the smallest | first turn (catch-up summary) |",
             "|---|---|---|---|"]
    for n in sizes:
        sp = r["spread"][str(n)]
        lines.append(f"| {n:,} | {stats.fmt(sp['cpu_per_turn_ms'], 2, ' ms')} | "
                     f"{stats.fmt(sp['ratio_to_smallest'], 2, 'x')} | "
                     f"{stats.fmt(sp['catch_up_turn_ms'], 2, ' ms')} |")
    return "\n".join(lines)


DOC = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
CHART = DOC.parent / "img" / "flows_turn.png"


def chart(r: dict[str, Any]) -> Path | None:
    """CPU per turn against stored messages (log scale), every round's point and the median."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    sizes = r["settings"]["sizes"]
    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=100)
    for n in sizes:
        pts = r["cpu_per_turn_ms_all"][str(n)]
        ax.scatter([n] * len(pts), pts, color="#9bb7d4", s=14, zorder=2)
    ax.plot(sizes, [r["cpu_per_turn_ms"][str(n)] for n in sizes], marker="o", color="#1f4e79", zorder=3,
            label="median")
    ax.set_xscale("log")
    ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("messages stored in the session")
    ax.set_ylabel("CPU per turn (ms)")
    ax.set_title("Chat-flow turn overhead (window 10 + summary, SQLite)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    CHART.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(CHART)
    plt.close(fig)
    return CHART


def block(r: dict[str, Any], chart_path: Path | None) -> str:
    s = r["settings"]
    head = (f"Measured {s['date']} (load average {s['load_avg'][0]:.1f} on this machine), {s['rounds']} "
            f"round(s) of {s['turns']} turns per size, window {s['window']}, retainedMessages "
            f"{s['retained']}; median over the rounds [lowest-highest round], a ratio the median of each "
            "round's.")
    srv = r["server"]
    tail = (f"The server answered {srv['answers']} turns and {srv['summaries']} summary requests; the "
            f"largest answer request held {srv['max_answer_messages']} messages (system + window + user).")
    img = f"\n\n![CPU per turn against stored messages](img/{chart_path.name})" if chart_path else ""
    return f"{head}\n\n{table(r)}\n\n{tail}{img}"


def write_docs(r: dict[str, Any]) -> list[Path]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import report  # bench/report.py: the generated-block replacement the suite's report uses

    path = chart(r)
    doc = DOC.read_text(encoding="utf-8")
    doc = report.replace_block(doc, "flows", block(r, path))
    tmp = DOC.with_suffix(".md.tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(DOC)
    return [DOC] + ([path] if path else [])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer turns and one round")
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="stored messages per session")
    p.add_argument("--json", type=Path, default=None, help="write the result here too")
    p.add_argument("--docs", action="store_true",
                   help="write the table and chart into docs/performance.md (its generated:flows block)")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        return serve()
    r = run(args)
    print(table(r))
    print(f"server: {r['server']}; summary prompts {r['summary_prompt_chars']} chars")
    if args.json is not None:
        args.json.write_text(json.dumps(r, indent=1))
    if r["problems"]:
        print("FAILED:\n  " + "\n  ".join(r["problems"]), file=sys.stderr)
        return 1  # a run that did not do the scripted work must not look fast: docs untouched
    if args.docs:
        print("wrote " + ", ".join(str(p) for p in write_docs(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
