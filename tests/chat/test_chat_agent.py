"""`chainreact chat AGENT.json` with stdin piped: each line a message, the conversation kept between turns
(in memory, or in the store's session shared with `chainreact run --session`), `/reset`, tool activity on
stderr and the answer on stdout, questions (ask_user, approvals) answered by the next line, a failed turn
that does not end the chat (exit 1 at the end), `--temporal` refused. FakeLLM on 127.0.0.1 is the model."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainreact.testing import FakeLLM

from ..cli.support import CALL_WEATHER, agent_doc, weather_tool
from .helpers import SRC, cli_env
from .test_chat_tmux import Pane, pane  # noqa: F401  (the tmux pane fixture)

STATE = "sqlite:///{}/state.db"


def chat(doc: Path, url: str, stdin: str, *extra: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**cli_env(), "RAN_FILE": str(cwd / "ran.txt")}
    return subprocess.run([sys.executable, "-m", "chainreact", "chat", str(doc), "--global", f"url={url}",
                           *extra], input=stdin, capture_output=True, text=True, timeout=120, env=env,
                          cwd=cwd)


def contents(request: Any) -> list[tuple[str, Any]]:
    """(role, content) of each message the model was sent."""
    return [(m["role"], m.get("content")) for m in request.messages]


def test_a_conversation_keeps_its_history_shows_tools_and_resets(tmp_path: Path) -> None:
    doc = agent_doc(tmp_path, [weather_tool(approval=False)])
    with FakeLLM([{"text": "Hello Ann!", "chunks": 4}, CALL_WEATHER,
                  {"text": "It is 21 C in Lyon, Ann.", "chunks": 5}, {"text": "Hi, who are you?"}]) as llm:
        r = chat(doc, llm.url, "I am Ann\nweather in Lyon?\n/reset\nhello\n", cwd=tmp_path)
        reqs = llm.chat_requests
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Hello Ann!\nIt is 21 C in Lyon, Ann.\nHi, who are you?\n"
    assert '→ weather({"city":"Lyon"})\n← weather: 21 C in Lyon\n' in r.stderr
    assert "[conversation reset" in r.stderr
    assert "you> " not in r.stdout + r.stderr  # no prompt without a terminal
    assert (tmp_path / "ran.txt").read_text() == "Lyon\n"
    # The second turn carried the first exchange; the tool step went on within the same run.
    assert contents(reqs[1]) == [("system", "Help."), ("user", "I am Ann"), ("assistant", "Hello Ann!"),
                                 ("user", "weather in Lyon?")]
    assert reqs[2].messages[-1]["role"] == "tool" and reqs[2].messages[-1]["content"] == "21 C in Lyon"
    # After /reset: only the system prompt and the new message.
    assert contents(reqs[3]) == [("system", "Help."), ("user", "hello")]


def test_an_ask_user_question_is_answered_by_the_next_line_and_the_run_goes_on(tmp_path: Path) -> None:
    doc = agent_doc(tmp_path, ["ask_user"])
    ask = {"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "Which city?"}}]}
    with FakeLLM([ask, {"text": "Lyon it is."}, {"text": "Bye."}]) as llm:
        r = chat(doc, llm.url, "weather please\nLyon\nthanks\n", cwd=tmp_path)
        reqs = llm.chat_requests
    assert r.returncode == 0, r.stderr
    assert "? Which city?" in r.stderr
    assert r.stdout == "Lyon it is.\nBye.\n"
    assert len(reqs) == 3
    tool = reqs[1].messages[-1]
    assert tool["role"] == "tool" and tool["tool_call_id"] == "q1" and tool["content"] == "Lyon"
    # "Lyon" answered the question: it was not sent as a message; the next turn has the whole exchange.
    assert [c for role, c in contents(reqs[2]) if role == "user"] == ["weather please", "thanks"]
    assert ("tool", "Lyon") in contents(reqs[2])


@pytest.mark.parametrize("store", [False, True])
def test_an_answer_the_schema_refuses_is_asked_again(tmp_path: Path, store: bool) -> None:
    doc = agent_doc(tmp_path, [{"type": "builtin", "name": "ask_user",
                                "config": {"schema": {"type": "integer"}}}])
    ask = {"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "How many?"}}]}
    extra = ["--state", f"sqlite:///{tmp_path}/state.db", "--session", "n"] if store else []
    with FakeLLM([ask, {"text": "Keeping 3."}]) as llm:
        r = chat(doc, llm.url, "clean up\nthree\n3\n", *extra, cwd=tmp_path)
        reqs = llm.chat_requests
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("? How many?") == 2 and "expected integer" in r.stderr
    assert r.stdout == "Keeping 3.\n"
    assert len(reqs) == 2 and reqs[1].messages[-1]["content"] == "3"  # the integer, as the tool's result


def test_an_approval_rejected_at_the_prompt(tmp_path: Path) -> None:
    doc = agent_doc(tmp_path, [weather_tool(approval=True)])
    with FakeLLM([CALL_WEATHER, {"text": "Understood, I will not look it up."}]) as llm:
        r = chat(doc, llm.url, "weather in Lyon?\nn\n", cwd=tmp_path)
        reqs = llm.chat_requests
    assert r.returncode == 0, r.stderr
    assert '? weather({"city":"Lyon"}): approve? [y/N]' in r.stderr
    assert r.stdout == "Understood, I will not look it up.\n"
    assert not (tmp_path / "ran.txt").exists()  # never ran
    tool = reqs[1].messages[-1]
    assert tool["role"] == "tool" and "rejected at the prompt" in tool["content"]


def test_chat_and_run_continue_one_session_in_the_store(tmp_path: Path) -> None:
    doc = agent_doc(tmp_path, [weather_tool(approval=True)])
    state = f"sqlite:///{tmp_path}/state.db"
    with FakeLLM([{"text": "Nice to meet you, Ann."}, CALL_WEATHER, {"text": "21 C in Lyon."},
                  {"text": "Your name is Ann."}]) as llm:
        r = chat(doc, llm.url, "I am Ann\nweather in Lyon?\ny\n", "--state", state, "--session", "s",
                 cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert r.stdout == "Nice to meet you, Ann.\n21 C in Lyon.\n"
        run = subprocess.run([sys.executable, "-m", "chainreact", "run", str(doc), "what is my name?",
                              "--global", f"url={llm.url}", "--state", state, "--session", "s"],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path,
                             env={**cli_env(), "RAN_FILE": str(tmp_path / "ran.txt")})
        reqs = llm.chat_requests
    assert run.returncode == 0, run.stderr
    assert run.stdout == "Your name is Ann.\n"
    assert (tmp_path / "ran.txt").read_text() == "Lyon\n"  # approved with "y"
    assert [c for role, c in contents(reqs[3]) if role in ("user", "tool")] == [
        "I am Ann", "weather in Lyon?", "21 C in Lyon", "what is my name?"]


def test_a_failed_turn_is_said_and_the_chat_goes_on_exit_1(tmp_path: Path) -> None:
    doc = agent_doc(tmp_path, [])
    data = json.loads(doc.read_text())
    data["configuration"]["maxRetries"] = -1  # no retries (0 means the default, 3)
    doc.write_text(json.dumps(data))
    with FakeLLM([{"status": 500, "body": {"error": {"message": "scripted outage"}}},
                  {"text": "Back again."}]) as llm:
        r = chat(doc, llm.url, "hello\nhello again\n", cwd=tmp_path)
        reqs = llm.chat_requests
    assert r.returncode == 1, r.stderr
    assert "error: " in r.stderr and "scripted outage" in r.stderr
    assert r.stdout == "Back again.\n"
    # The failed turn left nothing in the conversation.
    assert contents(reqs[1]) == [("system", "Help."), ("user", "hello again")]


def test_options_of_the_other_kind_are_usage_errors(tmp_path: Path) -> None:
    doc = agent_doc(tmp_path, [])
    r = chat(doc, "http://127.0.0.1:9", "hi\n", "--temporal", "127.0.0.1:7233", cwd=tmp_path)
    assert r.returncode == 2
    assert "chainreact run AGENT PROMPT --temporal ADDRESS" in r.stderr
    r = chat(doc, "http://127.0.0.1:9", "hi\n", "--user", '{"id": "u1"}', cwd=tmp_path)
    assert r.returncode == 2 and "--user and --group are for chat flows" in r.stderr
    flow = tmp_path / "flow.json"
    flow.write_text(json.dumps({"id": "f", "nodes": [{"name": "hi", "type": "message", "message": "Hi",
                                                      "start": True}]}))
    r = chat(flow, "http://127.0.0.1:9", "hi\n", cwd=tmp_path)  # chat() gives --global
    assert r.returncode == 2 and "--global, --globals and --load are for agent documents" in r.stderr


@pytest.mark.parametrize("store", [False, True])
def test_chat_with_an_agent_at_a_terminal(pane: Pane, tmp_path: Path, store: bool) -> None:  # noqa: F811
    """The prompt, the answer streamed, an approval asked at the prompt, Ctrl-C during an answer (the
    turn is dropped from the conversation), /quit; in memory and with a store."""
    doc = agent_doc(tmp_path, [weather_tool(approval=True)])
    long = "Hello Ann, nice to meet you; ask me about the weather anywhere."
    with FakeLLM([{"text": long, "chunks": 12, "chunk_delay": 0.25}, CALL_WEATHER, {"text": "21 C in Lyon."},
                  {"text": "This answer is too slow to wait for.", "chunks": 20, "chunk_delay": 1.0},
                  {"text": "Back."}]) as llm:
        cmd = shlex.join(["env", f"PYTHONPATH={SRC}", f"RAN_FILE={tmp_path / 'ran.txt'}", sys.executable,
                          "-m", "chainreact", "chat", str(doc), "--global", f"url={llm.url}",
                          *(["--state", STATE.format(tmp_path), "--session", "t"] if store else [])])
        pane.run("new-session", "-d", "-s", "chat", "-x", "150", "-y", "50", "-c", str(tmp_path),
                 f"{cmd}; echo \"[exit $?]\"; sleep 120")
        pane.wait(lambda s: s.rstrip().endswith("you>"), "the prompt")
        assert "chat with agent 'helper'" + (", session 't'" if store else " (") in pane.text()

        pane.line("I am Ann")
        partial = pane.wait(lambda s: "Hello" in s, "the answer's first words")
        assert long not in partial, "the whole answer arrived at once: it was not streamed"
        pane.wait(lambda s: long in s and s.rstrip().endswith("you>"), "the whole answer")

        pane.line("weather in Lyon?")
        pane.wait(lambda s: s.rstrip().endswith('? weather({"city":"Lyon"}): approve? [y/N]'), "the approval")
        pane.line("y")
        pane.wait(lambda s: "21 C in Lyon." in s and s.rstrip().endswith("you>"), "the answer after the tool")
        assert "← weather: 21 C in Lyon" in pane.text()

        pane.line("slow one")
        pane.wait(lambda s: "This" in s, "the slow answer's start")
        pane.keys("C-c")
        pane.wait(lambda s: "[turn cancelled]" in s and s.rstrip().endswith("you>"), "the cancelled turn")
        pane.line("after")
        pane.wait(lambda s: "Back." in s, "the answer after the cancelled turn")
        users = [c for role, c in contents(llm.chat_requests[4]) if role == "user"]
        assert users == ["I am Ann", "weather in Lyon?", "after"]

        pane.line("/quit")
        pane.wait(lambda s: "[exit 0]" in s, "the exit")
    assert (tmp_path / "ran.txt").read_text() == "Lyon\n"
    if store:  # the session has the two answered turns; the cancelled run is saved as cancelled
        import asyncio

        from chainreact.state import open_store

        async def read() -> tuple[list[str], list[str]]:
            async with await open_store(STATE.format(tmp_path)) as st:
                history = [m.content for m in await st.history("t") if m.role == "user"]
                return history, sorted(r.status for r in await st.runs())

        history, statuses = asyncio.run(read())
        assert history == ["I am Ann", "weather in Lyon?", "after"]
        assert statuses == ["cancelled", "done", "done", "done"]
