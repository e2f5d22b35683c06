"""`chainreact schema` agrees with `chainreact validate` (issue 25): the printed JSON Schema refuses the
unknown fields validate refuses (a misspelt `maxSteps`, a nested `params.temprature`, a stray key beside a
node's `configuration`), accepts what validate keeps lenient (a document that says `"unknownFields":
"warn"`, a builtin tool's own `config`), and both say the same of every shipped example. Both commands run
as a user runs them, as subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema  # a dev dependency: a missing one must fail here, not skip
import pytest

ROOT = Path(__file__).resolve().parents[2]

# (name, document, what validate says: True = ok)
DOCUMENTS: list[tuple[str, Any, bool]] = [
    ("bare", {"model": "m"}, True),
    ("node", {"id": "a", "type": "ai/agent", "name": "A", "configuration": {"model": "m"}}, True),
    ("node-info", {"id": "a", "type": "ai/agent", "configuration": {"model": "m"}, "debugMode": True,
                   "additionalInfo": {"layoutX": 1}}, True),
    ("free-dicts", {"model": "m", "params": {"extraFields": {"thinking.type": "on"},
                                             "jsonSchema": {"type": "object", "anything": 1}},
                    "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "x": 1}]}],
                    "tools": [{"type": "builtin", "name": "bash", "parameters": {"whatever": True}}]},
     True),
    # a builtin's own config keeps unknown keys with a warning, as validate does
    ("tool-config", {"model": "m", "tools": [{"name": "bash", "config": {"noSuchOption": 1}}]}, True),
    ("warn-bare", {"model": "m", "maxSteps": 3, "unknownFields": "warn"}, True),
    ("warn-nested", {"model": "m", "params": {"temprature": 0.5}, "unknownFields": "warn"}, True),
    ("warn-node", {"type": "ai/agent", "configuration": {"model": "m", "unknownFields": "warn", "foo": 1},
                   "layout": {"x": 1}}, True),
    ("misspelt-top", {"model": "m", "maxSteps": 3}, False),
    ("misspelt-params", {"model": "m", "params": {"temprature": 0.5}}, False),
    ("misspelt-failover", {"model": "m", "failover": [{"url": "http://127.0.0.1:9/v1", "modle": "x"}]},
     False),
    ("misspelt-failover-params", {"model": "m", "failover": [{"url": "http://127.0.0.1:9/v1",
                                                             "params": {"topp": 1}}]}, False),
    ("misspelt-compat", {"model": "m", "compat": {"omitt": ["top_p"]}}, False),
    ("misspelt-timeouts", {"model": "m", "timeouts": {"conect": 3}}, False),
    ("misspelt-message", {"model": "m", "messages": [{"role": "user", "content": "hi", "nmae": "x"}]},
     False),
    ("misspelt-tool", {"model": "m", "tools": [{"type": "builtin", "name": "bash", "descripton": "x"}]},
     False),
    ("node-stray-key", {"type": "ai/agent", "configuration": {"model": "m"}, "confguration": {}}, False),
    ("node-misspelt-config", {"type": "ai/agent", "configuration": {"model": "m", "maxSteps": 3}}, False),
    ("node-other-type", {"type": "ai/llm", "configuration": {"model": "m"}}, False),
    ("warn-is-not-a-word", {"model": "m", "unknownFields": "ignore"}, False),
    ("wrong-type", {"model": "m", "maxStep": "many"}, False),
    ("no-agent-field", {"name": "x", "description": "a package.json?"}, False),
    ("flow-node-alone", {"type": "aiagent", "name": "n", "userMessage": "{{input}}",
                         "output": {"schema": {"type": "object"}}, "unknownFields": "warn"}, False),
]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHAINREACT_"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    return env


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chainreact", *args], capture_output=True, text=True,
                          env=_env(), cwd=ROOT, timeout=120)


def _validated(paths: list[Path]) -> dict[Path, bool]:
    """What one `chainreact validate` run says of each file: True for its `PATH: ok (...)` line."""
    r = _cli("validate", *map(str, paths))
    ok = {line.split(": ok (", 1)[0] for line in r.stdout.splitlines() if ": ok (" in line}
    return {p: str(p) in ok for p in paths}


def _schema(*flags: str) -> jsonschema.Draft202012Validator:
    r = _cli("schema", *flags)
    assert r.returncode == 0, r.stderr
    schema = json.loads(r.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _schema_ok(validator: jsonschema.Draft202012Validator, doc: Any) -> bool:
    return validator.is_valid(doc)


def test_schema_and_validate_agree_on_good_and_bad_documents(tmp_path: Path) -> None:
    paths = []
    for name, doc, _ in DOCUMENTS:
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(doc))
        paths.append(p)
    said = _validated(paths)
    schema = _schema()
    table = [(name, expected, said[p], _schema_ok(schema, doc))
             for (name, doc, expected), p in zip(DOCUMENTS, paths, strict=True)]
    # validate says what the table expects (else the table is wrong), and the schema says the same
    assert [(n, v) for n, e, v, _ in table if v != e] == []
    assert [(n, f"validate {v}, schema {s}") for n, _, v, s in table if v != s] == []


def _shipped() -> list[Path]:
    found = [*sorted((ROOT / "examples").rglob("*.json")), *sorted((ROOT / "examples").rglob("*.yaml")),
             *sorted((ROOT / "tests/config/spec_examples").glob("*.json"))]
    assert len(found) >= 8
    return found


def test_every_shipped_example_is_valid_by_schema_and_validate() -> None:
    from chainreact.config import detect_document_kind

    paths = _shipped()
    said = _validated(paths)
    agent, flow = _schema(), _schema("--flow")
    checked = []
    for p in paths:
        doc = json.loads(p.read_text())
        kind = detect_document_kind(doc)
        if kind == "chain":  # `chainreact schema` covers agents and flows; a chain is RuleGo's DSL
            assert said[p], p
            continue
        validator = agent if kind == "agent" else flow
        checked.append((p.name, said[p], _schema_ok(validator, doc)))
    assert checked and all(v and s for _, v, s in checked), checked


@pytest.mark.parametrize("name", ["misspelt-top", "misspelt-params", "node-stray-key"])
def test_the_schema_error_names_the_unknown_field(name: str) -> None:
    doc = next(d for n, d, _ in DOCUMENTS if n == name)
    errors = [e.message for e in _schema().iter_errors(doc)]
    wrong = {"misspelt-top": "maxSteps", "misspelt-params": "temprature", "node-stray-key": "confguration"}
    assert any(wrong[name] in m for m in errors) or any(
        wrong[name] in m for e in _schema().iter_errors(doc) for m in _context_messages(e)), errors


def _context_messages(e: jsonschema.ValidationError) -> list[str]:
    return [c.message for c in e.context or []] + [m for c in e.context or [] for m in _context_messages(c)]
