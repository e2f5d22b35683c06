"""`chainreact schema --flow`: a Draft 2020-12 JSON Schema that accepts the flow examples (and the spec's
example node) and rejects a broken flow; plain `schema` stays the agent document's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .helpers import cli_env

ROOT = Path(__file__).resolve().parents[2]


def schema(*args: str) -> dict[str, object]:
    r = subprocess.run([sys.executable, "-m", "chainreact", "schema", *args], capture_output=True, text=True,
                       timeout=60, env=cli_env())
    assert r.returncode == 0, r.stderr
    out: dict[str, object] = json.loads(r.stdout)
    return out


def test_schema_flow_validates_flows() -> None:
    import jsonschema

    s = schema("--flow")
    assert s["title"] == "chainreact flow"
    jsonschema.Draft202012Validator.check_schema(s)
    v = jsonschema.Draft202012Validator(s)
    example = json.loads((ROOT / "examples/flows/support.json").read_text())
    assert list(v.iter_errors(example)) == []
    spec_node = json.loads((ROOT / "tests/flows/data/spec_example_node.json").read_text())
    assert list(v.iter_errors({"id": "f", "nodes": [spec_node | {"start": True}]})) == []
    assert list(v.iter_errors({"nodes": [{"name": "x", "type": "nosuchkind"}]})) != []
    assert list(v.iter_errors({"nodes": [{"name": "a", "type": "aiagent", "maxToolExecutions": "ten",
                                          "output": {"schema": {"type": "object"}}}]})) != []
    # Without --flow: the agent document's schema, not the flow's.
    assert schema()["title"] != "chainreact flow"
