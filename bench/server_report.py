"""The server benchmark's section of docs/performance.md (block `generated:server`) and its chart.

    python bench/server_report.py [bench/results/server-latest.json]

Only the block between `<!-- generated:server -->` and `<!-- /generated:server -->` is replaced; the rest
of the page (the suite's blocks, the hand-written text) is left as it is.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import stats
from procs import ROOT

DOC = ROOT / "docs" / "performance.md"
IMG = ROOT / "docs" / "img"
CHART = "server_overhead.png"
NAMES = {"chainreact": "chainreact serve", "agno": "agno AgentOS"}


def _f(v: float | None, fmt: str = ".2f", sign: bool = False) -> str:
    if v is None:
        return "–"
    return format(v, ("+" if sign else "") + fmt)


def _added(v: dict[str, Any]) -> str:
    """An added figure: median of the rounds' differences [lowest-highest round]."""
    if v.get("added_spread"):
        return stats.fmt(v["added_spread"], 2, sign=True)
    return _f(v["added"], sign=True)


def _summary(results: dict[str, Any], fw: str, level: str) -> dict[str, Any] | None:
    r = results["frameworks"].get(fw) or {}
    if r.get("status") != "ok":
        return None
    s: dict[str, Any] | None = r["levels"].get(level, {}).get("summary")
    return s


def levels(results: dict[str, Any]) -> list[str]:
    return ["1", str(results["meta"]["settings"]["concurrency"])]


def targets(results: dict[str, Any]) -> list[list[str]]:
    """[target, measured, met] rows."""
    rows: list[list[str]] = []

    def row(target: str, measured: str, ok: bool | None) -> None:
        rows.append([target, measured, "–" if ok is None else ("met" if ok else "**missed**")])

    one = _summary(results, "chainreact", "1")
    if one and one["ttft_p50_ms"]["added"] is not None:
        added = one["ttft_p50_ms"]["added"]
        row("`chainreact serve` adds < 1 ms to p50 time to first token at 1 stream",
            f"{_added(one['ttft_p50_ms'])} ms", added < 1)
    for level in levels(results):
        cr, ag = _summary(results, "chainreact", level), _summary(results, "agno", level)
        if not (cr and ag):
            continue
        for key, what in (("ttft_p50_ms", "p50 time to first token"), ("cpu_per_run_ms", "CPU per request")):
            a, b = cr[key]["added"], ag[key]["added"]
            if a is None or b is None:
                continue
            row(f"{what} added by the server at {level} stream(s): below AgentOS's",
                f"chainreact {_added(cr[key])} ms, AgentOS {_added(ag[key])} ms", a < b)
    return rows


