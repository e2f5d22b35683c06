"""The examples in examples/chains/ run and say what they should (tests/test_examples.py covers
examples/*.py only)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "chains"

EXPECTED = {
    "chain_basic.py": ['{"temperature": 70}    -> Success  TELEMETRY  LAB: 70 is too hot',
                       "'frost': 'true'", "-> Default", "REJECTED   {\"error\":\"no temperature\""],
    "chain_agent.py": ["[TOOL_CALL_START] check_reading {'temperature': 71}",
                       "[TOOL_CALL_RESULT] check_reading SOMEWHERE: 71 is too hot",
                       "chunk: 'The lab '", "[end of stream]",
                       "Success: The lab is too hot: 71 degrees. (answeredBy=fake-model, full_content=true)"],
    "chain_template.py": ["Lyon at 07:00:\n  cellar    -1.50 °C FROST\n  hall      19.00 °C\n"
                          "  roof      31.25 °C HOT\n3 sensors, max 31.2",
                          'Failure: template: template:4:36: executing "template" at <$r.celsius>: '
                          "can't evaluate field celsius in type interface {}",
                          'load error: template: template:2: function "round" not defined (text/template)'],
}


def test_every_chain_example_has_expectations() -> None:
    assert {p.name for p in EXAMPLES.glob("*.py")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_chain_example_runs(name: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINREACT_")}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=EXAMPLES.parents[1])
    assert proc.returncode == 0, proc.stderr[-2000:]
    for needle in EXPECTED[name]:
        assert needle in proc.stdout, f"{name}: {needle!r} not in output:\n{proc.stdout[-2000:]}"
