"""`chainreact chain run` on a sample of the shared RuleGo cases (the stable --json form), --jsonl, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chainreact.chains import End, RuleMsg
from chainreact.cli import main

from .rulego_cases import SHARED, load_cases, match_ends

SAMPLE = [c for c in load_cases()
          if not c.get("functions") and not c.get("register_as") and not c.get("config")
          and not c.get("settle_ms") and "id" not in c["input"]][::4]


def _argv(case: dict[str, Any]) -> list[str]:
    inp = case["input"]
    argv = ["chain", "run", case["chain"], "--type", inp["type"], "--data-type", inp["dataType"],
            "--data", inp["data"], "--json"]
    for name in case["chains"]:
        argv += ["--load", str(SHARED / "chains" / name)]
    for k, v in (inp.get("metadata") or {}).items():
        argv += ["--meta", f"{k}={v}"]
    return argv


@pytest.mark.skipif(not SAMPLE, reason="../shared/rulego is not there (outside CI)")
@pytest.mark.parametrize("case", SAMPLE, ids=[c["name"] for c in SAMPLE])
def test_case_through_cli_json(case: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(_argv(case))
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"ends"}
    ends = []
    for e in out["ends"]:
        assert set(e) == {"relation", "error", "msg"}
        assert set(e["msg"]) == {"id", "ts", "type", "dataType", "data", "metadata"}
        ends.append(End(e["relation"], RuleMsg.from_dict(e["msg"]), e["error"]))
    problems = match_ends(case, ends)
    assert not problems, problems
    # docs/cli.md: a message one of whose branches ended in Failure exits 1
    assert code == (1 if any(e.relation == "Failure" or e.error for e in ends) else 0)


def _write_chain(tmp_path: Any) -> str:
    doc = {"ruleChain": {"id": "cli1", "name": "cli1"},
           "metadata": {"nodes": [
               {"id": "f", "type": "exprFilter", "configuration": {"expr": "msg.t > 1"}},
               {"id": "t", "type": "exprTransform", "configuration": {"expr": "upper(metadata.who)"}}],
               "connections": [{"fromId": "f", "toId": "t", "type": "True"}]}}
    p = tmp_path / "c.json"
    p.write_text(json.dumps(doc))
    return str(p)


def test_jsonl_prints_debug_events_and_ends_in_order(tmp_path: Any, capsys: Any) -> None:
    path = _write_chain(tmp_path)
    argv = ["chain", "run", path, "--data", '{"t": 2}', "--meta", "who=ann", "--jsonl", "--debug-nodes"]
    assert main(argv) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(x["event"], x.get("nodeId"), x.get("flow")) for x in lines] == [
        ("debug", "f", "IN"), ("debug", "f", "OUT"), ("debug", "t", "IN"), ("debug", "t", "OUT"),
        ("end", None, None)]
    assert lines[-1]["relation"] == "Success"
    assert lines[-1]["msg"]["data"] == "ANN"


def test_data_from_file_and_a_failure_exits_1_after_printing_the_ends(tmp_path: Any, capsys: Any) -> None:
    path = _write_chain(tmp_path)
    data = tmp_path / "d.txt"
    data.write_text("not json")
    assert main(["chain", "run", path, "--data", f"@{data}", "--data-type", "TEXT", "--json"]) == 1
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert [e["relation"] for e in out["ends"]] == ["Failure"]
    assert out["ends"][0]["error"]
    assert "1 of 1 branch(es) ended in Failure" in captured.err and "at node 'f'" in captured.err


def test_a_chain_that_does_not_load_exits_1(tmp_path: Any, capsys: Any) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"ruleChain": {"id": "b"},
                               "metadata": {"nodes": [{"id": "x", "type": "nope"}]}}))
    assert main(["chain", "run", str(bad), "--json"]) == 1
    err = capsys.readouterr().err
    assert "$.metadata.nodes[0].type" in err and "bad.json" in err
    assert main(["chain", "run", "missing-id", "--json"]) == 1
    assert main(["chain", "validate", str(bad)]) == 1


def test_validate_tells_a_chain_and_lists_every_problem(tmp_path: Any, capsys: Any) -> None:
    good = _write_chain(tmp_path)
    assert main(["validate", good]) == 0
    assert "rule chain: 'cli1', 2 node(s), 1 connection(s)" in capsys.readouterr().out
    bad = tmp_path / "bad2.json"
    bad.write_text(json.dumps({"ruleChain": {"id": "b"}, "metadata": {
        "nodes": [{"id": "x", "type": "nope"},
                  {"id": "x", "type": "exprFilter", "configuration": {"expr": "1 +"}}],
        "connections": [{"fromId": "x", "toId": "ghost", "type": "True"}]}}))
    assert main(["validate", str(bad)]) == 1
    err = capsys.readouterr().err
    for path in ("$.metadata.nodes[1].id", "$.metadata.connections[0].toId", "$.metadata.nodes[0].type",
                 "$.metadata.nodes[1].configuration"):
        assert path in err, err


def test_stream_frames_as_jsonl_through_the_cli(tmp_path: Any, capsys: Any) -> None:
    from chainreact.testing import FakeLLM

    doc = {"ruleChain": {"id": "talk"}, "metadata": {"nodes": [
        {"id": "a", "type": "ai/agent", "configuration": {"url": "${global.url}", "model": "m"}}]}}
    path = tmp_path / "talk.json"
    path.write_text(json.dumps(doc))
    with FakeLLM([{"text": "hello there friend", "chunks": 3}]) as srv:
        code = main(["chain", "run", str(path), "--data", "hi", "--data-type", "TEXT", "--stream",
                     "--global", f"url={srv.url}", "--jsonl"])
    assert code == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    frames = [x["msg"] for x in lines if x["event"] == "stream"]
    text = [f["data"] for f in frames if f["metadata"].get("chunk") == "true"]
    assert "".join(text) == "hello there friend" and len(text) == 3
    assert frames[-1]["metadata"]["stream_completed"] == "true"
    assert lines[-1]["event"] == "end" and lines[-1]["relation"] == "Success"
    assert lines[-1]["msg"]["metadata"]["full_content"] == "true"


def _sensor_model(body: dict[str, Any]) -> dict[str, Any]:
    last = body["messages"][-1]
    if last["role"] == "user":
        return {"tool_calls": [{"name": "check_reading", "arguments": {"temperature": 71}}]}
    return {"text": "The alarm says: " + str(last["content"])}


def test_a_chain_file_finds_the_chains_beside_it(fake_llm: Any, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # examples/chains/assistant.json's tool runs chain 'alarm' by id. Before, `chain run assistant.json`
    # without --load answered "rule chain 'alarm' failed: ruleChain id=alarm not found" to the model.
    from pathlib import Path

    llm = fake_llm(_sensor_model)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    examples = Path(__file__).resolve().parents[2] / "examples" / "chains"
    assert main(["chain", "run", str(examples / "assistant.json"), "--data", "Is 71 too hot?", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ends"][0]["msg"]["data"] == "The alarm says: SOMEWHERE: 71 is too hot"


def test_a_chain_tool_whose_chain_is_not_loaded_says_so(fake_llm: Any, tmp_path: Any,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    llm = fake_llm(_sensor_model)
    chain = tmp_path / "alone.json"
    chain.write_text(json.dumps({"ruleChain": {"id": "alone"}, "metadata": {"nodes": [
        {"id": "agent", "type": "ai/agent", "configuration": {"url": llm.url, "model": "m", "tools": [
            {"type": "rulechain", "targetId": "alarm", "name": "check_reading"}]}}], "connections": []}}))
    assert main(["chain", "run", str(chain), "--data", "Is 71 too hot?", "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["ends"][0]["msg"]["data"]
    assert said == ("The alarm says: Error: rule chain 'alarm' is not loaded (load its file: `chainreact "
                    "chain run --load FILE_OR_DIR`, or serve its folder)")
