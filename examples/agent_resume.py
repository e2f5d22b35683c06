"""Checkpoints, an interrupt and a resume: a tool asks the user, the run stops, and goes on later from
its saved checkpoint (here a JSON string; chainreact.state keeps them in SQLite or PostgreSQL)."""

import asyncio
import json

from chainreact.agent import Agent, Checkpoint, Resume, ToolInterrupt
from chainreact.testing import FakeLLM
from chainreact.tools import ToolContext, ToolOutput, tool
from chainreact.types import Message, ToolCall

calls = {"weather": 0}


@tool
def weather(city: str) -> str:
    """Current temperature in a city, in Celsius."""
    calls["weather"] += 1
    return f"21 C in {city}"


@tool
def ask_user(question: str, ctx: ToolContext) -> str:
    """Ask the user a question and wait for the answer."""
    if "answer" in ctx.state:
        return str(ctx.state["answer"])
    raise ToolInterrupt(question, schema={"enum": ["C", "F"]})


saved: dict[str, str] = {}  # run id -> the last checkpoint, as JSON


async def save(cp: Checkpoint) -> None:
    saved[cp.run_id] = json.dumps({
        "step": cp.step, "point": cp.point,
        "messages": [m.to_openai() for m in cp.messages],
        "pending": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in cp.pending],
        "completed": {k: v.content for k, v in cp.completed.items()},
    })


def load(run_id: str, answers: dict[str, str]) -> Resume:
    snap = json.loads(saved[run_id])
    return Resume([Message.from_openai(m) for m in snap["messages"]], snap["step"],
                  [ToolCall(c["id"], c["name"], c["arguments"]) for c in snap["pending"]],
                  {k: ToolOutput(v) for k, v in snap["completed"].items()}, answers=answers, run_id=run_id)


SCRIPT = [
    {"tool_calls": [{"id": "w", "name": "weather", "arguments": {"city": "Lyon"}},
                    {"id": "q", "name": "ask_user", "arguments": {"question": "Celsius or Fahrenheit?"}}]},
    {"text": "It is 70 F in Lyon."},
]


async def main() -> None:
    with FakeLLM(SCRIPT) as server:
        agent = Agent(name="helper", url=server.url, model="fake-model", tools=[weather, ask_user],
                      checkpoint=save)
        first = await agent.run("How warm is it in Lyon?")
        question = first.interruption.questions[0]
        print(f"stop_reason: {first.stop_reason}; asks: {question.question} {question.schema}")
        print(f"checkpoint: {json.loads(saved[first.metadata['run_id']])['point']}")

        # ... later, perhaps in another process, with the user's answer:
        result = await agent.run(resume=load(first.metadata["run_id"], {question.id: "F"}))
        print(f"resumed: {result.content} (weather ran {calls['weather']} time)")


if __name__ == "__main__":
    asyncio.run(main())
