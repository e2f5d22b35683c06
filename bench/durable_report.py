"""The durable benchmark's section of docs/performance.md (block `generated:durable`) and its chart.

    python bench/durable_report.py [bench/results/durable-latest.json]

Only the block between `<!-- generated:durable -->` and `<!-- /generated:durable -->` is replaced; the
rest of the page is left as it is (a page without the markers gets the block appended).
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
CHART = "durable_overhead.png"
NAMES = {"chainreact_sandboxed": "chainreact (sandboxed)", "chainreact": "chainreact (no sandbox)",
         "pydantic_ai": "Pydantic AI", "openai_agents": "OpenAI Agents SDK"}
PEERS = ("pydantic_ai", "openai_agents")
COLORS = {"chainreact_sandboxed": "tab:orange", "chainreact": "tab:red", "pydantic_ai": "tab:blue",
          "openai_agents": "tab:green"}


def _added(v: dict[str, Any]) -> str:
    """The added figure (what the targets judge: for latency the percentile over all rounds' runs, for CPU
    the median of the rounds) and in brackets the lowest and highest round's own (`added_spread`)."""
    s = v.get("added_spread")
    if not s or s["n"] < 2:
        return _f(v["added"], sign=True)
    return f"{v['added']:+.2f} [{s['min']:+.2f}–{s['max']:+.2f}]"


def _rpm(t: dict[str, Any]) -> str:
    return stats.fmt(t["spread"], 0) if t.get("spread") else _f(t["runs_per_min"], ".0f")


def _f(v: float | None, fmt: str = ".2f", sign: bool = False) -> str:
    if v is None:
        return "–"
    return format(v, ("+" if sign else "") + fmt)


def _summary(results: dict[str, Any], fw: str) -> dict[str, Any] | None:
    r = results["frameworks"].get(fw) or {}
    s: dict[str, Any] | None = r.get("summary") if r.get("status") == "ok" else None
    return s or None


def targets(results: dict[str, Any]) -> list[list[str]]:
    """[target, measured, met] rows: chainreact's added cost per step below both peers'."""
    rows: list[list[str]] = []
    # The headline is chainreact inside the workflow sandbox, as the peers' workflows run.
    me = "chainreact_sandboxed" if _summary(results, "chainreact_sandboxed") else "chainreact"
    cr = _summary(results, me)
    peers = [(fw, s) for fw in PEERS if (s := _summary(results, fw))]
    if not cr or not peers:
        return rows
    for key, what in (("latency_p50_ms", "p50 latency"), ("latency_p99_ms", "p99 latency"),
                      ("worker_cpu_ms", "worker CPU")):
        mine = cr[key]["added"]
        theirs = ", ".join(f"{NAMES[fw]} {_added(s[key])} ms" for fw, s in peers)
        met = all(mine < s[key]["added"] for _, s in peers)
        rows.append([f"{what} added per step: below {' and '.join(NAMES[fw] for fw, _ in peers)}",
                     f"{NAMES[me]} {_added(cr[key])} ms; {theirs}", "met" if met else "**missed**"])
    for key, label in (("1", "1 worker"), ("2", "2 workers")):
        tk = f"throughput_{key}"
        if tk not in cr or not all(tk in s for _, s in peers):
            continue
        mine = cr[tk]["runs_per_min"]
        theirs = ", ".join(f"{NAMES[fw]} {_rpm(s[tk])}" for fw, s in peers)
        met = all(mine > s[tk]["runs_per_min"] for _, s in peers)
        rows.append([f"throughput with {label} (runs/min): above the peers'",
                     f"{NAMES[me]} {_rpm(cr[tk])}; {theirs}",
                     "met" if met else "**missed**"])
    return rows


