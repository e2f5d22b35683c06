"""Markdown tables and PNG charts from a suite result, written into docs/performance.md and docs/img/.

Only the blocks between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` are replaced, so the
hand-written text around them survives reruns. `python bench/report.py [results.json]` rewrites the doc
from a saved result (default bench/results/latest.json) without rerunning anything.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import stats
from procs import ROOT

DOC = ROOT / "docs" / "performance.md"
IMG = ROOT / "docs" / "img"
BLOCKS = ("run", "targets", "results")
NAMES = {"bare_httpx": "bare httpx", "bare_openai": "bare openai SDK", "chainreact": "chainreact",
         "pydantic_ai": "pydantic-ai", "openai_agents": "openai-agents", "langgraph": "langgraph",
         "agno": "agno"}
PEERS = ("pydantic_ai", "openai_agents", "langgraph", "agno")

TEMPLATE = """# Performance

How much does chainreact cost per step and at scale, next to its best-known peers? This page is written
by the benchmark suite (`make bench`, i.e. `bench/run`); the blocks marked *generated* are replaced on
every run, everything else is hand-written.

<!-- generated:run -->
<!-- /generated:run -->

## Targets

<!-- generated:targets -->
<!-- /generated:targets -->

## Results

<!-- generated:results -->
<!-- /generated:results -->
"""


def _r(results: dict[str, Any], fw: str, workload: str) -> dict[str, Any] | None:
    r = results["frameworks"].get(fw, {}).get(workload)
    return r if r and r.get("status") == "ok" else None


def _spread(r: dict[str, Any], key: str) -> dict[str, Any]:
    """A figure's spread over the rounds (a result from before rounds: one round of its value)."""
    s = (r.get("spread") or {}).get(key)
    return s if s else {"median": r[key], "min": r[key], "max": r[key], "n": 1, "rounds": [r[key]]}


def _cell(r: dict[str, Any] | None, key: str, fmt: str, results: dict[str, Any], fw: str, wl: str) -> str:
    """`median [lowest-highest round]` of a figure, or why there is none."""
    if r is not None:
        return stats.fmt(_spread(r, key), int(fmt.strip(".f")))
    raw = results["frameworks"].get(fw, {}).get(wl)
    if raw is None:
        return "not run"
    return f"n/a ({raw.get('reason', raw.get('status'))})"


