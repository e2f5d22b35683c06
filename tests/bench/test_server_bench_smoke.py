"""CI smoke of the server benchmark (bench/server_bench.py): it runs end to end and its checks bite.

Correctness only, no timing assertions. chainreact only (CI doesn't install agno, the `bench` extra);
real processes: the scripted model server, `chainreact serve`, the measuring worker.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "frameworks"))

import procs  # noqa: E402
import server_bench  # noqa: E402
import server_load  # noqa: E402
import server_report  # noqa: E402


def test_quick_server_bench_completes_every_run(tmp_path: Path) -> None:
    cp = subprocess.run(
        [sys.executable, str(BENCH / "server_bench.py"), "--only", "chainreact", "--runs", "4",
         "--concurrency", "12", "--waves", "1", "--rounds", "1", "--warmup", "1", "--no-docs",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=180, cwd=ROOT,
    )
    assert cp.returncode == 0, cp.stdout + cp.stderr
    results = json.loads((tmp_path / "server-latest.json").read_text())
    assert results["failures"] == []
    levels = results["frameworks"]["chainreact"]["levels"]
    assert set(levels) == {"1", "12"}
    for level, measured in (("1", 4), ("12", 12)):
        (r,) = levels[level]["rounds"]
        assert r["status"] == "ok", r
        warmup = 1
        for mode in ("inproc", "served"):
            m = r[mode]
            assert m["runs"] == measured + warmup and m["completed"] == m["runs"]
            assert m["ttft_n"] == measured  # every measured run streamed text, in both modes
            assert 0 < m["ttft_p50_ms"] <= m["ttft_p99_ms"]
            assert m["cpu_per_run_ms"] > 0
        # The model server, in its own process, saw exactly 4 streamed requests per run of both modes.
        counts = r["server_counts"]
        assert counts["requests"] == counts["streamed"] == 4 * 2 * (measured + warmup)
        summary = levels[level]["summary"]
        for key in ("ttft_p50_ms", "ttft_p99_ms", "cpu_per_run_ms"):
            s = summary[key]
            assert s["added"] == pytest.approx(s["served"] - s["inproc"])
        assert summary["server_peak_rss_mb"] > 0


def test_a_server_that_answers_wrong_fails_the_bench(fake_llm: Any, tmp_path: Path) -> None:
    # A model that never calls the tool and says something else: every served and in-process run is wrong.
    llm = fake_llm([{"text": "something else"}], loop=True)
    folder = server_bench.write_agent(tmp_path / "agent")
    proc, base = server_bench.start_server("chainreact", llm.url, folder)
    try:
        result = server_bench.worker(["pair", "--url", llm.url, "--agent-dir", str(folder), "--base", base,
                                      "--pid", str(proc.pid), "--batches", "2", "--warmup", "1"], timeout=120)
    finally:
        server_bench.stop_server(proc)
    assert result["status"] == "ok" and result["completed"] == 0 and result["runs"] == 6
    assert "unexpected answer: 'something else'" in result["problem"]
    problems = procs.verify(result, {"requests": 6, "streamed": 6, "non_streamed": 0})
    assert any("0/6 runs returned the scripted answer" in p for p in problems)
    assert any("expected 24" in p for p in problems)  # and the request count (4 per run) does not match


def test_the_client_reads_both_servers_streams() -> None:
    chunk = b'data: {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}]}'
    assert server_load.event_text("chainreact", chunk) == "Hi"
    assert server_load.event_text("chainreact", b'data: {"choices": [{"delta": {}}]}') == ""
    assert server_load.event_text("chainreact", b"data: [DONE]") is None
    with pytest.raises(RuntimeError, match="stream error"):
        server_load.event_text("chainreact", b'data: {"error": {"message": "boom"}}')
    agno = b'event: RunContent\ndata: {"event": "RunContent", "content": "All 3 "}'
    assert server_load.event_text("agno", agno) == "All 3 "
    # A tool event carries a `content` too: it is not answer text.
    tool = b'event: ToolCallCompleted\ndata: {"event": "ToolCallCompleted", "content": "add(a=0, b=1)"}'
    assert server_load.event_text("agno", tool) == ""
    assert server_load.event_text("agno", b'event: RunCompleted\ndata: {"content": "x"}') is None
    with pytest.raises(RuntimeError, match="RunError"):
        server_load.event_text("agno", b'event: RunError\ndata: {"content": "bad"}')


def _summary(ttft_added: float, cpu_added: float) -> dict[str, Any]:
    return {"ttft_p50_ms": {"inproc": 5.0, "served": 5.0 + ttft_added, "added": ttft_added},
            "ttft_p99_ms": {"inproc": 9.0, "served": 9.5, "added": 0.5},
            "cpu_per_run_ms": {"inproc": 4.0, "served": 4.0 + cpu_added, "added": cpu_added},
            "server_peak_rss_mb": 60.0}


def test_report_replaces_only_its_block_and_judges_the_targets(tmp_path: Path) -> None:
    results = {
        "meta": {"date": "2026-12-01 00:00 UTC", "duration_s": 60.0, "load_avg": [1.0, 2.0],
                 "settings": {"seq_runs": 4, "concurrency": 12, "waves": 1, "rounds": 1, "quick": True}},
        "frameworks": {
            "chainreact": {"status": "ok", "levels": {"1": {"summary": _summary(0.4, 1.0)},
                                                      "12": {"summary": _summary(30.0, 0.9)}}},
            "agno": {"status": "ok", "levels": {"1": {"summary": _summary(20.0, 15.0)},
                                                "12": {"summary": _summary(10.0, 14.0)}}},
        },
        "failures": [],
    }
    rows = {(r[0], r[2]) for r in server_report.targets(results)}
    assert ("`chainreact serve` adds < 1 ms to p50 time to first token at 1 stream", "met") in rows
    ttft_12 = "p50 time to first token added by the server at 12 stream(s): below AgentOS's"
    assert (ttft_12, "**missed**") in rows
    assert ("CPU per request added by the server at 12 stream(s): below AgentOS's", "met") in rows

    doc = tmp_path / "performance.md"
    doc.write_text("# P\n\nkept\n\n<!-- generated:server -->\nOLD-BLOCK\n<!-- /generated:server -->\n\n"
                   "also kept\n")
    results["frameworks"]["agno"] = {"status": "n/a", "reason": "agno's AgentOS is not installed"}
    server_report.write(results, doc_path=doc)
    text = doc.read_text()
    assert "OLD-BLOCK" not in text and "kept" in text and "also kept" in text
    assert "| chainreact serve | 12 | 5.00 | 35.00 | +30.00 |" in text
    assert "n/a (agno's AgentOS is not installed)" in text


def test_report_shows_instruction_counts_and_the_uvicorn_setup(tmp_path: Path) -> None:
    results = {
        "meta": {"date": "2026-12-01 00:00 UTC", "duration_s": 60.0, "load_avg": [1.0, 2.0],
                 "uvicorn": "uvloop + httptools",
                 "settings": {"seq_runs": 4, "concurrency": 12, "waves": 1, "rounds": 1, "quick": True}},
        "frameworks": {fw: {"status": "ok", "levels": {"1": {"summary": _summary(0.5, 1.0)}}}
                       for fw in ("chainreact", "agno")},
        "failures": [],
        "instr": {"runs": 20, "frameworks": {
            "chainreact": {"status": "ok", "inproc_per_run": 17.5e6, "served_per_request": 19.0e6,
                           "added": 1.5e6},
            "agno": {"status": "ok", "inproc_per_run": 40e6, "served_per_request": 70e6, "added": 30e6}}},
    }
    results["instr"]["frameworks"]["chainreact"]["spread"] = {  # three repetitions of the count
        "added": {"median": 1.5e6, "min": 1.4e6, "max": 1.7e6, "n": 3, "rounds": [1.4e6, 1.5e6, 1.7e6]}}
    doc = tmp_path / "performance.md"
    doc.write_text("<!-- generated:server -->\n<!-- /generated:server -->\n\nkept\n\n"
                   "<!-- generated:server-instr -->\nOLD COUNTS\n<!-- /generated:server-instr -->\n")
    server_report.write(results, doc_path=doc)
    text = doc.read_text()
    assert "OLD COUNTS" not in text and "kept" in text
    assert "| chainreact serve | 17.50 | 19.00 | +1.50 [+1.40–+1.70] |" in text
    assert ("| instructions per request added by the server at 1 stream: below AgentOS's | "
            "chainreact +1.50 [+1.40–+1.70] M, AgentOS +30.00 M | met |") in text
    assert "uvicorn (both servers): uvloop + httptools." in text

    # A run that did not count instructions (the suite's) leaves the counts of the last one that did.
    del results["instr"]
    doc.write_text(text)
    server_report.write(results, doc_path=doc)
    assert "| chainreact serve | 17.50 | 19.00 | +1.50 [+1.40–+1.70] |" in doc.read_text()


def test_agentos_gets_the_collector_settings_of_chainreact_serve() -> None:
    """Fairness: both serving processes run with the same GC settings (frozen, threshold 10,000)."""
    import gc
    import inspect

    import server_load

    from chainreact.cli import serve_cmds

    before = gc.get_threshold()
    try:
        serve_cmds.tune_gc()
        assert gc.get_threshold()[0] == server_load.SERVE_GC_THRESHOLD
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
    src = inspect.getsource(server_load.main)
    assert "gc.freeze()" in src and "gc.set_threshold(SERVE_GC_THRESHOLD)" in src


def test_the_uvicorn_setup_follows_the_serve_arguments() -> None:
    assert server_bench.uvicorn_setup(["--loop", "asyncio", "--http", "h11"]) == "asyncio + h11"
    assert server_bench.uvicorn_setup(["--http", "httptools"]).endswith("+ httptools")
