"""`Agent(config={...})` is validated like a document, and strictly (issue 9 item 16's agent half)."""

from __future__ import annotations

import pytest

from chainreact.agent import Agent
from chainreact.errors import ConfigError

URL = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(("config", "message"), [
    ({"maxSteps": 3}, r"config\.maxSteps \(did you mean 'maxStep'\?\)"),
    ({"params": {"temprature": 0.2}}, r"config\.params\.temprature \(did you mean 'temperature'\?\)"),
    ({"tools": [{"type": "builtin", "name": "bash", "confg": {}}]}, r"config\.tools\[0\]\.confg"),
    ({"maxStep": "many"}, r"config\.maxStep: Input should be a valid integer"),
])
def test_bad_programmatic_config_is_a_clear_error(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as ei:
        Agent(config=config, url=URL, model="m")
    assert ei.value.errors and ei.value.errors[0][0].startswith("config.")


def test_good_programmatic_config_is_used() -> None:
    agent = Agent(config={"maxStep": 3, "params": {"temperature": 0.2}, "returnDirectly": ["x"]}, url=URL,
                  model="m")
    assert agent.max_steps == 3 and agent.config.params.temperature == 0.2 and agent.return_directly == {"x"}
