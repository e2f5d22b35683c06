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


def peer_figures(c: dict[str, Any]) -> dict[str, float] | None:
    """What one cell of a separate run did in its budget (None: its runner never reported)."""
    if c.get("status") not in ("ok", "failed runs", "unfinished"):
        return None
    # Model requests the server got for the measured runs (the warm-up's left out): the runs still going
    # at the deadline had made some; CPU is per such request.
    warmup = c.get("runs", 0) - c.get("in_flight", 0)
    answered = (c.get("server_counts") or {}).get("requests", 0) - 4 * warmup
    cpu = c["cpu_s"] / answered * 1e3 if answered > 0 and "cpu_s" in c else None
    return {"done": scale.done(c), "failed": c["failed"], "unfinished": c.get("unfinished", 0),
            "requests": answered, "wall": c["wall_s"], "cpu": cpu, "lag": c["lag_p99_ms"],
            "rss": c["peak_rss_mb"]}


def outcome(c: dict[str, Any], rounds: int, budget: float) -> str:
    """A cell's outcome: in full for a single round, by kind when rounds are counted together."""
    status = c.get("status")
    if status == "ok":
        return "finished"
    if status == "failed runs":
        return f"finished, {c['failed']:,} failed" if rounds == 1 else "finished with failed runs"
    if status == "unfinished" and rounds > 1:
        return f"did not finish in {budget:.0f} s"
    return str(c.get("reason") or status)


PEER_COLUMNS = (("done", 0, ","), ("failed", 0, ","), ("unfinished", 0, ","), ("requests", 0, ","),
                ("wall", 0, ""), ("cpu", 2, ""), ("lag", 0, ","), ("rss", 0, ""))


def peer_row(fw: str, size: int, cells: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """A framework's row: every round's outcome, and median [lowest-highest round] of each figure over
    the rounds whose runner reported (just the value when they agree)."""
    budget = float(meta["settings"]["budget_s"])
    kinds: dict[str, int] = {}
    for c in cells:
        k = outcome(c, len(cells), budget)
        kinds[k] = kinds.get(k, 0) + 1
    said = kinds.popitem()[0] if len(cells) == 1 else "; ".join(
        f"{k} in {n} of {len(cells)} rounds" for k, n in kinds.items())
    figures = [f for f in map(peer_figures, cells) if f is not None]
    out = []
    for key, digits, sep in PEER_COLUMNS:
        s = stats.spread(f[key] for f in figures)
        if not s:
            out.append("n/a")
            continue
        form = f"{{:{sep}.{digits}f}}"
        med = form.format(s["median"])
        lo, hi = form.format(s["min"]), form.format(s["max"])
        out.append(med if lo == hi else f"{med} [{lo}–{hi}]")  # every round the same: the one value
    load = f"{meta['load_avg_start'][0]:.1f} / {meta['load_avg_end'][0]:.1f}"
    return f"| {scale.FRAMEWORKS[fw]} | {size:,} | {said} | {' | '.join(out)} | {meta['date']}, load {load} |"


def peers_block(results: list[dict[str, Any]]) -> str:
    """The frameworks at the largest size, from separate runs of bench/scale.py: a row per framework and
    run, its figures the median [lowest-highest] of the run's rounds."""
    budgets = sorted({f"{r['meta']['settings']['budget_s']:.0f}" for r in results})
    rounds = sorted({str(r["meta"]["settings"].get("rounds", 1)) for r in results})
    lines = [
        f"Each framework at its largest size, {' or '.join(rounds)} round(s) interleaving the frameworks, "
        f"a budget of {' or '.join(budgets)} s for the runs (`bench/scale.py --only NAMES --sizes 10000 "
        "--rounds N --sse 0 --budget S --no-docs --out DIR`, then `python bench/scale_report.py --peers "
        "DIR/scale-latest.json ...`). Runs still going at the deadline are counted and cancelled; CPU is "
        "the client process's per model request the server got. Figures: median [lowest–highest round] "
        "over the rounds whose process reported.",
        "",
        "| Framework | in flight | outcome | runs done | failed | unfinished | model requests "
        "| wall s | CPU ms/req | lag p99 ms | peak RSS MB | run (UTC), load start / end |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    failed = []
    for res in results:
        sizes = [str(s) for s in res["meta"]["settings"]["sizes"]]
        for fw, per in res["frameworks"].items():
            cells = per[sizes[-1]]["cells"]
            lines.append(peer_row(fw, int(sizes[-1]), cells, res["meta"]))
            kinds: dict[str, int] = {}
            for c in cells:
                found = c.get("failures_by_kind") or ({c["problem"]: c["failed"]} if c.get("problem") else {})
                for msg, n in found.items():
                    kinds[msg] = kinds.get(msg, 0) + n
            if kinds:
                top = "; ".join(f"{n:,} x `{msg[:120]}`" for msg, n in list(kinds.items())[:3])
                failed.append(f"- {scale.FRAMEWORKS[fw]}: {top}")
    if failed:
        lines += ["", "Failed runs, by kind (the first kinds, all rounds; a peer's error answer counts as "
                  "failed):", "", *failed]
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
