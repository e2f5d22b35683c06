"""`chainreact eval` and chainreact.evals: every check kind, the judge, concurrency, --min-pass, --json, the
table, --state (a failing case exported and replayed), and dataset errors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from chainreact.agent import Agent
from chainreact.evals import AgentTarget, DatasetError, load_dataset, parse_verdict, run_eval
from chainreact.testing import FakeLLM
from tests.replay.conftest import write_agent
from tests.test_cli import cli

from .conftest import CASES, write_dataset


def by_name(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in data["results"]}


def test_every_check_kind_passes_and_fails(tmp_path: Path, agent_doc: Path) -> None:
    ds = write_dataset(tmp_path / "cases.jsonl", CASES)
    r = cli("eval", str(ds), "--agent", str(agent_doc), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert (data["cases"], data["passed"], data["pass_rate"]) == (9, 3, 0.3333)
    results = by_name(data)
    assert [n for n, x in results.items() if x["passed"]] == ["adds", "json", "greets"]
    failed = {n: [c["kind"] for c in x["checks"] if not c["passed"]] for n, x in results.items()}
    assert failed == {"adds": [], "json": [], "greets": [], "no-goodbye": ["contains"],
                      "no-tool": ["tool_called"], "too-many-steps": ["max_steps"],
                      "too-many-tokens": ["max_tokens"],
                      "not-json": ["json_schema"], "no-match": ["matches"]}
    adds = results["adds"]
    assert adds["answer"] == "The sum is 5." and adds["steps"] == 2 and adds["tokens"] > 0 and adds["ms"] > 0
    assert results["too-many-steps"]["checks"][0]["got"] == 2
    assert "missing 'Goodbye'" in results["no-goodbye"]["checks"][0]["detail"]
    assert results["no-tool"]["checks"][0]["detail"] == "not called: add (called: none)"
    assert set(adds) >= {"name", "passed", "checks", "answer", "tokens", "ms"}


def test_min_pass_sets_the_exit_status_and_the_table_shows_each_case(tmp_path: Path, agent_doc: Path) -> None:
    ds = write_dataset(tmp_path / "cases.jsonl", CASES)
    low = cli("eval", str(ds), "--agent", str(agent_doc), "--min-pass", "0.3")
    assert low.returncode == 0, low.stderr
    lines = low.stdout.splitlines()
    assert lines[0].split() == ["CASE", "RESULT", "TOKENS", "MS", "FAILED", "CHECKS"]
    row = next(line for line in lines if line.startswith("no-tool"))
    assert "FAIL" in row and "tool_called: not called: add" in row
    assert "3/9 passed (33.3%)" in low.stdout
    high = cli("eval", str(ds), "--agent", str(agent_doc), "--min-pass", "0.5")
    assert high.returncode == 1
    assert "pass rate 0.333 is below --min-pass 0.5" in high.stderr
    assert cli("eval", str(ds), "--agent", str(agent_doc), "--min-pass", "1.5").returncode == 2


def test_the_judge_scores_a_rubric_with_its_verdict_and_reason(tmp_path: Path, agent_doc: Path) -> None:
    asked: list[str] = []

    def judge(body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["messages"][-1]["content"]
        asked.append(prompt)
        if "Hello there!" in prompt:
            return {"text": '{"verdict": "pass", "reason": "It greets."}'}
        return {"text": 'Here: {"verdict": "fail", "reason": "No greeting at all."}'}

    with FakeLLM(judge) as srv:
        judge_doc = write_agent(tmp_path / "judge", srv.url, prompt="You grade answers.", names=())
        ds = write_dataset(tmp_path / "judged.jsonl", [
            {"name": "polite", "input": "say hello", "expect": {"judge": "The answer greets the user."}},
            {"name": "rude", "input": "json please",
             "expect": {"judge": {"rubric": "The answer greets the user."}}},
        ])
        r = cli("eval", str(ds), "--agent", str(agent_doc), "--judge", str(judge_doc), "--json")
    assert r.returncode == 0, r.stderr
    results = by_name(json.loads(r.stdout))
    polite, rude = results["polite"]["checks"][0], results["rude"]["checks"][0]
    assert (polite["passed"], polite["verdict"], polite["reason"]) == (True, "pass", "It greets.")
    assert (rude["passed"], rude["verdict"], rude["reason"]) == (False, "fail", "No greeting at all.")
    assert len(asked) == 2 and all("The answer greets the user." in a for a in asked)
    assert any("The agent answered:\nHello there!" in a for a in asked)
    # Without --judge the check fails and says why.
    r = cli("eval", str(ds), "--agent", str(agent_doc), "--json")
    assert "no judge" in by_name(json.loads(r.stdout))["polite"]["checks"][0]["detail"]


def test_parse_verdict_reads_json_words_or_says_unclear() -> None:
    assert parse_verdict('{"verdict": "PASS", "reason": "ok"}').passed
    assert parse_verdict('{"pass": false, "reason": "no"}').verdict == "fail"
    assert parse_verdict("FAIL - it never greets").verdict == "fail"
    unclear = parse_verdict("I think it is fine")
    assert (unclear.passed, unclear.verdict) == (False, "unclear")


async def test_cases_run_at_most_concurrency_at_a_time(tmp_path: Path) -> None:
    inflight = peak = 0

    async def slow(body: dict[str, Any]) -> dict[str, Any]:
        nonlocal inflight, peak
        inflight += 1
        peak = max(peak, inflight)
        await asyncio.sleep(0.05)
        inflight -= 1
        return {"text": "ok"}

    async with FakeLLM(slow) as srv:
        agent = Agent.from_config(str(write_agent(tmp_path, srv.url, names=())))
        rows = [{"input": f"q{i}", "expect": {"equals": "ok"}} for i in range(8)]
        cases = load_dataset(write_dataset(tmp_path / "c.jsonl", rows))
        done: list[int] = []
        result = await run_eval(cases, AgentTarget(agent), concurrency=3,
                                on_done=lambda r, n, total: done.append(n))
        await agent.aclose()
    assert result.passed == 8 and [r.name for r in result.results] == [f"case {i}" for i in range(1, 9)]
    assert peak == 3
    assert done == list(range(1, 9))


def test_a_failing_case_kept_with_state_is_exported_and_replayed(tmp_path: Path, model: FakeLLM) -> None:
    doc = write_agent(tmp_path / "agent", model.url)
    ds = write_dataset(tmp_path / "c.jsonl",
                       [{"name": "steps", "input": "add 2 and 3", "expect": {"max_steps": 1}}])
    state = f"sqlite:///{tmp_path}/evals.db"
    r = cli("eval", str(ds), "--agent", str(doc), "--state", state, "--json")
    [case] = json.loads(r.stdout)["results"]
    assert not case["passed"] and case["run_id"].startswith("eval-")
    out = tmp_path / "failing.json"
    exported = cli("runs", "export", case["run_id"], "--state", state, "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    cassette = json.loads(out.read_text())
    assert cassette["input"] == "add 2 and 3" and cassette["answer"] == "The sum is 5."
    assert len(cassette["agents"][0]["steps"]) == 2
    replayed = cli("replay", str(out), "--json")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert json.loads(replayed.stdout)["ok"] is True


def test_dataset_problems_name_the_line_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input": "x", "expect": {"contain": "a"}}\nnot json\n{"expect": {"max_steps": -1}}\n')
    with pytest.raises(DatasetError) as e:
        load_dataset(bad)
    text = str(e.value)
    assert "line 1.expect.contain: unknown check" in text and "did you mean 'contains'" in text
    assert "line 2: not JSON" in text
    assert "line 3.input: missing" in text
    assert "line 3.expect.max_steps: expected a non-negative integer" in text
    yaml_ds = tmp_path / "cases.yaml"
    yaml_ds.write_text("cases:\n  - name: a\n    input: hi\n    expect: {matches: '(a'}\n")
    with pytest.raises(DatasetError, match=r"\$\[0\]\.expect\.matches: invalid pattern"):
        load_dataset(yaml_ds)


def test_a_flow_is_scored_one_session_per_case_and_its_turn_replays(tmp_path: Path) -> None:
    from tests.flows.test_memory import chat_flow

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        return {"text": json.dumps({"response": "echo " + body["messages"][-1]["content"]})}

    with FakeLLM(answer) as llm:
        flow = tmp_path / "chat.json"
        flow.write_text(json.dumps(chat_flow(llm.url)))
        ds = write_dataset(tmp_path / "c.jsonl", [
            {"name": "one", "input": "m1", "expect": {"equals": "echo m1"}},
            {"name": "two turns", "input": ["m1", "m2"], "expect": {"contains": "echo m2"}}])
        state = f"sqlite:///{tmp_path}/flows.db"
        r = cli("eval", str(ds), "--flow", str(flow), "--state", state, "--json")
    data = json.loads(r.stdout)
    assert data["passed"] == 2, r.stdout + r.stderr
    two = by_name(data)["two turns"]
    assert two["run_id"].startswith("flow:chat:eval-")
    out = tmp_path / "turn.json"
    assert cli("runs", "export", two["run_id"], "--state", state, "-o", str(out)).returncode == 0
    cassette = json.loads(out.read_text())
    assert cassette["turn_number"] == 2 and cassette["answer"] == "echo m2"
    replayed = cli("replay", str(out), "--json")
    assert json.loads(replayed.stdout)["ok"] is True, replayed.stdout


def test_the_progress_bar_counts_cases_and_failures(capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from chainreact.cli.eval_cmds import Progress

    bar = Progress(4, enabled=True)
    for done, passed in enumerate([True, False, True, False], 1):
        bar(SimpleNamespace(passed=passed), done, 4)
    err = capsys.readouterr().err
    frames = err.split("\r")[1:]
    assert frames[0].startswith("[#######.......................] 1/4 cases, 0 failed")
    assert frames[-1] == "[##############################] 4/4 cases, 2 failed \n"
    quiet = Progress(4, enabled=False)  # not a terminal (or --json): nothing drawn
    quiet(SimpleNamespace(passed=True), 1, 4)
    assert capsys.readouterr().err == ""
