"""The embedded model on 20 small tool tasks: how often does it answer right? (issue 25)

    python bench/local_model.py                 # the 20 tasks, each on the agent for its kind
    python bench/local_model.py --all-tools     # the same tasks on one agent offering all three tools
    python bench/local_model.py --json          # machine-readable

Each task is a real agent run on the embedded llama.cpp server (SmolLM2-135M, started once, or the one at
$CHAINREACT_LOCAL_URL): sums on examples/demo-agent.json itself (tool `add`), differences on the same
agent with `subtract`, unit conversions with `km_to_miles`. A task succeeds when the run ended without an
error, a tool result gave the right number, and the answer states it and no other number (numbers from
the question aside); the first tool call (name and arguments) is reported too. The model samples
greedily, so a second run gives the same table (the figures in docs/local-model.md come from this
script). tests/local/test_local_tasks.py runs a handful of these.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo-agent.json"


def add(a: float, b: float) -> float:
    """Add two numbers and return their sum."""
    return _num(a + b)


def subtract(a: float, b: float) -> float:
    """Subtract b from a and return the difference."""
    return _num(a - b)


def km_to_miles(km: float) -> float:
    """Convert a distance in kilometres to miles."""
    return _num(round(km * 0.621371, 2))


def _num(x: float) -> float:
    return int(x) if float(x).is_integer() else x


@dataclass(frozen=True)
class Task:
    kind: str  # sum | difference | conversion
    question: str
    expected: str  # the number the answer must state
    call: tuple[str, dict[str, float]]  # the right first tool call


TASKS: tuple[Task, ...] = (
    Task("sum", "What is 17 + 25? Use the add tool.", "42", ("add", {"a": 17, "b": 25})),
    Task("sum", "What is 38 + 14?", "52", ("add", {"a": 38, "b": 14})),
    Task("sum", "What is 50 + 50?", "100", ("add", {"a": 50, "b": 50})),
    Task("sum", "Add 123 and 456.", "579", ("add", {"a": 123, "b": 456})),
    Task("sum", "What is 7 + 8?", "15", ("add", {"a": 7, "b": 8})),
    Task("sum", "What is 250 + 375?", "625", ("add", {"a": 250, "b": 375})),
    Task("sum", "What is the sum of 99 and 1?", "100", ("add", {"a": 99, "b": 1})),
    Task("sum", "What is 2.5 + 4.25?", "6.75", ("add", {"a": 2.5, "b": 4.25})),
    Task("difference", "What is 100 - 37?", "63", ("subtract", {"a": 100, "b": 37})),
    Task("difference", "What is 40 - 15?", "25", ("subtract", {"a": 40, "b": 15})),
    Task("difference", "What is 81 - 29?", "52", ("subtract", {"a": 81, "b": 29})),
    Task("difference", "What is 1000 - 1?", "999", ("subtract", {"a": 1000, "b": 1})),
    Task("difference", "What is 64 minus 16?", "48", ("subtract", {"a": 64, "b": 16})),
    Task("difference", "What is 12 - 20?", "-8", ("subtract", {"a": 12, "b": 20})),
    Task("difference", "What is the difference between 90 and 45?", "45", ("subtract", {"a": 90, "b": 45})),
    Task("difference", "What is 7.5 - 2.5?", "5", ("subtract", {"a": 7.5, "b": 2.5})),
    Task("conversion", "How many miles are 10 km?", "6.21", ("km_to_miles", {"km": 10})),
    Task("conversion", "Convert 42 km to miles.", "26.1", ("km_to_miles", {"km": 42})),
    Task("conversion", "How far is 5 km in miles?", "3.11", ("km_to_miles", {"km": 5})),
    Task("conversion", "Convert 100 kilometres to miles.", "62.14", ("km_to_miles", {"km": 100})),
)
TOOLS = {"sum": add, "difference": subtract, "conversion": km_to_miles}
PROMPTS = {
    "difference": "You are a calculator assistant. To subtract numbers, call the subtract tool with a and b. "
                  "When you have the tool's result, answer with one short sentence that states it.",
    "conversion": "You are a unit converter. To convert kilometres to miles, call the km_to_miles tool. "
                  "When you have the tool's result, answer with one short sentence that states it.",
    "all": "You are a calculator assistant. Call the tool that fits the question: add, subtract or "
           "km_to_miles. When you have the tool's result, answer with one short sentence that states it.",
}


_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in _NUMBER.findall(text)]


def states(answer: str, expected: str, question: str = "") -> bool:
    """Whether `answer` states the number `expected` and no other number that is not in the question
    ("17 + 25 is 42" yes; "-52 is 52" for 52 no; 42 and 42.0 alike)."""
    want, given = float(expected), set(_numbers(question))
    found = _numbers(answer)
    return any(abs(n - want) < 1e-9 for n in found) and all(
        abs(n - want) < 1e-9 or n in given for n in found)


def make_agent(kind: str, all_tools: bool) -> Any:
    from chainreact.agent import Agent
    from chainreact.tools import tool

    if kind == "sum" and not all_tools:
        return Agent.from_config(DEMO)  # the demo agent itself
    # The demo's settings (params, maxStep, the embedded model) with other tools and prompt.
    cfg = {k: v for k, v in json.loads(DEMO.read_text())["configuration"].items() if k != "tools"}
    if all_tools:
        tools, cfg["systemPrompt"] = [tool(add), tool(subtract), tool(km_to_miles)], PROMPTS["all"]
    else:
        tools, cfg["systemPrompt"] = [tool(TOOLS[kind])], PROMPTS[kind]
    return Agent(name=f"bench-{kind}", config=cfg, tools=tools)


async def run_task(task: Task, all_tools: bool) -> dict[str, Any]:
    agent = make_agent(task.kind, all_tools)
    t0 = time.perf_counter()
    try:
        result = await agent.run(task.question)
        answer, error, messages = result.content, "", result.messages
    except Exception as e:  # a failed run is a failed task, reported with its error
        answer, error, messages = "", f"{type(e).__name__}: {e}", []
    finally:
        await agent.aclose()
    calls = [(c.name, c.arguments) for m in messages if m.role == "assistant" for c in m.tool_calls or []]
    # Right only when a tool gave the number: a small model that swaps the arguments of subtract and then
    # drops the minus sign of the result is not counted as right.
    from_tool = any(m.role == "tool" and states(m.text, task.expected) for m in messages)
    first = calls[0] if calls else None
    right_call = first is not None and first[0] == task.call[0] and _args(first[1]) == task.call[1]
    return {"kind": task.kind, "question": task.question, "expected": task.expected, "answer": answer,
            "ok": not error and from_tool and states(answer, task.expected, task.question),
            "right_first_call": right_call, "first_call": list(first) if first else None,
            "calls": len(calls), "error": error, "seconds": round(time.perf_counter() - t0, 1)}


def _args(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from chainreact.local import get_local_endpoint, stop_local

    await get_local_endpoint()  # start (or find) the server once, outside the first task's time
    rows = []
    try:
        for task in TASKS:
            if args.kind and task.kind != args.kind:
                continue
            row = await run_task(task, args.all_tools)
            rows.append(row)
            if not args.json:
                mark = "ok  " if row["ok"] else "FAIL"
                print(f"{mark} {row['kind']:<10} {row['question']:<45} -> {row['answer'][:70]!r}"
                      f"{'  ' + row['error'][:80] if row['error'] else ''}", flush=True)
    finally:
        await stop_local()
    ok = sum(r["ok"] for r in rows)
    return {"config": "all tools on one agent" if args.all_tools else "the task's own tool",
            "tasks": len(rows), "succeeded": ok, "rate": round(100 * ok / max(len(rows), 1), 1),
            "right_first_call": sum(r["right_first_call"] for r in rows), "rows": rows}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--all-tools", action="store_true", help="one agent with add, subtract and km_to_miles")
    p.add_argument("--kind", choices=sorted(TOOLS), help="only the tasks of this kind")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    report = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['config']}: {report['succeeded']}/{report['tasks']} answered right "
              f"({report['rate']} %), first tool call right in {report['right_first_call']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
