"""Chain workload: messages per second and CPU per message through a 5-node rule chain.

Three implementations of the same routing (a filter, a transform, a switch, a transform, an end):
  js    jsFilter -> jsTransform -> switch -> exprTransform -> end   (QuickJS for the two JS nodes)
  expr  exprFilter -> exprTransform -> switch -> exprTransform -> end
  langgraph  the same logic as a LangGraph StateGraph of Python functions (if langgraph is installed)
each at 1 message at a time and 1,000 concurrent messages. Every run checks its answers.

    python bench/chains.py [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chainreact.chains import RuleEngine, RuleMsg


def _chain(chain_id: str, first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    nodes = [
        {"id": "filter", **first},
        {"id": "enrich", **second},
        {"id": "route", "type": "switch", "configuration": {"cases": [
            {"case": "msg.temperature > 50", "then": "hot"},
            {"case": "msg.temperature < 0", "then": "cold"}]}},
        {"id": "label", "type": "exprTransform", "configuration": {
            "mapping": {"id": "msg.id", "level": "'hot'", "t": "msg.temperature"}}},
        {"id": "done", "type": "end"},
    ]
    conns = [("filter", "enrich", "True"), ("enrich", "route", "Success"), ("route", "label", "hot"),
             ("route", "done", "cold"), ("route", "done", "Default"), ("label", "done", "Success")]
    return {"ruleChain": {"id": chain_id, "name": chain_id},
            "metadata": {"nodes": nodes,
                         "connections": [{"fromId": a, "toId": b, "type": t} for a, b, t in conns]}}


JS_CHAIN = _chain(
    "js",
    {"type": "jsFilter", "configuration": {"jsScript": "return msg.temperature > -100;"}},
    {"type": "jsTransform", "configuration": {"jsScript":
        "msg.temperature = msg.temperature + 1; metadata.seen = 'yes'; "
        "return {msg: msg, metadata: metadata, msgType: msgType};"}},
)
EXPR_CHAIN = _chain(
    "expr",
    {"type": "exprFilter", "configuration": {"expr": "msg.temperature > -100"}},
    {"type": "exprTransform",
     "configuration": {"mapping": {"id": "msg.id", "temperature": "msg.temperature + 1"}}},
)


def expected(i: int) -> str:
    return json.dumps({"id": i, "level": "hot", "t": 61 + i % 2}, separators=(",", ":"), sort_keys=True)


def message(i: int) -> RuleMsg:
    return RuleMsg(type="T", data=json.dumps({"id": i, "temperature": 60 + i % 2}))


async def run_chain(engine: RuleEngine, chain_id: str, n: int, concurrency: int) -> tuple[float, float, int]:
    ok = 0

    async def one(i: int) -> None:
        nonlocal ok
        ends = await engine.run(chain_id, message(i))
        if len(ends) == 1 and ends[0].msg.data == expected(i):
            ok += 1

    t0, c0 = time.perf_counter(), time.process_time()
    if concurrency == 1:
        for i in range(n):
            await one(i)
    else:
        for start in range(0, n, concurrency):
            await asyncio.gather(*(one(i) for i in range(start, min(n, start + concurrency))))
    return time.perf_counter() - t0, time.process_time() - c0, ok


def langgraph_app() -> Any:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        msg: dict[str, Any]
        metadata: dict[str, str]
        data: str

    def filter_(s: State) -> State:
        return {}

    def enrich(s: State) -> State:
        m = dict(s["msg"])
        m["temperature"] = m["temperature"] + 1
        return {"msg": m, "metadata": {**s["metadata"], "seen": "yes"}}

    def route(s: State) -> State:
        return {}

    def label(s: State) -> State:
        m = s["msg"]
        return {"data": json.dumps({"id": m["id"], "level": "hot", "t": m["temperature"]},
                                   separators=(",", ":"), sort_keys=True)}

    g = StateGraph(State)
    for name, fn in (("filter", filter_), ("enrich", enrich), ("route", route), ("label", label)):
        g.add_node(name, fn)
    g.add_edge(START, "filter")
    g.add_conditional_edges("filter", lambda s: "enrich" if s["msg"]["temperature"] > -100 else END)
    g.add_edge("enrich", "route")
    g.add_conditional_edges("route", lambda s: "label" if s["msg"]["temperature"] > 50 else END)
    g.add_edge("label", END)
    return g.compile()


async def run_langgraph(app: Any, n: int, concurrency: int) -> tuple[float, float, int]:
    ok = 0

    async def one(i: int) -> None:
        nonlocal ok
        msg = message(i)
        out = await app.ainvoke({"msg": json.loads(msg.data), "metadata": {}, "data": msg.data})
        if out.get("data") == expected(i):
            ok += 1

    t0, c0 = time.perf_counter(), time.process_time()
    if concurrency == 1:
        for i in range(n):
            await one(i)
    else:
        for start in range(0, n, concurrency):
            await asyncio.gather(*(one(i) for i in range(start, min(n, start + concurrency))))
    return time.perf_counter() - t0, time.process_time() - c0, ok


async def main(quick: bool, smoke: bool = False) -> dict[str, Any]:
    engine = RuleEngine()
    engine.load(JS_CHAIN)
    engine.load(EXPR_CHAIN)
    n_seq, n_conc = (20, 1000) if smoke else (200, 2000) if quick else (5000, 20000)
    results: dict[str, Any] = {}
    targets: list[tuple[str, Any]] = [("expr", None), ("js", None)]
    try:
        if smoke:
            raise ImportError("skipped by --smoke")
        targets.append(("langgraph", langgraph_app()))
    except ImportError as e:
        results["langgraph"] = {"error": f"not run: {e}"}
    for name, app in targets:
        # LangGraph is far slower per message: fewer messages keep the run short (rates are per message)
        scale = 5 if app is not None and not quick else 1
        for conc, n in ((1, n_seq // scale), (1000, max(1000, n_conc // scale // 2))):
            await (run_chain(engine, name, 50, 1) if app is None else run_langgraph(app, 50, 1))  # warm-up
            wall, cpu, ok = await (run_chain(engine, name, n, conc) if app is None
                                   else run_langgraph(app, n, conc))
            results.setdefault(name, {})[str(conc)] = {
                "messages": n, "ok": ok, "msg_per_s": round(n / wall),
                "cpu_us_per_msg": round(cpu / n * 1e6, 1)}
    return results


def report(results: dict[str, Any]) -> str:
    lines = ["| chain | concurrency | messages/s | CPU µs/message |", "|---|---|---|---|"]
    for name, by in results.items():
        if "error" in by:
            lines.append(f"| {name} | - | n/a ({by['error']}) | |")
            continue
        for conc, r in by.items():
            lines.append(f"| {name} | {conc} | {r['msg_per_s']:,} | {r['cpu_us_per_msg']} |")
    lg = results.get("langgraph", {})
    if "1" in lg:
        for conc in ("1", "1000"):
            ratio = results["expr"][conc]["msg_per_s"] / lg[conc]["msg_per_s"]
            lines.append(f"\nexpr chain / LangGraph at concurrency {conc}: {ratio:.1f}x")
    js, ex = results["js"]["1"], results["expr"]["1"]
    lines.append(f"\nJS cost per JS node (2 of 5 nodes): "
                 f"{(js['cpu_us_per_msg'] - ex['cpu_us_per_msg']) / 2:+.1f} µs vs the expression node")
    return "\n".join(lines)


def chart(results: dict[str, Any], path: str) -> None:
    """Messages per second by implementation and concurrency (log scale), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, by in results.items() if "error" not in by]
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=110)
    width = 0.38
    for k, conc in enumerate(("1", "1000")):
        vals = [results[n][conc]["msg_per_s"] for n in names]
        xs = [i + (k - 0.5) * width for i in range(len(names))]
        bars = ax.bar(xs, vals, width, label=f"{conc} concurrent")
        ax.bar_label(bars, labels=[f"{v:,}" for v in vals], fontsize=8)
    ax.set_xticks(range(len(names)), [{"expr": "chainreact expr chain", "js": "chainreact JS chain",
                                       "langgraph": "LangGraph StateGraph"}.get(n, n) for n in names])
    ax.set_yscale("log")
    ax.set_ylabel("messages / s (log)")
    ax.set_title("5-node chain: filter, transform, switch, transform, end")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="few messages: checks the workload, rough numbers")
    ap.add_argument("--smoke", action="store_true",
                    help="CI: chainreact only, a few messages, checks answers")
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--chart", help="draw a PNG chart here (needs matplotlib, extra 'bench')")
    args = ap.parse_args()
    res = asyncio.run(main(args.quick, args.smoke))
    bad = [(k, c) for k, by in res.items() if "error" not in by
           for c, r in by.items() if r["ok"] != r["messages"]]
    print(report(res))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    if args.chart:
        chart(res, args.chart)
    if bad:
        print(f"wrong answers in {bad}", file=sys.stderr)
        sys.exit(1)
