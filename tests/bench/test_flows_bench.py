"""Smoke of bench/flows.py (chat-flow turn overhead against stored messages): it runs end to end with
its scripted server in another process, did the scripted work, and its checks bite. No timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

import flows  # noqa: E402


def test_quick_run_does_the_scripted_work(tmp_path: Path) -> None:
    out = tmp_path / "flows.json"
    cp = subprocess.run([sys.executable, str(BENCH / "flows.py"), "--quick", "--json", str(out)],
                        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    r = json.loads(out.read_text())
    assert r["status"] == "ok" and r["problems"] == []
    sizes = r["settings"]["sizes"]
    assert sizes == [10, 100, 1000]
    turns, rounds = r["settings"]["turns"], r["settings"]["rounds"]
    # Every turn reached the model once; every answer request fit the window (system + 10 + user).
    assert r["server"]["answers"] == 4 + len(sizes) * rounds * (1 + turns)
    assert r["server"]["max_answer_messages"] == flows.WINDOW + 2
    assert r["server"]["summaries"] >= 1 + len(sizes) * rounds
    for n in sizes:
        assert r["cpu_per_turn_ms"][str(n)] > 0
        assert len(r["cpu_per_turn_ms_all"][str(n)]) == rounds
    # The catch-up summary of the 1,000-message session held the whole backlog, the others did not.
    assert r["summary_prompt_chars"]["max"] > 50 * r["summary_prompt_chars"]["min"]
    assert "| 1,000 |" in flows.table(r) and "![" not in flows.block(r, None)


def _counts(**over: object) -> dict[str, object]:
    c: dict[str, object] = {"answers": 4 + 3 * 2, "summaries": 4, "max_answer_messages": 12,
                            "summary_chars": [1000, 1100, 9000, 90000]}
    c.update(over)
    return c


def _result(answered: int = 10) -> dict[str, object]:
    return {"answered": answered, "stored_after": {10: [14], 100: [104], 1000: [1004]}}


def test_check_accepts_the_expected_work_and_rejects_what_is_not() -> None:
    sizes = (10, 100, 1000)
    assert flows.check(_result(), _counts(), sizes, turns=1, rounds=1) == []
    too_many = flows.check(_result(), _counts(max_answer_messages=40), sizes, turns=1, rounds=1)
    assert any("held 40 messages" in p for p in too_many)
    recomputed = flows.check(_result(), _counts(summary_chars=[1000, 9000, 9000, 9000, 90000]), sizes,
                             turns=1, rounds=1)
    assert any("recomputed" in p for p in recomputed)
    assert any("answered" in p for p in flows.check(_result(9), _counts(), sizes, turns=1, rounds=1))
    wrong_store = _result()
    wrong_store["stored_after"] = {10: [14], 100: [104], 1000: [990]}
    assert any("session of 1000" in p for p in flows.check(wrong_store, _counts(), sizes, turns=1, rounds=1))
