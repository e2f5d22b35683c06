"""examples/flows/stream_turn.py runs and shows the answer being written before the node's message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .helpers import SRC, cli_env

EXAMPLE = str(Path(SRC).parent / "examples" / "flows" / "stream_turn.py")


def test_stream_turn_example() -> None:
    r = subprocess.run([sys.executable, EXAMPLE], capture_output=True, text=True, timeout=120, env=cli_env())
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert lines[0] == "[greet] Hello Ann, this is Shoes&Co support."
    writes = [ln for ln in lines if ln.startswith("  support writes ")]
    assert len(writes) == 6  # the scripted answer in 6 chunks, each shown as it arrived
    assert lines[-2:] == ["[support] Order 42 left our warehouse yesterday.", "-> waiting at 'support'"]
    assert lines.index(writes[-1]) < lines.index("[support] Order 42 left our warehouse yesterday.")