def block(results: dict[str, Any], chart: str | None) -> str:
    m = results["meta"]
    s = m["settings"]
    load = m.get("load_avg") or []
    kind = "a QUICK run (rough numbers)" if s.get("quick") else "a full run"
    per_round = s["batches"] * s["batch"]
    cell_loads = [r["load_avg"] for fw in results["frameworks"].values() for r in fw.get("rounds", [])
                  if "load_avg" in r]
    out = [f"From {kind} on **{m['date']}**, {m['duration_s'] / 60:.1f} minutes, "
           f"{m.get('cores', '?')} cores: "
           f"{s['rounds']} round(s) interleaving the frameworks; per round {per_round} sequential runs per "
           f"mode ({s['warmup']} warm-up), then {s['burst']} runs at once with 1 worker and with 2. "
           f"{m['steps_per_run']} agent steps per run ({m['tool_steps']} tool calls, then the answer). "
           f"Temporal: {m.get('temporal_cli', '?')}."
           + (f" **Load average** at start / end: {load[0]} / {load[-1]}"
              + (f", {min(cell_loads)}-{max(cell_loads)} during the rounds" if cell_loads else "")
              + " (a shared machine: the CPU figures hold up, the times less)." if load else ""), ""]
    versions = sorted({f"{k} {v}" for fw in results["frameworks"].values()
                       for k, v in (fw.get("versions") or {}).items()})
    if versions:
        out += ["Versions: " + ", ".join(versions) + ".", ""]
    rows = targets(results)
    if rows:
        out += ["| Target | Measured |  |", "|---|---|---|", *("| " + " | ".join(r) + " |" for r in rows), ""]
    header = ["Framework", "p50/step in-process", "durable", "added",
              "p99/step in-process", "durable", "added",
              "CPU/step in-process", "worker", "added", "Temporal server CPU/step", "runs/min in-process",
              "1 worker", "2 workers", "worker peak RSS"]
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for fw, r in results["frameworks"].items():
        sm = _summary(results, fw)
        if sm is None:
            why = r.get("reason") or "no completed round"
            table.append(f"| {NAMES.get(fw, fw)} | n/a ({why}) |" + " |" * (len(header) - 2))
            continue
        cells = [NAMES.get(fw, fw)]
        for key in ("latency_p50_ms", "latency_p99_ms", "worker_cpu_ms"):
            v = sm[key]
            cells += [_f(v["inproc"]), _f(v["durable"]), _added(v)]
        cells.append(_f(sm.get("server_cpu_ms")))
        for key in ("inproc", "1", "2"):
            t = sm.get(f"throughput_{key}")
            cells.append(_rpm(t) if t else "–")
        cells.append(_f(sm.get("worker_peak_rss_mb"), ".0f") + " MB")
        table.append("| " + " | ".join(cells) + " |")
    out += ["Times and CPU in ms per agent step. *In-process*: the same agent run in one process; *durable*: "
            "the run as a workflow, timed by the caller (start, wait for the result), its CPU in the worker "
            "process(es); *added* = durable minus in-process (latency: percentiles over all rounds' runs, "
            "in brackets the lowest and highest round's own; CPU and runs/min: median of the rounds "
            "[lowest-highest round]). *chainreact (sandboxed)*: its workflow inside Temporal's workflow "
            "sandbox, as the peers' run: the like-for-like figure, the targets' one; *no sandbox*: "
            "chainreact's default worker. Temporal server CPU: the dev server's, per durable step. Runs/min: "
            f"{s['burst']} runs started at once.", "", *table, ""]
    logged = [f"{NAMES.get(fw, fw)} round {i + 1}: `{t}`" for fw, r in results["frameworks"].items()
              for i, rnd in enumerate(r.get("rounds", [])) for t in rnd.get("worker_tracebacks", [])]
    if logged:
        out += ["Worker processes logged these exceptions (every run still completed as scripted): "
                + "; ".join(logged) + ".", ""]
    if chart:
        out += [f"![durable overhead](img/{chart})", ""]
    return "\n".join(out)


def chart(results: dict[str, Any], img: Path = IMG) -> Path | None:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fws = [fw for fw in results["frameworks"] if _summary(results, fw)]
    if not fws:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    panels = ((axes[0], [("latency_p50_ms", "p50"), ("latency_p99_ms", "p99")], "Added latency per step",
               "ms (lower is better)"),
              (axes[1], [("worker_cpu_ms", "worker CPU")], "Added worker CPU per step",
               "ms (lower is better)"),
              (axes[2], [("throughput_1", "1 worker"), ("throughput_2", "2 workers")], "Throughput",
               "runs/min (higher is better)"))
    for ax, keys, title, ylabel in panels:
        width = 0.8 / len(fws)
        for i, fw in enumerate(fws):
            sm = _summary(results, fw) or {}
            vals = []
            for key, _ in keys:
                v = sm.get(key) or {}
                vals.append(float(v.get("added", v.get("runs_per_min", 0.0)) or 0.0))
            xs = [x + i * width for x in range(len(keys))]
            bars = ax.bar(xs, vals, width, label=NAMES[fw], color=COLORS.get(fw))
            for b, v in zip(bars, vals, strict=True):
                ax.text(b.get_x() + b.get_width() / 2, max(v, 0), f"{v:.1f}" if v < 100 else f"{v:.0f}",
                        ha="center", va="bottom", fontsize=8)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(keys))], [label for _, label in keys])
        ax.set_title(title)
        ax.set_ylabel(ylabel)
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
    doc = replace_block(doc, "durable", block(results, png.name if png else None))
    tmp = doc_path.with_suffix(".md.tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(doc_path)
    return [doc_path, *([png] if png else [])]


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench" / "results" / "durable-latest.json"
    for p in write(json.loads(src.read_text())):
        print(p)
