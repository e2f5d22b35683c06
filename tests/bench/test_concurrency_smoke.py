"""CI smoke of bench/concurrency.py: it runs end to end, every run completes as scripted, and it reports
the figures docs/performance.md quotes. Correctness only, no timing assertions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_concurrency_bench_completes_every_run(tmp_path: Path) -> None:
    cp = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "concurrency.py"), "--runs", "20", "--seq-runs", "5",
         "--rounds", "1", "--loops", "asyncio", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert cp.returncode == 0, cp.stdout + cp.stderr
    res = json.loads((tmp_path / "concurrency.json").read_text())["asyncio"]
    (rnd,) = res["rounds"]
    assert rnd["completed"] == rnd["expected"] == 3 + 5 + 1 + 2 * 20
    for key in ("sequential_ms", "concurrent_cold_ms", "concurrent_warm_ms", "ratio_cold", "ratio_warm"):
        assert res[key]["median"] > 0 and res[key]["n"] == 1  # median [lowest-highest] over the rounds
