"""House rules that a review forgets: a source file holds one concern (split before ~500 lines), and the
ReAct loop stays one file a newcomer reads in one sitting (under 500 lines)."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "chainreact"
MAX_LINES = 520  # "~500": a little slack, not a second threshold to grow into
LOOP = SRC / "agent" / "loop.py"


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_source_file_is_past_the_split_point() -> None:
    big = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py") if (n := _lines(p)) > MAX_LINES}
    assert big == {}, f"split these by concern (docs/architecture.md): {big}"


def test_the_react_loop_is_one_file_under_500_lines() -> None:
    assert _lines(LOOP) < 500
