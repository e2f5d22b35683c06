"""Numeric fields of the agent document: zero means the default, -1 turns retries off, bounds with paths
(issue 9 item 7; issue 10 item 6)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from chainreact.cli import main
from chainreact.config import AgentConfig, load_document
from chainreact.errors import ConfigError
from chainreact.testing import FakeLLM

DEFAULTS = {"maxStep": 50, "maxToolOutputLength": 50000, "maxRetries": 3, "circuitCooldownSec": 60}


@pytest.mark.parametrize("field", sorted(DEFAULTS))
def test_zero_means_the_default(field: str) -> None:
    cfg = load_document({"id": "n", "type": "ai/agent", "configuration": {field: 0}}).config
    assert getattr(cfg, field) == DEFAULTS[field]
    # stored as the effective value: a dump and reload (as Agent(config=...) does) keeps it
    again = AgentConfig.model_validate(cfg.model_dump(exclude_unset=True))
    assert getattr(again, field) == DEFAULTS[field]


def test_minus_one_turns_retries_off_and_survives_a_round_trip() -> None:
    cfg = AgentConfig.model_validate({"maxRetries": -1})
    assert cfg.maxRetries == -1
    assert AgentConfig.model_validate(cfg.model_dump(exclude_unset=True)).maxRetries == -1


def complete(tmp_path: Path, url: str, max_retries: int) -> int:
    doc = tmp_path / "a.json"
    doc.write_text(json.dumps({"url": url, "model": "m", "maxRetries": max_retries}))
    return main(["complete", str(doc), "hi", "--json"])


def test_max_retries_zero_retries_like_the_default(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    fail = {"status": 503, "headers": {"Retry-After": "0"}}
    with FakeLLM([fail, fail, {"text": "third time"}]) as srv:
        rc = complete(tmp_path, srv.url, 0)
        assert len(srv.chat_requests) == 3
    assert rc == 0 and json.loads(capsys.readouterr().out)["content"] == "third time"


def test_max_retries_minus_one_makes_one_attempt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fail = {"status": 503, "headers": {"Retry-After": "0"}}
    with FakeLLM([fail, {"text": "never asked"}]) as srv:
        rc = complete(tmp_path, srv.url, -1)
        assert len(srv.chat_requests) == 1
    assert rc == 1 and "503" in capsys.readouterr().err


@pytest.mark.parametrize(("doc", "path"), [
    ({"maxStep": -1}, "$.maxStep"),
    ({"maxRetries": -2}, "$.maxRetries"),
    ({"maxStep": 10**30}, "$.maxStep"),
    ({"circuitCooldownSec": 10**12}, "$.circuitCooldownSec"),
    ({"params": {"maxTokens": 2**63}}, "$.params.maxTokens"),
    ({"timeouts": {"read": -1}}, "$.timeouts.read"),
    ({"timeouts": {"connect": 0}}, "$.timeouts.connect"),
    ({"timeouts": {"read": math.inf}}, "$.timeouts.read"),
    ({"timeouts": {"read": math.nan}}, "$.timeouts.read"),
    ({"tools": [{"type": "builtin", "name": "bash", "timeout": -5}]}, "$.tools[0].timeout"),
])
def test_out_of_range_numbers_are_errors_with_their_path(doc: dict[str, object], path: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_document(doc)
    assert [p for p, _ in e.value.errors] == [path]
