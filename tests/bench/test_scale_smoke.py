"""CI smoke of bench/scale.py (runs in flight in one process, and SSE clients of `chainreact serve`): it
runs end to end, every run completes as scripted, the figures docs/performance.md quotes are there, and
its doc block renders. Tiny sizes, correctness only, no timing assertions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "frameworks"))

import scale_report  # noqa: E402


def test_quick_scale_bench_completes_every_run(tmp_path: Path) -> None:
    cp = subprocess.run(
        [sys.executable, str(BENCH / "scale.py"), "--only", "chainreact", "--sizes", "5,30",
         "--rounds", "2", "--sse", "20", "--no-docs", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert cp.returncode == 0, cp.stdout + cp.stderr
    res = json.loads((tmp_path / "scale-latest.json").read_text())
    assert res["failures"] == []
    for fw in ("chainreact",):
        for size in ("5", "30"):
            cells = res["frameworks"][fw][size]["cells"]
            assert len(cells) == 2  # one per round
            for c in cells:
                assert c["status"] == "ok", c
                assert c["completed"] == c["runs"] == int(size) + 1 and c["failed"] == 0
                assert c["server_counts"]["requests"] == 4 * c["runs"]  # the model server saw every request
                assert c["lag_samples"] >= 1 and c["cpu_per_request_ms"] > 0
                assert 0 <= c["lag_p50_ms"] <= c["lag_p99_ms"] <= c["lag_max_ms"]
            s = res["frameworks"][fw][size]["summary"]
            assert s["rounds_ok"] == 2 and s["cpu_per_request_ms"]["n"] == 2
            assert s["cpu_per_request_ms"]["min"] <= s["cpu_per_request_ms"]["median"] \
                <= s["cpu_per_request_ms"]["max"]
        assert res["frameworks"][fw]["cpu_ratio"]["n"] == 2  # 30 against 5, per round
    sse = res["sse"]  # 20 streamed chat completions at once against `chainreact serve`, per round
    assert sse["clients"] == 20 and len(sse["cells"]) == 2
    for c in sse["cells"]:
        assert c["status"] == "ok", c
        assert c["completed"] == c["runs"] == 22 and c["failed"] == 0  # 2 warm-up runs
        assert c["server_counts"]["requests"] == 4 * c["runs"] and c["ttft_n"] == 20
        assert 0 < c["ttft_p50_ms"] <= c["ttft_p99_ms"]
    assert sse["summary"]["rounds_ok"] == 2 and sse["summary"]["ttft_p99_ms"]["n"] == 2
    block = scale_report.block(res)
    assert "| chainreact | 30 | 0 |" in block and "CPU per request at 30 in flight" in block
    assert "`chainreact serve` with 20 streamed chat completions at once" in block and "| 20 | 0 |" in block


def test_a_failed_run_is_counted_by_kind(fake_llm: Any) -> None:
    # A model that answers 500: every run fails; the runner counts them by kind, scale.cell marks the cell.
    import procs
    import scale

    llm = fake_llm([{"status": 500, "message": "boom"}], loop=True)
    r = procs.run_runner("chainreact", llm.url, "scale", ["--runs", "3", "--warmup", "0"], timeout=120)
    assert r["status"] == "ok" and r["failed"] == 3 and r["completed"] == 0
    (kind,) = r["failures_by_kind"]
    assert kind.startswith("ModelError") and "HTTP 500" in kind and r["failures_by_kind"][kind] == 3
    assert scale.summarise([{**r, "status": "failed runs"}])["failures_by_kind"] == {kind: 3}


def test_a_cell_past_its_budget_reports_what_it_did() -> None:
    # A peer too slow for the budget (here: a model answering after 3 s, a 1 s deadline) is no error: the
    # runner counts the runs still going, cancels them and reports; the peers' block shows the outcome.
    import procs
    import scale

    with procs.Server.start(latency=3.0) as srv:
        r = procs.run_runner("chainreact", srv.url, "scale", ["--runs", "4", "--warmup", "0", "--deadline",
                                                              "1"], timeout=120)
        counts = srv.stop()
    assert r["status"] == "ok" and r["unfinished"] == 4 and r["completed"] == 0 and r["failed"] == 0, r
    assert r["cpu_s"] > 0 and 1 <= r["wall_s"] < 3
    assert scale.unfinished(r, 1) == "did not finish in 1 s: 0 of 4 done, 0 failed, 4 still running"
    cell = {**r, "status": "unfinished", "reason": scale.unfinished(r, 1), "server_counts": counts}
    res = {"meta": {"date": "2026-12-02 01:00 UTC", "settings": {"sizes": [4], "budget_s": 1.0},
                    "load_avg_start": [1.0], "load_avg_end": [2.0]},
           "frameworks": {"bare_httpx": {"4": {"cells": [cell]}}}}
    block = scale_report.peers_block([res])
    row = "| bare httpx | 4 | did not finish in 1 s: 0 of 4 done, 0 failed, 4 still running | 0 | 0 | 4 | 4 |"
    assert row in block, block  # 4 model requests sent, none answered in time
    # Rounds of one run make one row: each outcome counted, each figure median [lowest-highest] over the
    # rounds whose runner reported (a killed runner reports nothing).
    later = {**cell, "wall_s": 3.0, "peak_rss_mb": cell["peak_rss_mb"] + 10}
    killed = {"status": "timeout", "reason": "runner timed out after 181 s"}
    res["meta"]["settings"]["rounds"] = 3
    res["frameworks"]["bare_httpx"]["4"]["cells"] = [cell, later, killed]
    row = scale_report.peers_block([res]).splitlines()[4]
    assert row.startswith("| bare httpx | 4 | did not finish in 1 s in 2 of 3 rounds; runner timed out "
                          "after 181 s in 1 of 3 rounds | 0 | 0 | 4 | 4 | "), row
    wall = f"{(cell['wall_s'] + 3.0) / 2:.0f} [{cell['wall_s']:.0f}–3]"
    assert f"| {wall} |" in row, row
