"""Issue 25, "Never silent": `chainreact run` as a user runs it (a subprocess, FakeLLM on loopback as the
model). A run that stops to ask says what it waits for and how to go on (exit 3), and the command it
prints works as printed; an empty answer is said (exit 4); a chain message with a Failure branch exits 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chainreact.testing import FakeLLM

from .support import CALL_WEATHER, agent_doc, printed_command, weather_tool

SRC = Path(__file__).resolve().parents[2] / "src"

EXIT_WAITING, EXIT_EMPTY = 3, 4


def cli(argv: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "RAN_FILE": str(cwd / "ran.txt")}
    env.pop("CHAINREACT_STATE", None)
    env.pop("CHAINREACT_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "chainreact", *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, input=stdin, timeout=120,
                          stdin=None if stdin is not None else subprocess.DEVNULL)


WEATHER_APPROVAL = weather_tool(approval=True)


def test_approval_without_state_says_what_it_waits_for_and_the_printed_commands_work(tmp_path: Path) -> None:
    doc = agent_doc(tmp_path, [WEATHER_APPROVAL])
    with FakeLLM([CALL_WEATHER, CALL_WEATHER, {"text": "21 C in Lyon."}]) as llm:
        first = cli(["run", str(doc), "weather in Lyon?", "--global", f"url={llm.url}"], tmp_path)
        assert first.returncode == EXIT_WAITING, first.stderr
        assert first.stdout == ""  # never an empty line
        assert "approval of tool weather" in first.stderr and '{"city":"Lyon"}' in first.stderr
        assert "without --state" in first.stderr
        assert not (tmp_path / "ran.txt").exists()  # nothing ran unapproved

        # The printed command: the same run with a store, and the same --global.
        again = printed_command(first.stderr)
        assert "--state" in again and f"url={llm.url}" in again
        second = cli(again, tmp_path)
        assert second.returncode == EXIT_WAITING, second.stderr
        assert second.stdout == ""
        resume = printed_command(second.stderr)
        assert resume[:2] == ["runs", "resume"] and resume[-2:] == ["--answer", "approve"]
        assert f"url={llm.url}" in resume

        # ... and the resume command it printed, exactly as printed.
        done = cli(resume, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "21 C in Lyon.\n"
    assert (tmp_path / "ran.txt").read_text() == "Lyon\n"  # ran once, approved


def test_question_with_state_prints_a_resume_command_that_works(tmp_path: Path) -> None:
    doc = agent_doc(tmp_path, ["ask_user"])
    url = f"sqlite:///{tmp_path}/s.db"
    ask = {"tool_calls": [{"id": "q1", "name": "ask_user",
                           "arguments": {"question": "Which unit?", "schema": {"enum": ["C", "F"]}}}]}
    with FakeLLM([ask, {"text": "70 F."}]) as llm:
        first = cli(["run", str(doc), "-", "--state", url, "--global", f"url={llm.url}"], tmp_path,
                    stdin="weather?")
        assert first.returncode == EXIT_WAITING, first.stderr
        assert first.stdout == ""
        assert "question: Which unit?" in first.stderr and '"enum": ["C", "F"]' in first.stderr
        resume = printed_command(first.stderr)
        assert resume[-2:] == ["--answer", "ANSWER"] and url in resume
        done = cli([*resume[:-1], "F"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "70 F.\n"


@pytest.mark.parametrize("form", [[], ["--stream"], ["--jsonl"]])
def test_approval_without_state_in_every_output_form_exits_3(tmp_path: Path, form: list[str]) -> None:
    doc = agent_doc(tmp_path, [WEATHER_APPROVAL])
    with FakeLLM([CALL_WEATHER]) as llm:
        r = cli(["run", str(doc), "weather?", *form, "--global", f"url={llm.url}"], tmp_path)
    assert r.returncode == EXIT_WAITING, r.stderr
    assert "approval of tool weather" in r.stderr and "to go on: chainreact run" in r.stderr
    if form == ["--stream"]:
        assert r.stdout == ""
        assert printed_command(r.stderr).count("--stream") == 0  # the re-run with a store answers plainly


@pytest.mark.parametrize("form", [[], ["--stream"], ["--json"], ["--jsonl"], ["--state", "STATE"]])
def test_an_empty_answer_is_said_and_exits_4(tmp_path: Path, form: list[str]) -> None:
    doc = agent_doc(tmp_path, [])
    form = [f"sqlite:///{tmp_path}/s.db" if x == "STATE" else x for x in form]
    with FakeLLM([{"text": ""}]) as llm:
        r = cli(["run", str(doc), "hello", *form, "--global", f"url={llm.url}"], tmp_path)
    assert r.returncode == EXIT_EMPTY, r.stderr
    assert "the run ended with an empty answer" in r.stderr
    if form in ([], ["--stream"]) or form[0] == "--state":
        assert r.stdout == ""
    if form == ["--json"]:
        assert json.loads(r.stdout)["content"] == ""


def test_a_blank_answer_counts_as_empty(tmp_path: Path) -> None:
    doc = agent_doc(tmp_path, [])
    with FakeLLM([{"text": " \n "}]) as llm:
        r = cli(["run", str(doc), "hello", "--global", f"url={llm.url}"], tmp_path)
    assert r.returncode == EXIT_EMPTY and "empty answer" in r.stderr


def test_chain_run_exits_1_when_a_branch_ends_in_failure(tmp_path: Path) -> None:
    chain = tmp_path / "c.json"
    chain.write_text(json.dumps({"ruleChain": {"id": "c"}, "metadata": {"nodes": [
        {"id": "f", "type": "exprFilter", "configuration": {"expr": "msg.t > 1"}}]}}))
    ok = cli(["chain", "run", str(chain), "--data", '{"t": 2}'], tmp_path)
    assert ok.returncode == 0 and ok.stdout.startswith("True"), ok.stderr
    no = cli(["chain", "run", str(chain), "--data", '{"t": 0}'], tmp_path)
    assert no.returncode == 0 and no.stdout.startswith("False"), no.stderr  # a False branch is no failure
    bad = cli(["chain", "run", str(chain), "--data", "not json", "--data-type", "TEXT"], tmp_path)
    assert bad.returncode == 1, bad.stderr
    assert bad.stdout.startswith("Failure (error: ")  # the ends are printed first, in every form
    assert "1 of 1 branch(es) ended in Failure; the first at node 'f'" in bad.stderr


@pytest.mark.parametrize("how", [["run"], ["complete"]])
def test_no_prompt_on_an_empty_stdin_or_a_blank_one_is_a_usage_error(tmp_path: Path, how: list[str]) -> None:
    # A run from a script whose stdin is closed (cron, CI) sent the model an empty message and printed
    # its reply to nothing, exit 0.
    doc = agent_doc(tmp_path, [])
    with FakeLLM([{"text": "10"}], loop=True) as llm:
        for argv, stdin, said in [([], None, "stdin was empty"), (["-"], "  \n", "stdin was empty"),
                                  (["  "], None, "the prompt given is blank")]:
            proc = cli([*how, str(doc), *argv, "--global", f"url={llm.url}"], tmp_path, stdin=stdin)
            assert proc.returncode == 2 and proc.stdout == "", (argv, proc.stdout, proc.stderr)
            assert f"no prompt: {said}" in proc.stderr
        assert llm.chat_requests == []
        ok = cli([*how, str(doc), "--global", f"url={llm.url}"], tmp_path, stdin="What is 4 + 6?\n")
    assert ok.returncode == 0 and ok.stdout == "10\n", ok.stderr
