"""ChatModelAgent extension points: a custom model input, a streaming tool, deferred tools found through
tool search (and a before_agent middleware listing one of them up front for one run), an exit tool, OutputKey,
and retry/failover callbacks. Runs offline against the scripted server.
"""

import asyncio

from chainreact.agent import Agent, AgentContext, Middleware, streaming_tool
from chainreact.testing import FakeLLM
from chainreact.tools import tool


@streaming_tool
async def deploy(service: str):
    """Deploy a service, reporting progress as it goes."""
    for step in ("build", "push", "roll out"):
        await asyncio.sleep(0.01)
        yield f"{step} ok; "
    yield f"{service} is live"


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"Sunny in {city}"


@tool
def convert_currency(amount: float, to: str) -> str:
    """Convert money between currencies."""
    return f"{amount} {to}"


class CurrencyUpFront(Middleware):
    """BeforeAgent changing the tool search: a run that asks about money gets convert_currency listed up
    front (no tool_search round trip for it); the agent's own configuration stays as it is."""

    async def before_agent(self, ctx: AgentContext) -> None:
        if "EUR" in str(ctx.input):
            ctx.undefer(["convert_currency"])


def model_input(instruction: str, data: dict) -> list[dict]:
    """GenModelInput: our own conversion of instruction + input into model messages."""
    return [{"role": "system", "content": f"{instruction} (ticket {data['ticket']})"},
            {"role": "user", "content": data["ask"]}]


SCRIPT = [
    {"tool_calls": [{"name": "deploy", "arguments": {"service": "api"}}]},
    {"tool_calls": [{"name": "tool_search", "arguments": {"query": "weather"}}]},
    {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Lyon"}}]},
    {"tool_calls": [{"name": "exit", "arguments": {"final_result": "api deployed; Sunny in Lyon"}}]},
]
FAIL = {"status": 503, "message": "overloaded", "headers": {"Retry-After": "0"}}


async def main() -> None:
    with FakeLLM([FAIL, *SCRIPT]) as server:
        session: dict[str, str] = {}
        agent = Agent(
            name="ops", instruction="You run operations.", url=server.url, model="fake-model",
            tools=[deploy], deferred_tools=[get_weather, convert_currency], exit_tool=True,
            gen_model_input=model_input, output_key="last_answer",
            should_retry=lambda error: error.status in (429, 503),  # retry only these
            middleware=[CurrencyUpFront()],
        )
        async for ev in agent.stream({"ticket": "T-7", "ask": "Deploy api, then check the weather in Lyon."},
                                     session_values=session):
            if ev.type == "retry":
                print(f"retry: attempt {ev.attempt} failed ({ev.status}), retrying")
            elif ev.type == "tool_output_delta":
                print(f"  {ev.name} | {ev.text}")
            elif ev.type == "tool_call":
                print(f"→ {ev.call.name}")
            elif ev.type == "final":
                print(f"final ({ev.stop_reason}): {ev.content}")
        print("system prompt sent:", server.chat_requests[1].body["messages"][0]["content"])
        last = server.chat_requests[-1].body
        print("tools in the last request:", [t["function"]["name"] for t in last["tools"]])
        print("session values:", session)
        server.add_turns([{"text": "100 EUR is about 108 USD."}])
        await agent.run({"ticket": "T-8", "ask": "How much is 100 EUR in USD?"})
        first = server.chat_requests[-1].body
        print("tools for the EUR run:", [t["function"]["name"] for t in first["tools"]])


if __name__ == "__main__":
    asyncio.run(main())