def _instr(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The frameworks measured in instructions (bench/server_instr.py), when the run did."""
    fws = (results.get("instr") or {}).get("frameworks") or {}
    return {fw: r for fw, r in fws.items() if r.get("status") == "ok"}


def block(results: dict[str, Any], chart: str | None) -> str:
    m = results["meta"]
    s = m["settings"]
    load = m.get("load_avg")
    kind = "a QUICK run (rough numbers)" if s.get("quick") else "a full run"
    out = [f"From {kind} on **{m['date']}**, {m['duration_s'] / 60:.1f} minutes: {s['rounds']} round(s); "
           f"at 1 stream {s['seq_runs']} runs per mode, at {s['concurrency']} streams {s['waves']} "
           "wave(s) per mode; medians over rounds."
           + (f" Load average at start / end: {load[0]} / {load[1]} (a shared machine: the CPU figures "
              "hold up, the times less)." if load else "")
           + (f" uvicorn (both servers): {m['uvicorn']}." if m.get("uvicorn") else ""), ""]
    rows = targets(results)
    if rows:
        lines = ["| Target | Measured |  |", "|---|---|---|"] + ["| " + " | ".join(r) + " |" for r in rows]
        out += [*lines, ""]
    header = ["Server", "streams", "TTFT p50 in-process", "served", "added", "TTFT p99 in-process", "served",
              "added", "CPU/request in-process", "server", "added", "server peak RSS"]
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for fw in results["frameworks"]:
        r = results["frameworks"][fw]
        if r.get("status") != "ok":
            table.append(f"| {NAMES.get(fw, fw)} | – | n/a ({r.get('reason')}) |" + " |" * (len(header) - 3))
            continue
        for level in levels(results):
            sm = _summary(results, fw, level)
            if sm is None:
                continue
            cells = [NAMES.get(fw, fw), level]
            for key in ("ttft_p50_ms", "ttft_p99_ms", "cpu_per_run_ms"):
                v = sm[key]
                cells += [_f(v["inproc"]), _f(v["served"]), _added(v)]
            cells.append(_f(sm.get("server_peak_rss_mb"), ".0f") + " MB")
            table.append("| " + " | ".join(cells) + " |")
    out += ["All times in ms. *In-process*: the agent run in the measuring process; *served*: the same run "
            "through the server, timed by the client; *added* = served minus in-process (median of the "
            "rounds' differences [lowest-highest round]). CPU/request: the measuring process's CPU per "
            "in-process run, the "
            "serving process's CPU per request.", "", *table, ""]
    if chart:
        out += [f"![server overhead](img/{chart})", ""]
    return "\n".join(out)


def instr_block(results: dict[str, Any]) -> str:
    """Block `generated:server-instr`: instructions per request (`server_bench.py --instr`), rewritten only
    by a run that counted them (the suite's server workload does not: callgrind takes minutes)."""
    ins = _instr(results)
    n = results["instr"]["runs"]
    reps = results["instr"].get("repeat", 1)
    out = [f"From a run on **{results['meta']['date']}**: valgrind's callgrind (load-independent), {n} "
           f"sequential requests after a warm-up, {reps} time(s) in fresh processes; median "
           "[lowest-highest], in millions of instructions.", ""]
    if "chainreact" in ins and "agno" in ins:
        a, b = ins["chainreact"]["added"], ins["agno"]["added"]
        met = "met" if a < b else "**missed**"
        out += ["| Target | Measured |  |", "|---|---|---|",
                "| instructions per request added by the server at 1 stream: below AgentOS's | "
                f"chainreact {_m(ins['chainreact'], 'added', True)} M, "
                f"AgentOS {_m(ins['agno'], 'added', True)} M"
                f" | {met} |", ""]
    out += ["| Server | per run in-process | per request served | added |", "|---|---|---|---|"]
    out += [f"| {NAMES.get(fw, fw)} | {_m(r, 'inproc_per_run')} | {_m(r, 'served_per_request')} | "
            f"{_m(r, 'added', True)} |" for fw, r in ins.items()]
    return "\n".join(out) + "\n"


def _m(r: dict[str, Any], key: str, sign: bool = False) -> str:
    """Millions of instructions, with the spread over repetitions when there were several."""
    s = (r.get("spread") or {}).get(key) or {"median": r[key], "min": r[key], "max": r[key], "n": 1}
    return stats.fmt({k: (v / 1e6 if k in ("median", "min", "max") else v) for k, v in s.items()}, 2,
                     sign=sign)


def chart(results: dict[str, Any], img: Path = IMG) -> Path | None:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fws = [fw for fw in results["frameworks"] if results["frameworks"][fw].get("status") == "ok"]
    if not fws:
        return None
    lv = levels(results)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for ax, key, title in ((axes[0], "ttft_p50_ms", "Added p50 time to first token"),
                           (axes[1], "cpu_per_run_ms", "Added CPU per request")):
        width = 0.8 / len(fws)
        for i, fw in enumerate(fws):
            vals = []
            for level in lv:
                sm = _summary(results, fw, level)
                vals.append((sm[key]["added"] or 0.0) if sm else 0.0)
            xs = [x + i * width for x in range(len(lv))]
            bars = ax.bar(xs, vals, width, label=NAMES.get(fw, fw),
                          color="tab:orange" if fw == "chainreact" else "tab:blue")
            for b, v in zip(bars, vals, strict=True):
                ax.text(b.get_x() + b.get_width() / 2, v, f"{v:.2f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(lv))], [f"{n} stream(s)" for n in lv])
        ax.set_title(title)
        ax.set_ylabel("ms (lower is better)")
        ax.set_yscale("symlog", linthresh=1)
        ax.legend(fontsize=8)
    img.mkdir(parents=True, exist_ok=True)
    path = img / CHART
    tmp = path.with_suffix(".tmp.png")
    fig.tight_layout()
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
    return path


def write(results: dict[str, Any], doc_path: Path = DOC) -> list[Path]:
    from report import replace_block

    png = chart(results, doc_path.parent / "img")
    doc = doc_path.read_text(encoding="utf-8")
    doc = replace_block(doc, "server", block(results, png.name if png else None))
    if _instr(results):
        doc = replace_block(doc, "server-instr", instr_block(results))
    tmp = doc_path.with_suffix(".md.tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(doc_path)
    return [doc_path, *([png] if png else [])]


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench" / "results" / "server-latest.json"
    for p in write(json.loads(src.read_text())):
        print(p)
