"""`chainreact run --state --session` and `chainreact runs resume --answer`, each in its own process on a
SQLite store: the run stops to ask, a bad answer is refused and changes nothing, a second process resumes
it, the tool that needed no input ran once, and the session holds the whole exchange."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from chainreact.state import open_store
from chainreact.testing import FakeLLM

SRC = Path(__file__).resolve().parents[2] / "src"

TOOLS = '''
import os

def weather(city: str) -> str:
    """Weather for a city."""
    with open(os.environ["RAN_FILE"], "a") as f:
        f.write(city + "\\n")
    return "21 in " + city
'''


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chainreact", *args], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=120)


async def test_run_and_resume_in_other_processes(tmp_path: Path) -> None:
    (tmp_path / "ops_tools.py").write_text(TOOLS)
    ran = tmp_path / "ran.txt"
    env = {**os.environ, "PYTHONPATH": str(SRC), "RAN_FILE": str(ran)}
    url = f"sqlite:///{tmp_path}/state.db"
    with FakeLLM([
        {"tool_calls": [{"id": "w", "name": "weather", "arguments": {"city": "Lyon"}},
                        {"id": "q", "name": "ask_user",
                         "arguments": {"question": "Unit?", "schema": {"enum": ["C", "F"]}}}]},
        {"text": "70 F in Lyon"},
    ]) as llm:
        doc = tmp_path / "agent.json"
        doc.write_text(json.dumps({"id": "helper", "type": "ai/agent", "name": "helper", "configuration": {
            "url": llm.url, "key": "k", "model": "fake-model", "systemPrompt": "Help.",
            "tools": ["ask_user", {"type": "python", "name": "weather",
                                   "config": {"function": "ops_tools:weather"}}]}}))
        first = cli("run", str(doc), "weather in Lyon?", "--state", url, "--session", "s1", "--json", env=env)
        assert first.returncode == 3, first.stderr  # waiting for an answer (docs/cli.md, exit codes)
        out = json.loads(first.stdout)
        run_id = out["run_id"]
        assert out["stop_reason"] == "interrupted"
        assert out["questions"][0]["question"] == "Unit?" and out["questions"][0]["id"] == "q"

        bad = cli("runs", "resume", run_id, "--state", url, "--answer", "Kelvin", env=env)
        assert bad.returncode == 1 and "does not match the asked schema" in bad.stderr
        async with await open_store(url) as store:
            assert (await store.load_run(run_id)).status == "interrupted"
            assert await store.history("s1") == []  # nothing saved to the session before the end

        done = cli("runs", "resume", run_id, "--state", url, "--answer", "F", env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "70 F in Lyon\n"
        assert ran.read_text() == "Lyon\n"  # ran once, in the first process only
        assert [m["content"] for m in llm.chat_requests[1].messages if m["role"] == "tool"] == \
            ["21 in Lyon", "F"]
        async with await open_store(url) as store:
            assert (await store.load_run(run_id)).status == "done"
            history = await store.history("s1")
        assert [m.role for m in history] == ["user", "assistant", "tool", "tool", "assistant"]
        assert history[0].content == "weather in Lyon?" and history[-1].content == "70 F in Lyon"

        # The next run of the session sees it all, and adds its own exchange.
        llm.add_turns([{"text": "Still 70 F."}])
        again = cli("run", str(doc), "and now?", "--state", url, "--session", "s1", env=env)
        assert again.returncode == 0 and again.stdout == "Still 70 F.\n", again.stderr
        sent = [(m["role"], m.get("content")) for m in llm.chat_requests[2].messages]
        assert sent[1] == ("user", "weather in Lyon?") and sent[-1] == ("user", "and now?")
        assert len(sent) == 7  # system, the 5 saved messages, the new prompt
        async with await open_store(url) as store:
            assert [m.content for m in (await store.history("s1"))[-2:]] == ["and now?", "Still 70 F."]