def _ratio_spread(r: dict[str, Any] | None, base: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    """The spread of the per-round ratios r/base (round i of each ran side by side in round i)."""
    if r is None or base is None:
        return None
    return stats.ratios(zip(_spread(r, key)["rounds"], _spread(base, key)["rounds"], strict=False))


def _ratio(r: dict[str, Any] | None, base: dict[str, Any] | None, key: str) -> str:
    s = _ratio_spread(r, base, key)
    return stats.fmt(s, 2, "x") if s else "–"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def run_block(results: dict[str, Any]) -> str:
    m = results["meta"]
    mach = m["machine"]
    versions: dict[str, str] = {}
    for per in results["frameworks"].values():
        for r in per.values():
            versions.update(r.get("versions") or {})
    vers = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
    s = m["settings"]
    kind = "a QUICK run (few repetitions; rough numbers)" if m["quick"] else "one full run"
    n = int(s.get("rounds", 1))
    return (
        f"Figures below come from {kind} of the suite on **{m['date']}**, "
        f"{m['duration_s'] / 60:.1f} minutes.\n\n"
        f"- Machine: {mach['cpu']}, {mach['cores']} cores, Python {mach['python']}, {mach['platform']}\n"
        f"- Load average at start / end: {', '.join(f'{x:.1f}' for x in mach['load_avg_start'])} / "
        f"{', '.join(f'{x:.1f}' for x in mach.get('load_avg_end', []))} "
        "(the machine was shared; CPU time per request is robust to that, wall times less so)\n"
        f"- Versions: {vers}\n"
        f"- Rounds: {n}, interleaving the frameworks (each round runs every framework once per workload, "
        "in turn); a figure is the median over the rounds with the lowest and highest round in brackets, "
        "a ratio the median of each round's ratio (both sides measured in the same round).\n"
        f"- Settings per round: sequential workloads {s['warmup']} warm-up + {s['reps']} x {s['runs']} runs "
        f"(median of the {s['reps']} repetitions); concurrent {s['conc_runs']} runs at once, "
        f"{s['conc_reps']} repetition(s), {results['meta']['latency_s'] * 1e3:.0f} ms server latency; "
        f"build {s['agents']} agents (time budget {s['build_budget']:.0f} s); "
        f"imports median of {s['import_repeat']} fresh processes and TTFT {s['ttft_iterations']} iterations, "
        "once per round.\n"
    )


def targets_block(results: dict[str, Any]) -> str:
    rows: list[list[str]] = []

    def row(target: str, measured: str, ok: bool | None) -> None:
        rows.append([target, measured, "–" if ok is None else ("met" if ok else "**missed**")])

    for wl, label in (("sync", "sync"), ("stream", "streaming")):
        cr, base = _r(results, "chainreact", wl), _r(results, "bare_httpx", wl)
        peers = [(fw, r) for fw in PEERS if (r := _r(results, fw, wl))]
        if cr and peers:
            fw, best = min(peers, key=lambda p: p[1]["cpu_per_request_ms"])
            ratio = _ratio_spread(cr, best, "cpu_per_request_ms")
            assert ratio is not None
            row(f"CPU/request {label} <= 0.5x the fastest peer",
                f"{stats.fmt(ratio, 2, 'x')} ({NAMES[fw]})", ratio["median"] <= 0.5)
        if cr and base:
            ratio = _ratio_spread(cr, base, "cpu_per_request_ms")
            assert ratio is not None
            row(f"CPU/request {label} <= 1.5x bare httpx", stats.fmt(ratio, 2, "x"), ratio["median"] <= 1.5)
    conc = {fw: r for fw in results["frameworks"] if fw not in ("bare_httpx", "bare_openai")
            and (r := _r(results, fw, "concurrent"))}
    if "chainreact" in conc and len(conc) > 1:
        fastest = min((f for f in conc if f != "chainreact"), key=lambda f: conc[f]["wall_s"])
        n = results["meta"]["settings"]["conc_runs"]
        def conc_cell(fw: str, key: str, fmt: str) -> str:
            return _cell(conc[fw], key, fmt, results, fw, "concurrent")

        row(f"{n} concurrent runs: fastest wall of all frameworks (baselines aside)",
            f"chainreact {conc_cell('chainreact', 'wall_s', '.2f')} s; "
            f"fastest peer {NAMES[fastest]} {conc_cell(fastest, 'wall_s', '.2f')} s",
            conc["chainreact"]["wall_s"] <= conc[fastest]["wall_s"])
        lowest = min((f for f in conc if f != "chainreact"), key=lambda f: conc[f]["peak_rss_mb"])
        row(f"{n} concurrent runs: lowest peak RSS of all frameworks (baselines aside)",
            f"chainreact {conc_cell('chainreact', 'peak_rss_mb', '.0f')} MB; lowest peer {NAMES[lowest]} "
            f"{conc_cell(lowest, 'peak_rss_mb', '.0f')} MB",
            conc["chainreact"]["peak_rss_mb"] <= conc[lowest]["peak_rss_mb"])
    imp = results.get("imports") or {}
    ci = (imp.get("imports") or {}).get("chainreact")
    if ci and ci.get("status") == "ok":
        row("`import chainreact` < 100 ms", f"{_sp(ci, 'ms', 0)} ms wall ({_sp(ci, 'cpu_ms', 0)} ms CPU)",
            ci["ms"] < 100)
    if imp.get("cli_help"):
        h = imp["cli_help"]
        row("`chainreact --help` < 300 ms", f"{_sp(h, 'ms', 0)} ms wall ({_sp(h, 'cpu_ms', 0)} ms CPU)",
            h["ms"] < 300)
    t = results.get("ttft")
    if t and t.get("status") == "ok":
        v = t["variants"]["firstContent, tools"]
        fc = v["overhead_ms"]
        row("firstContent adds < 1 ms to time-to-first-text", f"{_sp(v, 'overhead_ms', 2, True)} ms", fc < 1)
    return _table(["Target", "Measured", ""], rows) + "\n"


def _sp(row: dict[str, Any], key: str, digits: int, sign: bool = False) -> str:
    """A figure measured once per round: median [lowest-highest round] (the bare value from older results)."""
    sp = (row.get("spread") or {}).get(key)
    if sp:
        return stats.fmt(sp, digits, sign=sign)
    return f"{row[key]:{'+' if sign else ''}.{digits}f}"


def results_block(results: dict[str, Any], charts: list[str]) -> str:
    fws = list(results["frameworks"])
    out: list[str] = []
    base_s, base_t = _r(results, "bare_httpx", "sync"), _r(results, "bare_httpx", "stream")
    rows = []
    for fw in fws:
        s, t = _r(results, fw, "sync"), _r(results, fw, "stream")
        rows.append([NAMES[fw], _cell(s, "cpu_per_request_ms", ".2f", results, fw, "sync"),
                     _ratio(s, base_s, "cpu_per_request_ms"),
                     _cell(t, "cpu_per_request_ms", ".2f", results, fw, "stream"),
                     _ratio(t, base_t, "cpu_per_request_ms"),
                     _cell(s, "wall_per_run_ms", ".1f", results, fw, "sync"),
                     _cell(t, "wall_per_run_ms", ".1f", results, fw, "stream"),
                     _cell(s, "peak_rss_mb", ".0f", results, fw, "sync")])
    out += ["### Per model request: sequential 3-tool-step runs (4 model requests per run)", "",
            "Client-process CPU time (`time.process_time`) per model request: median over the rounds "
            "[lowest-highest round]; x = ratio to the bare httpx loop in the same round.", "",
            _table(["Framework", "CPU ms/req (sync)", "x httpx", "CPU ms/req (stream)", "x httpx",
                    "wall ms/run (sync)", "wall ms/run (stream)", "peak RSS MB (sync)"], rows), ""]

    base_c = _r(results, "bare_httpx", "concurrent")
    rows = []
    for fw in fws:
        c = _r(results, fw, "concurrent")
        rows.append([NAMES[fw], _cell(c, "wall_s", ".2f", results, fw, "concurrent"),
                     _ratio(c, base_c, "wall_s"),
                     _cell(c, "cpu_per_request_ms", ".2f", results, fw, "concurrent"),
                     _cell(c, "peak_rss_mb", ".0f", results, fw, "concurrent"),
                     _ratio(c, base_c, "peak_rss_mb")])
    n = results["meta"]["settings"]["conc_runs"]
    latency_ms = results["meta"]["latency_s"] * 1e3
    out += [f"### {n} runs at once, {latency_ms:.0f} ms server latency per request", "",
            "Wall time of the whole batch and the runner process's peak RSS (imports included): median "
            "over the rounds [lowest-highest round].", "",
            _table(["Framework", "wall s", "x httpx", "CPU ms/req", "peak RSS MB", "x httpx"], rows), ""]

    rows = []
    for fw in fws:
        if fw in ("bare_httpx", "bare_openai"):
            continue  # no agent object to build
        b = _r(results, fw, "build")
        raw = results["frameworks"][fw].get("build") or {}
        built = f"{b['agents']}{' (time budget hit)' if b['partial'] else ''}" if b else "–"
        rows.append([NAMES[fw], _cell(b, "cpu_per_agent_us", ".1f", results, fw, "build"),
                     _cell(b, "wall_per_agent_us", ".1f", results, fw, "build"),
                     _cell(b, "kib_per_agent", ".2f", results, fw, "build"), built, raw.get("note", "")])
    out += ["### Building agents from a config", "",
            "Every framework builds the same agent from one shared model client and one shared tool; "
            "memory is the RSS growth with all agents alive, per agent. The last agent built then does one "
            "real run against the server.", "",
            _table(["Framework", "CPU us/agent", "wall us/agent", "KiB/agent", "agents built",
                    "what is built"], rows), ""]

    imp = results.get("imports")
    if imp:
        rows = []
        for name, v in imp["imports"].items():
            ok = v.get("status") == "ok"
            rows.append([name, f"`{v['statement']}`", _sp(v, "ms", 0) if ok else f"n/a ({v.get('reason')})",
                         _sp(v, "cpu_ms", 0) if ok else "–"])
        if imp.get("cli_help"):
            rows.append(["`chainreact --help` (whole command)", "–", _sp(imp["cli_help"], "ms", 0),
                         _sp(imp["cli_help"], "cpu_ms", 0)])
        rows.append(["`python -c pass` (interpreter start-up)", "–", _sp(imp["python_startup"], "ms", 0),
                     _sp(imp["python_startup"], "cpu_ms", 0)])
        slow = ", ".join(f"{m} {t:.1f}" for m, t in imp.get("agent_slowest_modules", [])[:6])
        out += ["### Import time", "",
                "Measured inside a fresh process around the import statement; "
                f"median of {imp['repeat']} processes per round, then the median over "
                f"{imp.get('rounds', 1)} round(s) [lowest–highest round].", "",
                _table(["What", "Statement", "wall ms", "CPU ms"], rows), "",
                "Largest self times under `from chainreact.agent import Agent` (-X importtime, ms): "
                f"{slow}.", ""]

    t = results.get("ttft")
    if t and t.get("status") == "ok":
        rows = [["raw stream (bare httpx)", _sp(t, "raw_ms", 2), "–"]]
        rows += [[name, _sp(v, "ttft_ms", 2), _sp(v, "overhead_ms", 2, True)]
                 for name, v in t["variants"].items()]
        out += ["### Time to first text delta per streamToolCallCheck mode", "",
                f"A plain answer streamed in ~20 chunks 5 ms apart; {t['iterations']} iterations in a "
                f"shuffled order per round, medians; over {t.get('rounds', 1)} round(s), the median "
                "[lowest–highest round]. `drain` waits for the end of the stream and `auto` with tools "
                "holds text for "
                "its 0.5 s window or until the stream ends (here ~0.1 s), both by design; `firstContent` and "
                "tool-less agents release the first text at once.", "",
                _table(["Variant", "TTFT ms", "over raw ms"], rows), ""]
    if charts:
        out += ["### Charts", ""] + [f"![{Path(c).stem}](img/{Path(c).name})" for c in charts] + [""]
    return "\n".join(out)


def charts(results: dict[str, Any]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    IMG.mkdir(parents=True, exist_ok=True)
    fws = list(results["frameworks"])
    written: list[Path] = []

    def save(fig: Any, name: str) -> None:
        path = IMG / name
        tmp = path.with_suffix(".tmp.png")
        fig.tight_layout()
        fig.savefig(tmp, dpi=110)
        plt.close(fig)
        tmp.replace(path)
        written.append(path)

    def bars(ax: Any, workload: str, key: str, title: str, unit: str) -> None:
        pairs = [(NAMES[f], r[key]) for f in fws if (r := _r(results, f, workload))]
        if not pairs:
            ax.set_visible(False)
            return
        names, vals = zip(*pairs, strict=True)
        colors = ["tab:orange" if n == "chainreact" else ("tab:gray" if n.startswith("bare") else "tab:blue")
                  for n in names]
        ax.barh(names, vals, color=colors)
        ax.invert_yaxis()
        ax.set_title(title)
        ax.set_xlabel(unit)
        for i, v in enumerate(vals):
            ax.text(v, i, f" {v:.3g}", va="center", fontsize=8)

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    bars(axes[0], "sync", "cpu_per_request_ms", "CPU per model request, sync", "ms (lower is better)")
    bars(axes[1], "stream", "cpu_per_request_ms", "CPU per model request, streaming", "ms (lower is better)")
    save(fig, "cpu_per_request.png")
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    n = results["meta"]["settings"]["conc_runs"]
    bars(axes[0], "concurrent", "wall_s", f"{n} concurrent runs: wall", "s (lower is better)")
    bars(axes[1], "concurrent", "peak_rss_mb", f"{n} concurrent runs: peak RSS", "MB (lower is better)")
    save(fig, "concurrent.png")
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    bars(axes[0], "build", "cpu_per_agent_us", "Build one agent: CPU", "us (lower is better)")
    bars(axes[1], "build", "kib_per_agent", "Build one agent: memory", "KiB (lower is better)")
    save(fig, "build.png")
    imp = (results.get("imports") or {}).get("imports") or {}
    pairs = [(k, v["ms"]) for k, v in imp.items() if v.get("status") == "ok"]
    if pairs:
        fig, ax = plt.subplots(figsize=(7, 3.6))
        names, vals = zip(*pairs, strict=True)
        ax.barh(names, vals,
                color=["tab:orange" if n.startswith("chainreact") else "tab:blue" for n in names])
        ax.invert_yaxis()
        ax.set_title("Import time (wall)")
        ax.set_xlabel("ms (lower is better)")
        for i, v in enumerate(vals):
            ax.text(v, i, f" {v:.0f}", va="center", fontsize=8)
        save(fig, "imports.png")
    return written


def replace_block(doc: str, name: str, body: str) -> str:
    start, end = f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    block = f"{start}\n{body.strip()}\n{end}"
    if pattern.search(doc):
        return pattern.sub(lambda _: block, doc, count=1)
    return doc.rstrip() + "\n\n" + block + "\n"  # a marker deleted by hand: append, never drop results


def write(results: dict[str, Any]) -> list[Path]:
    pngs = charts(results)
    doc = DOC.read_text(encoding="utf-8") if DOC.exists() else TEMPLATE
    doc = replace_block(doc, "run", run_block(results))
    doc = replace_block(doc, "targets", targets_block(results))
    doc = replace_block(doc, "results", results_block(results, [str(p) for p in pngs]))
    DOC.parent.mkdir(parents=True, exist_ok=True)
    tmp = DOC.with_suffix(".md.tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(DOC)
    return [DOC, *pngs]


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench" / "results" / "latest.json"
    for p in write(json.loads(src.read_text())):
        print(p)
