"""CI smoke of the benchmark suite: it runs end to end and its correctness checks bite.

Correctness only, no timing assertions. Covers chainreact and the bare httpx baseline (CI doesn't install
the `bench` extra with the peers); a quick run through `bench/run` with real processes: the scripted
server in one, each runner in another.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

import procs  # noqa: E402
import report  # noqa: E402


def test_quick_suite_completes_every_run(tmp_path: Path) -> None:
    cp = subprocess.run(
        [sys.executable, str(BENCH / "suite.py"), "--quick", "--only", "chainreact,bare_httpx",
         "--workloads", "sync,stream,build", "--no-docs", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert cp.returncode == 0, cp.stdout + cp.stderr
    results = json.loads((tmp_path / "latest.json").read_text())
    assert results["failures"] == []
    for fw in ("chainreact", "bare_httpx"):
        for workload in ("sync", "stream"):
            r = results["frameworks"][fw][workload]
            assert r["status"] == "ok", r
            assert r["completed"] == r["runs"] > 0
            assert r["tool_calls"] == 3 * r["runs"]
            # The server in its own process saw exactly the runner's requests, of the right kind.
            counts = r["server_counts"]
            assert counts["requests"] == 4 * r["runs"]
            assert counts["streamed" if workload == "stream" else "non_streamed"] == counts["requests"]
    build = results["frameworks"]["chainreact"]["build"]
    assert build["status"] == "ok" and build["agents"] == results["meta"]["settings"]["agents"]
    assert build["completed"] == 1 and build["server_counts"]["requests"] == 4
    assert results["frameworks"]["bare_httpx"]["build"]["status"] == "n/a"


def _ok_result(**over: object) -> dict[str, object]:
    r: dict[str, object] = {"status": "ok", "runs": 5, "completed": 5, "tool_calls": 15,
                            "expected_tool_calls": 15, "expected_requests": 20, "expected_streamed": True}
    r.update(over)
    return r


def test_verify_accepts_a_complete_run() -> None:
    assert procs.verify(_ok_result(), {"requests": 20, "streamed": 20, "non_streamed": 0}) == []


@pytest.mark.parametrize(
    ("result", "counts", "needle"),
    [
        (_ok_result(completed=4, problem="unexpected answer: ''"), {"requests": 20, "streamed": 20,
                                                                    "non_streamed": 0}, "4/5 runs"),
        (_ok_result(tool_calls=12), {"requests": 20, "streamed": 20, "non_streamed": 0}, "tool ran 12"),
        (_ok_result(), {"requests": 8, "streamed": 8, "non_streamed": 0}, "answered 8 model requests"),
        (_ok_result(), {"requests": 20, "streamed": 0, "non_streamed": 20}, "non-streaming"),
        (_ok_result(), {"error": "server printed no counts"}, "no counts"),
    ],
)
def test_verify_rejects_incomplete_runs(result: dict[str, object], counts: dict[str, object],
                                        needle: str) -> None:
    problems = procs.verify(result, counts)
    assert any(needle in p for p in problems), problems


def test_report_replaces_only_generated_blocks() -> None:
    doc = ("# Performance\n\nHand-written intro.\n\n<!-- generated:targets -->\nold table\n"
           "<!-- /generated:targets -->\n\n## Findings\n\nHand-written findings.\n")
    out = report.replace_block(doc, "targets", "| new | table |")
    assert "old table" not in out and "| new | table |" in out
    assert "Hand-written intro." in out and "Hand-written findings." in out
    # A deleted marker appends the block instead of dropping the figures.
    assert report.replace_block("# P\n", "run", "figures").endswith(
        "<!-- generated:run -->\nfigures\n<!-- /generated:run -->\n")


def test_rounds_interleave_the_frameworks_and_publish_median_and_spread(tmp_path: Path) -> None:
    cp = subprocess.run(
        [sys.executable, str(BENCH / "suite.py"), "--quick", "--rounds", "2",
         "--only", "chainreact,bare_httpx", "--workloads", "sync", "--no-docs", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=180, cwd=ROOT,
    )
    assert cp.returncode == 0, cp.stdout + cp.stderr
    order = [line.split()[2:5:2] for line in cp.stdout.splitlines() if line.startswith("[bench] round")]
    # A B A B: every round runs each framework once.
    assert order == [["1", "chainreact"], ["1", "bare"], ["2", "chainreact"], ["2", "bare"]], cp.stdout
    results = json.loads((tmp_path / "latest.json").read_text())
    assert results["meta"]["settings"]["rounds"] == 2
    for fw in ("chainreact", "bare_httpx"):
        r = results["frameworks"][fw]["sync"]
        s = r["spread"]["cpu_per_request_ms"]
        assert r["rounds_run"] == 2 and s["n"] == 2 and len(s["rounds"]) == 2
        assert s["min"] <= r["cpu_per_request_ms"] == s["median"] <= s["max"]
    block = report.results_block(results, [])
    row = next(line for line in block.splitlines() if line.startswith("| chainreact |"))
    assert row.count("[") >= 3 and "x [" in row  # figures and the ratio to httpx with their spread


def test_a_failed_round_is_never_averaged_away() -> None:
    import suite

    ok = {"status": "ok", "cpu_per_request_ms": 1.0, "peak_rss_mb": 50.0, "elapsed_s": 1.0}
    combined = suite.combine([ok, dict(ok, cpu_per_request_ms=3.0), dict(ok, cpu_per_request_ms=2.0)])
    assert combined["cpu_per_request_ms"] == 2.0
    assert combined["spread"]["cpu_per_request_ms"]["min"] == 1.0
    assert combined["spread"]["cpu_per_request_ms"]["max"] == 3.0
    failed = suite.combine([ok, {"status": "failed", "reason": "4/5 runs"}, ok])
    assert failed["status"] == "failed" and failed["reason"] == "4/5 runs"


def test_the_suites_scale_workload_runs_chainreact_alone(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    """make bench stays within its budget: the peers at 10,000 in flight are bench/scale.py --only's job."""
    import scale
    import suite

    seen: dict[str, object] = {}

    def measure(cfg: dict[str, object], fws: list[str]) -> dict[str, object]:
        seen.update(cfg=cfg, fws=fws)
        return {"failures": ["stopped here"]}

    monkeypatch.setattr(scale, "measure", measure)
    rc = suite.main(["--workloads", "scale", "--only", "chainreact,pydantic_ai,bare_httpx", "--no-docs",
                     "--out", str(tmp_path)])
    assert rc == 1  # the recorded failure, reported as one
    assert seen["fws"] == ["chainreact"]
    assert seen["cfg"]["budget_s"] == suite.SCALE_BUDGET_S  # type: ignore[index]
