"""`chainreact chat examples/demo-agent.json`: a conversation with an agent document (docs/cli.md, "chat").

Two lines piped into the chat are two turns of one conversation: the second question is answered knowing
the first (its request carries the first exchange). The answers are on stdout, the tool calls and results
on stderr. FakeLLM plays the model on loopback (OPENAI_BASE_URL: the demo document names no url).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from chainreact.testing import FakeLLM

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = [{"tool_calls": [{"id": "a1", "name": "add", "arguments": {"a": 19, "b": 23}}]},
          {"text": "19 + 23 = 42."},
          {"tool_calls": [{"id": "a2", "name": "add", "arguments": {"a": 42, "b": 8}}]},
          {"text": "42 + 8 = 50."}]


def main() -> None:
    with FakeLLM(SCRIPT) as llm:
        path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "OPENAI_BASE_URL": llm.url, "OPENAI_API_KEY": "k", "PYTHONPATH": path}
        chat = subprocess.run([sys.executable, "-m", "chainreact", "chat", "examples/demo-agent.json"],
                              input="what is 19 + 23?\nand plus 8?\n", capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=120)
        print(f"exit {chat.returncode}")
        print("stdout:", chat.stdout.splitlines())
        print("stderr:", [line for line in chat.stderr.splitlines() if line[:1] in "→←"])
        second = llm.chat_requests[2].messages
        print("the second question's request:", [(m["role"], m["content"]) for m in second[1:]])


if __name__ == "__main__":
    main()
