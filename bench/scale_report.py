"""bench/scale.py's section of docs/performance.md (blocks `generated:scale` and `generated:scale-peers`).

    python bench/scale_report.py [bench/results/scale-latest.json]
    python bench/scale_report.py --peers RESULT.json [RESULT.json ...]   # separate runs, a row per cell
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import scale
import stats
from procs import ROOT
from report import replace_block

DOC = ROOT / "docs" / "performance.md"


def block(res: dict[str, Any]) -> str:
    meta = res["meta"]
    cfg = meta["settings"]
    sizes = [str(s) for s in cfg["sizes"]]
    lines = [
        f"From a run on **{meta['date']}**, {meta['duration_s'] / 60:.1f} minutes: {cfg['rounds']} round(s) "
        f"interleaving sizes and frameworks; {meta['latency_s'] * 1000:.0f} ms model latency per request, 4 "
        f"model requests per run. Load average at start / end: {meta['load_avg_start'][0]:.1f} / "
        f"{meta['load_avg_end'][0]:.1f}. Figures: median [lowest–highest round].",
        "",
        "| Target | Measured |  |",
        "|---|---|---|",
    ]
    for target, measured, met in scale.targets(res):
        lines.append(f"| {target} | {measured} | {'met' if met else '**missed**'} |")
    lines += [
        "",
        "| Framework | in flight | runs failed | wall s | CPU ms/req | x at smallest | lag p99 ms "
        "| lag max ms | GC s | longest GC pause ms | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fw, per in res["frameworks"].items():
        for size in sizes:
            s = per[size]["summary"]
            ratio = stats.fmt(per.get("cpu_ratio"), 2, "x") if size == sizes[-1] and size != sizes[0] else ""
            failed = s["failed"]
            nfail = "n/a" if failed is None else f"{failed['median']:.0f}"
            if s["rounds_ok"] < s["rounds"] and not failed:
                nfail = "; ".join(str(x) for x in s["statuses"])
            lines.append(
                f"| {scale.FRAMEWORKS[fw]} | {int(size):,} | {nfail} | {stats.fmt(s['wall_s'], 1)} | "
                f"{stats.fmt(s['cpu_per_request_ms'])} | {ratio} | {stats.fmt(s['lag_p99_ms'], 0)} | "
                f"{stats.fmt(s['lag_max_ms'], 0)} | {stats.fmt(s['gc_s'])} | "
                f"{stats.fmt(s['gc_longest_ms'], 0)} | {stats.fmt(s['peak_rss_mb'], 0)} |")
    sse = res.get("sse")
    if sse and sse.get("summary"):
        s = sse["summary"]
        nfail = "n/a" if s["failed"] is None else f"{s['failed']['median']:.0f}"
        lines += [
            "",
            f"`chainreact serve` with {sse['clients']:,} streamed chat completions at once (one client "
            "process; time to first text from before each client connects; the same 100 ms model):",
            "",
            "| SSE clients | runs failed | TTFT p50 ms | TTFT p99 ms | wall s | server CPU ms/run "
            "| server peak RSS MB |",
            "|---|---|---|---|---|---|---|",
            f"| {sse['clients']:,} | {nfail} | "
            f"{stats.fmt(s['ttft_p50_ms'], 0)} | {stats.fmt(s['ttft_p99_ms'], 0)} | "
            f"{stats.fmt(s['wall_s'], 1)} | {stats.fmt(s['cpu_per_run_ms'])} | "
            f"{stats.fmt(s['server_peak_rss_mb'], 0)} |",
        ]
    kinds = [(fw, size, per[size]["summary"]["failures_by_kind"]) for fw, per in res["frameworks"].items()
             for size in sizes if per[size]["summary"]["failures_by_kind"]]
    if kinds:
        lines += ["", "Failed runs, by kind (all rounds):", ""]
        for fw, size, k in kinds:
            top = "; ".join(f"{n} x `{msg[:120]}`" for msg, n in list(k.items())[:3])
            lines.append(f"- {scale.FRAMEWORKS[fw]} at {int(size):,}: {top}")
    return "\n".join(lines)


def peer_row(fw: str, size: int, c: dict[str, Any], meta: dict[str, Any]) -> str:
    """One cell of a separate run: what the framework did in its budget, with the figures it has."""
    ran = c.get("status") in ("ok", "failed runs", "unfinished")
    if c.get("status") == "ok":
        outcome = "finished"
    elif c.get("status") == "failed runs":
        outcome = f"finished, {c['failed']:,} failed"
    else:
        outcome = str(c.get("reason") or c.get("status"))
    # Model requests the server got for the measured runs (the warm-up's left out): the runs still going
    # at the deadline had made some; CPU is per such request.
    warmup = c.get("runs", 0) - c.get("in_flight", 0)
    answered = (c.get("server_counts") or {}).get("requests", 0) - 4 * warmup
    cpu = c["cpu_s"] / answered * 1e3 if ran and answered > 0 and "cpu_s" in c else None
    cells = [f"{scale.done(c):,}", f"{c['failed']:,}", f"{c.get('unfinished', 0):,}", f"{answered:,}",
             f"{c['wall_s']:.0f}", f"{cpu:.2f}" if cpu else "n/a", f"{c['lag_p99_ms']:,.0f}",
             f"{c['peak_rss_mb']:.0f}"] if ran else ["n/a"] * 8
    load = f"{meta['load_avg_start'][0]:.1f} / {meta['load_avg_end'][0]:.1f}"
    return (f"| {scale.FRAMEWORKS[fw]} | {size:,} | {outcome} | {' | '.join(cells)} | "
            f"{meta['date']}, load {load} |")


def peers_block(results: list[dict[str, Any]]) -> str:
    """The frameworks at the largest size, each from its own run of bench/scale.py (a row per cell)."""
    budgets = sorted({f"{r['meta']['settings']['budget_s']:.0f}" for r in results})
    lines = [
        f"Each framework alone at its largest size, one round, a budget of {' or '.join(budgets)} s for "
        "the runs (`bench/scale.py --only NAME --sizes 10000 --rounds 1 --sse 0 --budget N --no-docs "
        "--out DIR`, then `python bench/scale_report.py --peers DIR/scale-latest.json ...`). Runs still "
        "going at the deadline are counted and cancelled; CPU is the client process's per model request "
        "the server got.",
        "",
        "| Framework | in flight | outcome | runs done | failed | unfinished | model requests "
        "| wall s | CPU ms/req | lag p99 ms | peak RSS MB | run (UTC), load start / end |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    failed = []
    for res in results:
        sizes = [str(s) for s in res["meta"]["settings"]["sizes"]]
        for fw, per in res["frameworks"].items():
            for c in per[sizes[-1]]["cells"]:
                lines.append(peer_row(fw, int(sizes[-1]), c, res["meta"]))
                kinds = c.get("failures_by_kind") or ({c["problem"]: c["failed"]} if c.get("problem") else {})
                if c.get("failed") and kinds:
                    top = "; ".join(f"{n:,} x `{msg[:120]}`" for msg, n in list(kinds.items())[:3])
                    failed.append(f"- {scale.FRAMEWORKS[fw]}: {top}")
    if failed:
        lines += ["", "Failed runs, by kind (the first kinds; a peer's error answer counts as failed):", "",
                  *failed]
    return "\n".join(lines)


def write(res: dict[str, Any]) -> Path:
    doc = DOC.read_text(encoding="utf-8")
    doc = replace_block(doc, "scale", block(res))
    tmp = DOC.with_suffix(".md.tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(DOC)
    return DOC


def write_peers(results: list[dict[str, Any]]) -> Path:
    doc = replace_block(DOC.read_text(encoding="utf-8"), "scale-peers", peers_block(results))
    tmp = DOC.with_suffix(".md.tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(DOC)
    return DOC


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peers"]:
        print(write_peers([json.loads(Path(a).read_text()) for a in sys.argv[2:]]))
        sys.exit(0)
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench" / "results" / "scale-latest.json"
    print(write(json.loads(src.read_text())))
