"""What the CLI tests of issue 25 ("Never silent") share: an agent document with a Python `weather` tool
(it notes each city it ran for in $RAN_FILE), the model's call of it, and the command a run prints after
`to go on: `."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

TOOLS = '''
import os

def weather(city: str) -> str:
    """Weather for a city."""
    with open(os.environ["RAN_FILE"], "a") as f:
        f.write(city + "\\n")
    return "21 C in " + city
'''

CALL_WEATHER = {"tool_calls": [{"id": "w1", "name": "weather", "arguments": {"city": "Lyon"}}]}


def weather_tool(approval: bool) -> dict[str, Any]:
    return {"type": "python", "name": "weather", "config": {"function": "ops_tools:weather"},
            "requireApproval": approval}


def agent_doc(tmp_path: Path, tools: list[Any], name: str = "helper") -> Path:
    """An agent whose url is a global: the printed commands must carry `--global url=...`."""
    (tmp_path / "ops_tools.py").write_text(TOOLS)
    doc = tmp_path / "agent.json"
    doc.write_text(json.dumps({"id": name, "type": "ai/agent", "name": name, "configuration": {
        "url": "${global.url}", "key": "k", "model": "fake-model", "systemPrompt": "Help.", "tools": tools}}))
    return doc


def printed_command(stderr: str) -> list[str]:
    """The command after `to go on: ` on stderr, as argv without its leading `chainreact`."""
    m = re.search(r"^to go on: (.+)$", stderr, re.M)
    assert m, stderr
    argv = shlex.split(m.group(1))
    assert argv[0] == "chainreact", argv
    return argv[1:]
