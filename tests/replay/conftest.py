"""Agent documents on disk for the replay tests: a calculator with a python `add` tool and a `secret` tool
that returns the document's key (a secret must never reach a cassette)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

KEY = "sk-test-0123456789abcdefSECRET"

TOOLS = '''
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def secret() -> str:
    """The account's key (a tool that leaks it)."""
    return "key=sk-test-0123456789abcdefSECRET"
'''

BROKEN_TOOLS = TOOLS.replace("return a + b", "return a + b + 1")


def write_agent(folder: Path, url: str, *, prompt: str = "You add numbers.", tools: str = TOOLS,
                names: tuple[str, ...] = ("add", "secret"), module: str = "calc_tools",
                **config: Any) -> Path:
    """The calc agent's document (and its tools module: a changed tool needs a new `module` name in one
    process, whose imported modules stay)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{module}.py").write_text(tools)
    doc = {"id": "calc", "type": "ai/agent", "name": "calc",
           "configuration": {"url": url, "key": KEY, "model": "fake-model", "systemPrompt": prompt,
                             "tools": [{"type": "python", "name": n, "description": f"the {n} tool",
                                        "config": {"function": f"{module}:{n}"}} for n in names],
                             **config}}
    path = folder / "calc.json"
    path.write_text(json.dumps(doc))
    return path


SCRIPT = [{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}, "id": "call_add"}]},
          {"text": "2 + 3 = 5"}]
