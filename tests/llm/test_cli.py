"""`chainreact complete`: one model call against a FakeLLM, human and --json output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chainreact.cli import main
from chainreact.testing import FakeLLM


def complete(config: Path, prompt: str, **kw: Any) -> int:
    """`chainreact complete` in-process (its output goes to capsys)."""
    argv = ["complete", str(config), prompt]
    argv += ["--stream"] * kw.get("stream", False) + ["--json"] * kw.get("json", False)
    for g in kw.get("globals", []):
        argv += ["--global", g]
    return main(argv)


def write_cfg(tmp_path: Path, **cfg: Any) -> Path:
    p = tmp_path / "agent.json"
    p.write_text(json.dumps(cfg))
    return p


@pytest.mark.parametrize("stream", [False, True])
def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str], stream: bool) -> None:
    turn = {"reasoning": "hmm", "text": "Hello there", "chunks": 3,
            "tool_calls": [{"name": "look", "arguments": {"q": 1}, "id": "c9"}],
            "usage": {"prompt_tokens": 4, "completion_tokens": 6, "total_tokens": 10}}
    with FakeLLM([turn]) as srv:
        cfg = write_cfg(tmp_path, url="${global.base}", key="${global.k}", model="m",
                        systemPrompt="be brief", params={"temperature": 0.1})
        rc = complete(cfg, "hi", stream=stream, json=True, globals=[f"base={srv.url}", "k=sek"])
        req = srv.chat_requests[0]
    out = capsys.readouterr().out
    assert rc == 0
    obj = json.loads(out)
    assert obj["content"] == "Hello there" and obj["reasoning"] == "hmm"
    assert obj["tool_calls"] == [{"id": "c9", "name": "look", "arguments": '{"q":1}'}]
    assert obj["finish_reason"] == "tool_calls"
    assert obj["usage"] == {"prompt_tokens": 4, "completion_tokens": 6, "total_tokens": 10,
                            "cached_tokens": 0}
    assert req.headers["authorization"] == "Bearer sek" and req.body["stream"] is stream
    assert req.body["messages"] == [{"role": "system", "content": "be brief"},
                                    {"role": "user", "content": "hi"}]
    assert req.body["temperature"] == 0.1 and "tools" not in req.body


def test_text_output_streams(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLLM([{"text": "one two", "reasoning": "r"}]) as srv:
        rc = complete(write_cfg(tmp_path, url=srv.url, model="m"), "x", stream=True)
    cap = capsys.readouterr()
    assert rc == 0 and cap.out == "one two\n"
    assert cap.err.startswith("r\n") and "finish_reason=stop" in cap.err


def test_model_error_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLLM([{"status": 404, "message": "model nope not found"}]) as srv:
        rc = complete(write_cfg(tmp_path, url=srv.url, model="nope"), "x", json=True)
    cap = capsys.readouterr()
    assert rc == 1 and cap.out == "" and "model nope not found" in cap.err and "HTTP 404" in cap.err


def test_document_error_exit_1_like_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The CLI's exit codes (docs/cli.md): an invalid or missing document is 1, as for `run`.
    rc = complete(tmp_path / "missing.json", "x")
    assert rc == 1
    assert "no such file" in capsys.readouterr().err
