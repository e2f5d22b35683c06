"""examples/flows/ runs (tests/test_examples.py covers only the top folder) and says what it should."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_support_chat_example_runs() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINREACT_")}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "flows" / "support_chat.py")],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for needle in ["[handover] I have passed this to a colleague", "-> node=support ended=False",
                   "[support] Is there anything else I can help you with, Ann?", "-> node=survey",
                   "[bye] Thank you, Ann (you rated us 5/5).", "-> node=None ended=True"]:
        assert needle in proc.stdout, proc.stdout
