"""The agent as a node of a rule chain, streaming, with another chain as its tool.

The scripted fake model (chainreact.testing.FakeLLM) asks for the `check_reading` tool (the `alarm`
chain), then answers; frames arrive on the Stream relation in order, then Success. assistant.json names
no endpoint: it goes where OPENAI_BASE_URL / OPENAI_API_KEY point (here the fake model; unset, the
embedded model), with the model OPENAI_DEFAULT_MODEL names (else gpt-4o-mini)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from chainreact.chains import RuleEngine, RuleMsg
from chainreact.testing import FakeLLM

HERE = Path(__file__).parent

SCRIPT = [
    {"tool_calls": [{"name": "check_reading", "arguments": {"temperature": 71}}]},
    {"text": "The lab is too hot: 71 degrees.", "chunks": 4},
]


def show(frame: RuleMsg) -> None:
    md = frame.metadata
    if md.get("tool_call") == "true":
        body = json.loads(frame.data)
        print(f"  [{body['type']}] {body['toolName']} {body.get('arguments', body.get('content'))}")
    elif md.get("stream_completed") == "true":
        print(f"  [end of stream] tokens={md.get('total_tokens')}")
    else:
        print(f"  chunk: {frame.data!r}")


async def main() -> None:
    async with FakeLLM(SCRIPT) as srv:
        # what a user does in the shell: export OPENAI_BASE_URL=... OPENAI_API_KEY=...
        os.environ.update(OPENAI_BASE_URL=srv.url, OPENAI_API_KEY="sk-example",
                          OPENAI_DEFAULT_MODEL="fake-model")
        engine = RuleEngine()
        engine.load(HERE / "alarm.json")
        engine.load(HERE / "assistant.json")
        msg = RuleMsg(type="CHAT", data="Is 71 degrees ok in the lab?", data_type="TEXT",
                      metadata={"stream": "true", "room": "lab"})
        ends = await engine.run("assistant", msg, on_stream=show)
    for end in ends:
        print(f"{end.relation}: {end.msg.data} (answeredBy={end.msg.metadata['answeredBy']}, "
              f"full_content={end.msg.metadata['full_content']})")


if __name__ == "__main__":
    asyncio.run(main())
