"""A chain file gets the document loader's limits: a YAML alias bomb is refused at load, not expanded."""

from __future__ import annotations

import pytest

from chainreact.chains import ChainLoadError, RuleEngine


def test_a_yaml_alias_bomb_in_a_chain_is_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    bomb = "\n".join(["ruleChain: {id: bomb}", "extra:", *("  " + line for line in lines),
                      "metadata: {nodes: [], connections: []}"])
    with pytest.raises(ChainLoadError, match="expands to more than"):
        RuleEngine().load(bomb)


def test_a_yaml_chain_still_loads() -> None:
    chain = RuleEngine().load("ruleChain: {id: ok, name: fine}\nmetadata:\n  nodes: []\n  connections: []\n")
    assert chain.id == "ok"
