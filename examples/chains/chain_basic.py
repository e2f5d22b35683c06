"""A rule chain from a JSON file: filter, switch, transforms and end nodes (RuleGo DSL, unchanged).

    python examples/chains/chain_basic.py
    chainreact chain run examples/chains/alarm.json --data '{"temperature": 70}' --meta room=lab --json
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from chainreact.chains import RuleEngine, RuleMsg

HERE = Path(__file__).parent


async def main() -> None:
    engine = RuleEngine()
    engine.load(HERE / "alarm.json")
    for data in ('{"temperature": 70}', '{"temperature": -5}', '{"temperature": 20}', '{"humidity": 3}'):
        ends = await engine.run("alarm", RuleMsg(type="TELEMETRY", data=data, metadata={"room": "lab"}))
        for end in ends:
            print(f"{data:22} -> {end.relation:8} {end.msg.type:10} {end.msg.data} {end.msg.metadata}")


if __name__ == "__main__":
    asyncio.run(main())
