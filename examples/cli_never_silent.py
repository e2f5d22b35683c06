"""`chainreact run` is never silent: a run that stops to ask, and an empty answer (docs/cli.md).

The agent's `weather` tool needs approval. Run without `--state`, the command says what it waits for and
prints the run again with a store (exit 3); that run prints the `runs resume` command, which answers it
(exit 0). An empty answer exits 4 with a line on stderr. Each command runs as a user would type it (a
subprocess); FakeLLM plays the model on loopback.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from chainreact.testing import FakeLLM

TOOLS = '''
def weather(city: str) -> str:
    """Weather for a city."""
    return "21 C in " + city
'''
CALL = {"tool_calls": [{"id": "w1", "name": "weather", "arguments": {"city": "Lyon"}}]}


def chainreact(argv: list[str], cwd: str) -> subprocess.CompletedProcess[str]:
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, "-m", "chainreact", *argv], capture_output=True, text=True,
                          cwd=cwd, env=env, stdin=subprocess.DEVNULL, timeout=120)


def go_on(stderr: str) -> list[str]:
    """The command printed after `to go on: `, without its leading `chainreact`."""
    m = re.search(r"^to go on: (.+)$", stderr, re.M)
    assert m, stderr
    return shlex.split(m.group(1))[1:]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeLLM([CALL, CALL, {"text": "21 C in Lyon."},
                                                        {"text": ""}]) as llm:
        Path(tmp, "ops_tools.py").write_text(TOOLS)
        Path(tmp, "agent.json").write_text(json.dumps({"name": "helper", "url": "${global.url}", "key": "k",
                                                       "model": "fake-model", "tools": [
            {"type": "python", "name": "weather", "config": {"function": "ops_tools:weather"},
             "requireApproval": True}]}))
        url = ["--global", f"url={llm.url}"]
        first = chainreact(["run", "agent.json", "weather in Lyon?", *url], tmp)
        print(f"exit {first.returncode}, stdout {first.stdout!r}")
        print(first.stderr.replace(llm.url, "URL"), end="")
        second = chainreact(go_on(first.stderr), tmp)
        print(f"with a store: exit {second.returncode}")
        resume = go_on(second.stderr)
        print("printed:", shlex.join(["chainreact", *resume]).replace(llm.url, "URL"))
        done = chainreact(resume, tmp)
        print(f"resumed: exit {done.returncode}, answer {done.stdout.strip()!r}")
        empty = chainreact(["run", "agent.json", "say nothing", *url], tmp)
        print(f"empty answer: exit {empty.returncode}, stdout {empty.stdout!r}, "
              f"stderr {empty.stderr.strip()!r}")


if __name__ == "__main__":
    main()
