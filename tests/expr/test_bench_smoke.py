"""bench/expr_bench.py runs and its cases agree with plain Python (correctness only, no timing checks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "expr_bench.py"


def test_expr_bench_quick_run() -> None:
    proc = subprocess.run([sys.executable, str(BENCH), "--quick", "--json"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    cases = {r["case"] for r in data["rows"]}
    assert {"filter condition", "predicate", "3-part template"} <= cases
    for r in data["rows"]:
        # each figure: median [lowest-highest] over the rounds (one with --quick)
        assert r["expr_eval_us"]["median"] > 0 and r["python_us"]["median"] > 0
