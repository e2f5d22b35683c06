"""@tool with typed arguments: one pydantic model per function gives the JSON Schema the model sees and
converts the model's JSON into the declared types (a list of `Item` models, a `date`). Arguments that do
not fit become an `Error: ...` result the model can correct; the function never sees them.

Runs against chainreact's scripted server (offline, as in CI).
"""

import datetime
import json

from pydantic import BaseModel

from chainreact import Agent, tool
from chainreact.testing import FakeLLM


class Item(BaseModel):
    sku: str
    qty: int = 1


@tool
def place_order(items: list[Item], deliver_on: datetime.date) -> str:
    """Place an order.

    Args:
        items: what to order
        deliver_on: the delivery day (YYYY-MM-DD)
    """
    assert all(isinstance(i, Item) for i in items) and isinstance(deliver_on, datetime.date)
    units = sum(i.qty for i in items)
    return f"ordered {units} units for {deliver_on:%A %d %B %Y}"


SCRIPT = [  # the scripted model first sends a bad date, then corrects it
    {"tool_calls": [{"name": "place_order",
                     "arguments": {"items": [{"sku": "A1", "qty": 2}], "deliver_on": "next friday"}}]},
    {"tool_calls": [{"name": "place_order",
                     "arguments": {"items": [{"sku": "A1", "qty": 2}, {"sku": "B7"}],
                                   "deliver_on": "2026-12-04"}}]},
    {"text": "Done: 3 units arrive on Friday."},
]


def main(url: str) -> None:
    print("schema:", json.dumps(place_order.parameters["properties"]["deliver_on"]))
    agent = Agent(name="shop", url=url, model="fake-model", tools=[place_order])
    result = agent.run_sync("Order two A1 and one B7 for Friday the 4th.")
    for m in result.messages:
        if m.role == "tool":
            print("tool:", m.text)
    print("answer:", result.content)


if __name__ == "__main__":
    with FakeLLM(SCRIPT) as server:
        main(server.url)
