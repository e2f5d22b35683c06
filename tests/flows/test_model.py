"""The flow document: the spec's Basic Agent object loads unchanged, defaults as the spec says, and every
problem is reported at once with its JSON path."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from chainreact.errors import ConfigError
from chainreact.flows import AIAgentNode, flow_json_schema, load_flow, validate

SPEC_NODE = json.loads((Path(__file__).parent / "data" / "spec_example_node.json").read_text())
SCHEMA = {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}


def _flow(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"id": "f", "name": "F", "nodes": list(nodes)}


def _targets() -> list[dict[str, Any]]:
    # The nodes the spec example's transitions name.
    names = ("satisfactionSurveyAgent", "escalationAgent", "followupAgent")
    return [{"name": n, "type": "end"} for n in names]


def test_spec_example_loads_unchanged_as_a_node() -> None:
    node = AIAgentNode.model_validate(SPEC_NODE)
    assert node.maxToolExecutions == 5
    assert node.memory is not None and node.memory.maxMessages == 20 and node.memory.maxTokens == 4000
    summ = node.memory.memoryOptimizer.summarization  # type: ignore[union-attr]
    assert summ is not None and summ.retainedMessages == 5
    assert node.output.schema_["required"] == ["response", "resolved", "category"]
    assert [t.type for t in node.tools] == ["standard", "standard", "mcp", "mcp"]
    assert node.tools[2].mcpClient is not None and node.tools[2].mcpClient.auth is not None
    assert node.tools[2].mcpClient.auth.bearerToken == "sk-weather-api-key-1234567890"
    assert node.agentOutcomes[1].finish is False
    assert node.agentOutcomes[0].transition is not None
    assert node.agentOutcomes[0].transition.targetId == "satisfactionSurveyAgent"
    assert node.groupConfig is not None and node.groupConfig.directMessageOnly is True
    assert node.llmConfig is not None and node.llmConfig.overrideParams is not None
    assert node.llmConfig.overrideParams.stop == ["END_CONVERSATION"]
    # Round trip: dumping by alias gives back the document's own fields and values.
    dumped = node.model_dump(by_alias=True, exclude_unset=True)
    assert dumped == SPEC_NODE


def test_spec_example_validates_inside_a_flow() -> None:
    summary = validate(_flow(SPEC_NODE, *_targets()), source="spec.json")
    assert "4 node(s)" in summary and "1 aiagent" in summary


def test_defaults_are_the_spec_defaults() -> None:
    node = AIAgentNode.model_validate({"name": "a", "type": "aiagent", "userMessage": "{{userInput}}",
                                       "output": {"schema": SCHEMA},
                                       "memory": {"memoryOptimizer": {"summarization": {}},
                                                  "longTermMemory": {}},
                                       "agentOutcomes": [{"condition": "true"}]})
    assert node.aiModel == "gpt-4o"
    assert node.systemMessage == "You are a helpful AI Assistant."
    assert node.maxToolExecutions == 10
    assert node.start is False and node.answerAfterFinish is False and node.askUserForToolsInput is False
    assert node.tools == [] and node.loginRequired is None
    mem = node.memory
    assert mem is not None and mem.memoryType == "message_window" and mem.maxMessages == 10
    assert mem.memoryOptimizer is not None and mem.memoryOptimizer.summarization is not None
    assert mem.memoryOptimizer.summarization.retainedMessages == 2
    assert mem.longTermMemory is not None and mem.longTermMemory.memoryType == "episodic"
    oc = node.agentOutcomes[0]
    assert oc.finish is True and oc.answerAfterFinish is False


def test_all_errors_at_once_with_json_paths() -> None:
    bad = copy.deepcopy(SPEC_NODE)
    bad["agentOutcomes"][0]["condition"] = "{{output.resolved}} == == true"
    bad["output"]["schema"]["properties"]["priority"]["type"] = "strng"
    bad["maxToolExecution"] = 3  # misspelt
    nodes = [bad, *_targets()[:2]]  # followupAgent missing
    nodes.append({"name": "hello", "type": "message", "message": "hi {{user.name", "start": True})
    nodes.append({"name": "weird", "type": "teleport"})
    with pytest.raises(ConfigError) as ei:
        load_flow(_flow(*nodes), source="bad.json")
    errors = dict(ei.value.errors)
    assert "$.nodes[0].agentOutcomes[0].condition" in errors
    assert "does not parse" in errors["$.nodes[0].agentOutcomes[0].condition"]
    assert "not a valid JSON Schema" in errors["$.nodes[0].output.schema"]
    assert "strng" in errors["$.nodes[0].output.schema"]
    assert errors["$.nodes[0].maxToolExecution"].startswith("unknown field")
    assert "'followupAgent'" in errors["$.nodes[0].transition.targetId"]
    assert "$.nodes[3].message" in errors
    assert "unknown node type" in errors["$.nodes[4]"]
    assert "bad.json" in str(ei.value)


def test_duplicate_names_two_starts_and_outcome_targets() -> None:
    a = {"name": "a", "type": "message", "message": "x", "start": True,
         "transition": {"targetId": "a"}}
    b = {"name": "a", "type": "end", "start": True}
    c = {"name": "c", "type": "aiagent", "userMessage": "{{userInput}}", "output": {"schema": SCHEMA},
         "agentOutcomes": [{"condition": "true", "transition": {"targetId": "nowhere"}},
                           {"condition": "true", "transition": {"end": True, "targetId": "ignored"}}],
         "llmConfig": {"provider": "no-such-cloud"}}
    with pytest.raises(ConfigError) as ei:
        load_flow(_flow(a, b, c))
    errors = dict(ei.value.errors)
    assert "duplicate" in errors["$.nodes[1].name"]
    assert "more than one start" in errors["$.nodes[1].start"]
    assert "'nowhere'" in errors["$.nodes[2].agentOutcomes[0].transition.targetId"]
    assert "$.nodes[2].agentOutcomes[1].transition.targetId" not in errors  # end: true ignores it
    assert "no-such-cloud" in errors["$.nodes[2].llmConfig.provider"]


def test_output_is_required_as_in_the_spec() -> None:
    node = {"name": "a", "type": "aiagent", "userMessage": "{{userInput}}"}
    with pytest.raises(ConfigError) as ei:
        load_flow(_flow(node))
    assert "$.nodes[0].output" in dict(ei.value.errors)


def test_start_node_is_the_marked_one_else_the_first() -> None:
    flow = load_flow(_flow({"name": "a", "type": "end"}, {"name": "b", "type": "end", "start": True}))
    assert flow.start_node.name == "b"
    flow = load_flow(_flow({"name": "a", "type": "end"}, {"name": "b", "type": "end"}))
    assert flow.start_node.name == "a"


def test_json_schema_accepts_the_spec_example_and_rejects_unknown_node_types() -> None:
    import jsonschema  # a dev dependency
    schema = flow_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    assert list(v.iter_errors(_flow(SPEC_NODE, *_targets()))) == []
    assert list(v.iter_errors(_flow({"name": "x", "type": "teleport"})))


def test_override_params_ranges_are_the_specs() -> None:
    # LLMParamsDef: penalties in [-2, 2], logitBias values in [-100, 100], each refusal with its path.
    node = {"name": "a", "type": "aiagent", "userMessage": "{{userInput}}", "output": {"schema": SCHEMA},
            "llmConfig": {"overrideParams": {"presencePenalty": 2.5, "logitBias": {"50256": -101, "7": 100}}}}
    with pytest.raises(ConfigError) as ei:
        load_flow(_flow(node))
    errors = dict(ei.value.errors)
    assert "$.nodes[0].llmConfig.overrideParams.presencePenalty" in errors
    assert "$.nodes[0].llmConfig.overrideParams.logitBias.50256" in errors
    assert not any(p.endswith("logitBias.7") for p in errors)
    ok = copy.deepcopy(node)
    ok["llmConfig"]["overrideParams"] = {"logitBias": {"50256": -100, "7": 100}}
    load_flow(_flow(ok))
