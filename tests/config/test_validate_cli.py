"""`chainreact validate` catches what a run would fail on (issue 25): unknown fields with the closest
field, `${...}` that does not parse, a missing include, an agent that is its own sub-agent. Each case runs
the command as a subprocess on a file, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    env.pop("CHAINREACT_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "chainreact", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def write(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def errors(r: subprocess.CompletedProcess[str]) -> list[tuple[str, str]]:
    """(JSON path, message) of each `FILE: PATH: MESSAGE` line on stderr."""
    out = []
    for line in r.stderr.splitlines():
        _, path, msg = line.split(": ", 2)
        out.append((path, msg))
    return out


# ------------------------------------------------------------------ unknown fields


def test_a_misspelt_field_is_an_error_naming_the_closest_field(tmp_path: Path) -> None:
    doc = write(tmp_path / "a.yaml", "systemPrompt: hi\nmaxSteps: 5\nparams:\n  temprature: 0\n")
    r = cli("validate", str(doc))
    assert r.returncode == 1
    assert r.stdout == ""
    assert errors(r) == [("$.maxSteps", "unknown field (did you mean 'maxStep'?)"),
                         ("$.params.temprature", "unknown field (did you mean 'temperature'?)")]
    assert all(line.startswith(f"{doc}: ") for line in r.stderr.splitlines())


def test_unknown_fields_of_a_node_document_and_its_tools_have_their_paths(tmp_path: Path) -> None:
    doc = write(tmp_path / "node.json", {
        "id": "n1", "type": "ai/agent", "debugMod": True,
        "configuration": {"systemPrompt": "hi", "tools": [{"type": "builtin", "name": "bash", "nmae": "x"}]}})
    r = cli("validate", str(doc))
    assert r.returncode == 1
    assert errors(r) == [("$.configuration.tools[0].nmae", "unknown field (did you mean 'name'?)"),
                         ("$.debugMod", "unknown field (did you mean 'debugMode'?)")]


def test_lenient_keeps_foreign_fields_as_warnings(tmp_path: Path) -> None:
    doc = write(tmp_path / "rulego.json", {"id": "n1", "type": "ai/agent", "additionalInfo": {"x": 1},
                                           "configuration": {"systemPrompt": "hi", "layoutX": 3}})
    r = cli("validate", "--lenient", str(doc))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{doc}: ok (agent ")
    assert r.stderr == f"warning: {doc}: unknown field(s) ignored: $.configuration.layoutX\n"


def test_a_document_can_say_its_foreign_fields_are_meant(tmp_path: Path) -> None:
    doc = write(tmp_path / "a.json", {"systemPrompt": "hi", "layoutX": 3, "unknownFields": "warn"})
    r = cli("validate", str(doc))
    assert r.returncode == 0, r.stderr
    assert "$.layoutX" in r.stderr and r.stderr.startswith("warning: ")


def test_run_refuses_a_misspelt_field_before_calling_any_model(tmp_path: Path) -> None:
    # url points at a closed port: the run fails on the document, never reaching the endpoint
    doc = write(tmp_path / "a.json", {"url": "http://127.0.0.1:9/v1", "maxSteps": 5})
    r = cli("run", str(doc), "hi")
    assert r.returncode == 1
    assert "$.maxSteps: unknown field (did you mean 'maxStep'?)" in r.stderr
    assert "Traceback" not in r.stderr


# ------------------------------------------------------------------ templates


def test_a_template_that_does_not_parse_fails_with_its_field(tmp_path: Path) -> None:
    doc = write(tmp_path / "a.json", {
        "systemPrompt": "Today is ${now(}", "messages": [{"role": "user", "content": "fine ${1 + 1}"},
                                                       {"role": "assistant", "content": "${global.}"}],
        "tools": [{"type": "http", "name": "h", "description": "d",
                   "execution": {"endpoint": "https://example.com/${)"}}]})
    r = cli("validate", str(doc))
    assert r.returncode == 1
    got = errors(r)
    assert [p for p, _ in got] == ["$.systemPrompt", "$.messages[1].content",
                                   "$.tools[0].execution.endpoint"]
    assert "unterminated '${'" in got[0][1] and "'${now(}'" in got[0][1]
    assert "syntax error in '${global.}'" in got[1][1]
    assert all("a literal '${' is written '$${'" in m for _, m in got)


def test_a_missing_include_fails_with_its_field_and_the_path_looked_at(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "here.md").write_text("You help.")
    doc = write(tmp_path / "a.json", {"id": "n", "type": "ai/agent", "configuration": {
        "systemPrompt": "${include('prompts/here.md')}\n${include('prompts/gone.md')}",
        "messages": [
            {"role": "user", "content": "${fileExists('opt.md') ? include('opt.md') : ''}"},  # guarded
            {"role": "user", "content": "${include(global.file)}"},  # known at run time only
        ]}})
    r = cli("validate", str(doc), cwd=Path("/"))  # relative to the document, not the working directory
    assert r.returncode == 1
    [(path, msg)] = errors(r)
    assert path == "$.configuration.systemPrompt"
    assert "include('prompts/gone.md'): no such file" in msg and str(tmp_path / "prompts" / "gone.md") in msg
    (tmp_path / "prompts" / "gone.md").write_text("more")
    r = cli("validate", str(doc))
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------ sub-agents


def test_an_agent_that_is_its_own_sub_agent_fails_as_run_does(tmp_path: Path) -> None:
    doc = write(tmp_path / "loop.json", {"name": "loop", "url": "http://127.0.0.1:9/v1",
                                         "tools": [{"type": "agent", "targetId": "loop"}]})
    r = cli("validate", str(doc))
    assert r.returncode == 1
    [(path, msg)] = errors(r)
    assert path == "$.tools[0].targetId"
    assert "its own sub-agent" in msg and "loop -> loop" in msg
    run = cli("run", str(doc), "hi")  # what validate foresees
    assert run.returncode == 1 and "its own sub-agent" in run.stderr


def test_a_cycle_through_another_agent_and_a_missing_target_are_reported(tmp_path: Path) -> None:
    write(tmp_path / "b.json", {"name": "b", "tools": [{"type": "agent", "targetId": "a"}]})
    doc = write(tmp_path / "a.json", {"name": "a", "tools": [{"type": "agent", "targetId": "b"},
                                                             {"type": "agent", "targetId": "nobody"}]})
    r = cli("validate", str(doc))
    assert r.returncode == 1
    got = errors(r)
    assert [p for p, _ in got] == ["$.tools[0].targetId", "$.tools[1].targetId"]
    assert "a -> b -> a" in got[0][1]
    assert "no agent document with id 'nobody'" in got[1][1]


def test_a_sub_agent_beside_the_document_is_fine(tmp_path: Path) -> None:
    write(tmp_path / "helper.json", {"name": "helper", "systemPrompt": "help"})
    doc = write(tmp_path / "main.json", {"name": "main", "tools": [{"type": "agent", "targetId": "helper"}]})
    r = cli("validate", str(doc))
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------ what ships


SHIPPED = sorted(p for p in (ROOT / "examples").rglob("*") if p.suffix in (".json", ".yaml", ".yml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_document_validates(path: Path) -> None:
    r = cli("validate", str(path.relative_to(ROOT)))
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr


def test_an_agent_node_in_a_rule_chain_keeps_foreign_keys_but_a_typo_is_warned(tmp_path: Path) -> None:
    chain = write(tmp_path / "chain.json", {
        "ruleChain": {"id": "c1", "name": "c1", "root": True},
        "metadata": {"firstNodeIndex": 0, "connections": [], "nodes": [
            {"id": "a", "type": "ai/agent", "name": "a",
             "configuration": {"systemPrompt": "hi", "maxSteps": 3, "layoutX": 1}}]}})
    r = cli("validate", str(chain))
    assert r.returncode == 0, r.stderr  # a RuleGo document: the chain loads
    assert r.stdout.startswith(f"{chain}: ok (rule chain")
    at = "$.metadata.nodes[0].configuration"
    assert r.stderr.splitlines() == [
        f"warning: {chain}: {at}.maxSteps: unknown field (did you mean 'maxStep'?), ignored (a rule chain "
        "keeps foreign keys)",
        f"warning: {chain}: {at}.layoutX: unknown field, ignored (a rule chain keeps foreign keys)"]


def test_a_folder_is_validated_as_serve_reads_it(tmp_path: Path) -> None:
    # Before: "error: agents/: no such file (expected a JSON or YAML document)" for a folder that exists.
    write(tmp_path / "bot.json", {"id": "bot", "name": "bot",
                                  "configuration": {"url": "http://127.0.0.1:9", "model": "m"}})
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "misspelt.json", {"id": "m", "configuration": {"maxSteps": 3}})
    write(tmp_path / "typo.json", '{"id": "typo",}')
    write(tmp_path / "package.json", {"name": "not-a-document"})
    r = cli("validate", str(tmp_path))
    assert r.returncode == 1
    assert r.stdout == f"{tmp_path / 'bot.json'}: ok (agent 'bot', 0 tool(s), model endpoint: " \
                       "http://127.0.0.1:9)\n"
    assert r.stderr.splitlines() == [
        f"skipped: {tmp_path / 'package.json'}: not an agent, rule chain or flow document (top-level keys: "
        "name)",
        f"{tmp_path / 'sub' / 'misspelt.json'}: $.configuration.maxSteps: unknown field (did you mean "
        "'maxStep'?)",
        f"error: {tmp_path / 'typo.json'}: invalid JSON at line 1 column 15: Expecting property name "
        "enclosed in double quotes"]
    shipped = cli("validate", "examples/")
    assert shipped.returncode == 0, shipped.stderr
    assert len(shipped.stdout.splitlines()) == len(SHIPPED) and shipped.stderr == ""


def test_validate_names_each_document_by_the_id_serve_lists_it_under(tmp_path: Path) -> None:
    # Before: validate named an agent by its `name` ('agent' without one) and a flow without an id
    # '(no id)', while serve listed them by id, or by the file's name.
    from chainreact.server.catalog import Catalog

    agent = {"url": "http://127.0.0.1:9", "model": "m"}
    write(tmp_path / "named.json", {"id": "weather", "name": "Weather bot", "configuration": agent})
    write(tmp_path / "anonymous.json", {"configuration": agent})
    write(tmp_path / "desk.json", {"nodes": [{"name": "bye", "type": "end", "start": True}]})
    served = set(Catalog.load([tmp_path]).entries)
    assert served == {"weather", "anonymous", "desk"}
    from chainreact.flows import Flow

    assert Flow.load(tmp_path / "desk.json").id == "desk"  # the id a durable worker hosts it under
    r = cli("validate", str(tmp_path))
    assert r.returncode == 0, r.stderr
    named = {line.split(": ok (", 1)[0]: line.split("'")[1] for line in r.stdout.splitlines()}
    assert named == {str(tmp_path / f"{ident if ident != 'weather' else 'named'}.json"): ident
                     for ident in served}
    assert "agent 'weather' (name 'Weather bot')" in r.stdout
