"""Scoring an agent on a dataset: every check kind, a judge model, a few cases at a time, an HTML report.

The same from the command line (cases.yaml as written below):
    chainreact eval cases.yaml --agent agent.json --judge judge.json --concurrency 4 --min-pass 0.8 \
        --report eval.html --baseline last.html --state sqlite:///evals.db

Runs against two scripted models (chainreact.testing.FakeLLM): the agent's and the judge's.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from chainreact import Agent, tool
from chainreact.evals import AgentTarget, Judge, load_dataset, run_eval, write_report
from chainreact.testing import FakeLLM

CASES = """
cases:
  - name: adds
    input: What is 2 + 3?
    expect:
      contains: "5"
      tool_called: {name: add, arguments: {a: 2}}
      max_steps: 2
  - name: weather as JSON
    input: The weather in Paris, as JSON
    expect:
      json_schema: {type: object, required: [city, temp], properties: {temp: {type: integer}}}
      equals: {city: Paris, temp: 21}
  - name: greets
    input: Say hello
    expect:
      matches: "^Hello\\\\b"
      max_tokens: 200
      judge: The answer greets the user warmly.
  - name: no tool for a greeting
    input: Say hello
    expect:
      tool_called: add
"""


@tool(thread=False)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def model(body: dict[str, Any]) -> dict[str, Any]:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return {"text": f"The sum is {last['content']}."}
    if "2 + 3" in last["content"]:
        return {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}
    if "JSON" in last["content"]:
        return {"text": '{"city": "Paris", "temp": 21}'}
    return {"text": "Hello there, nice to see you!"}


def judge(body: dict[str, Any]) -> dict[str, Any]:
    warm = "nice to see you" in body["messages"][-1]["content"]
    return {"text": json.dumps({"verdict": "pass" if warm else "fail",
                                "reason": "It says it is glad to see them." if warm else "Curt."})}


async def main(folder: Path) -> None:
    (folder / "cases.yaml").write_text(CASES)
    cases = load_dataset(folder / "cases.yaml")
    async with FakeLLM(model) as llm, FakeLLM(judge) as grader:
        agent = Agent(name="helper", instruction="You help.", url=llm.url, key="k", model="m", tools=[add])
        judge_agent = Agent(name="judge", instruction="You grade answers.", url=grader.url, key="k",
                            model="m")
        result = await run_eval(cases, AgentTarget(agent), concurrency=2, judge=Judge(judge_agent),
                                on_done=lambda r, done, total: print(f"[{done}/{total}] {r.name}"))
        await agent.aclose()
        await judge_agent.aclose()
    for r in result.results:
        failed = [f"{c['kind']}: {c['detail']}" for c in r.checks if not c["passed"]]
        print(f"{'pass' if r.passed else 'FAIL'}  {r.name:<22} tokens={r.tokens:<4} {'; '.join(failed)}")
    judged = next(c for c in result.results[2].checks if c["kind"] == "judge")
    print(f"judge: {judged['verdict']} ({judged['reason']})")
    print(f"pass rate: {result.pass_rate:.2f} ({result.passed}/{result.cases})")
    report = write_report(folder / "eval.html", result.to_dict(), dataset="cases.yaml")
    print("report:", report.name, f"{report.stat().st_size // 1024} KiB, self-contained:",
          "<link" not in report.read_text() and "src=" not in report.read_text())


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
