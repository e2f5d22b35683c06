"""YAML as RuleGo's Go side reads it (bottom layer: imports nothing of chainreact).

PyYAML follows YAML 1.1, where `yes`, `no`, `on`, `off` (any case form) are booleans: a skill named `no`
or a list `[yes, on]` of names would arrive as False/True. YAML 1.2 (and Go's yaml.v3 that RuleGo uses)
reads only `true`/`false` as booleans. `load_yaml` does that; everything else is PyYAML's safe loader.
Import it lazily: it imports PyYAML.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_BOOL_TAG = "tag:yaml.org,2002:bool"
YES_NO = {"yes": True, "on": True, "no": False, "off": False}


class Yaml12BoolLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans: only true/True/TRUE/false/False/FALSE."""


Yaml12BoolLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12BoolLoader.add_implicit_resolver(
    _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_yaml(text: str) -> Any:
    """`yaml.safe_load` with YAML 1.2 booleans (`yes`/`no`/`on`/`off` stay strings)."""
    return yaml.load(text, Loader=Yaml12BoolLoader)  # a SafeLoader subclass: safe


def as_bool(value: Any) -> Any:
    """A YAML 1.1 boolean word (`yes`, `off`, ...) as the bool it meant there; anything else unchanged."""
    if isinstance(value, str) and value.strip().lower() in YES_NO:
        return YES_NO[value.strip().lower()]
    return value
