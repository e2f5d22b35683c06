"""The chain benchmark runs and every message gets the expected answer (correctness only, no timing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_chain_bench_smoke(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "chains.py"), "--smoke", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads(out.read_text())
    for name in ("expr", "js"):
        for conc in ("1", "1000"):
            assert res[name][conc]["ok"] == res[name][conc]["messages"] > 0
