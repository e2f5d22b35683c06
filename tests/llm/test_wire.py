"""Conformance: every recorded provider exchange in shared/wire, replayed byte-exact through FakeLLM.

Each recording's body is served with its status, content type and headers; the client must read what
the record's `expected` says (see shared/wire/README.md). Two documented normalisations: a tool call
without an id gets a generated unique one (the tool result must name its call), and empty arguments
read as "{}" (valid JSON for the tool).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from chainreact.errors import ModelError
from chainreact.testing import FakeLLM

from .conftest import texts


def _wire_dir() -> Path | None:
    env = os.environ.get("CHAINREACT_WIRE_DIR")
    if env:
        return Path(env) if Path(env).is_dir() else None
    repo = Path(__file__).resolve().parents[2]
    # ../shared/wire beside the clone; ../../shared/wire from a worktree in a sibling folder.
    for cand in (repo.parent / "shared" / "wire", repo.parent.parent / "shared" / "wire"):
        if cand.is_dir():
            return cand
    return None


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


WIRE = _wire_dir()
FILES = sorted(WIRE.glob("*.json")) if WIRE else []


def _missing() -> None:
    why = "shared/wire not found beside the repository and CHAINREACT_WIRE_DIR not set (or not a folder)"
    if _in_ci():
        pytest.fail(f"{why}: CI must run the wire-conformance tests")  # never a silent skip in CI
    pytest.skip(why)


def test_corpus_present() -> None:
    if WIRE is None:
        _missing()
    assert len(FILES) >= 80, f"expected the whole corpus in {WIRE}, found {len(FILES)} recordings"


def _args(raw: str) -> Any:
    return json.loads(raw) if raw.strip() else {}


@pytest.mark.parametrize("path", FILES or [None], ids=[p.stem for p in FILES] or ["no-corpus"])
async def test_recording(path: Path | None, harness: Any) -> None:
    if path is None:
        _missing()
        return
    rec = json.loads(path.read_text(encoding="utf-8"))
    turn: dict[str, Any] = {"raw_body": rec["response_body"], "status": rec["status"]}
    if rec.get("response_content_type"):
        turn["content_type"] = rec["response_content_type"]
    if rec.get("response_headers"):
        turn["headers"] = rec["response_headers"]
    exp = rec["expected"]
    stream = bool(rec.get("stream"))
    async with FakeLLM([turn]) as srv:
        h = harness(url=srv.url, model=rec.get("model") or "m", maxRetries=-1)
        if "error" in exp:
            with pytest.raises(ModelError) as ei:
                await h.run(stream=stream)
            assert ei.value.status == exp["error"]["status"]
            assert exp["error"]["message"] in str(ei.value)
            return
        items, resp = await h.run(stream=stream)
    msg = resp.message
    assert msg.text == exp["content"]
    assert (msg.reasoning or "") == exp["reasoning"]
    got_calls = msg.tool_calls or []
    assert [c.name for c in got_calls] == [c["name"] for c in exp["tool_calls"]]
    for got, want in zip(got_calls, exp["tool_calls"], strict=True):
        if want["id"]:
            assert got.id == want["id"]
        else:  # the provider sent none: a generated, unique one (the tool result must name its call)
            assert got.id.startswith("call_") and len(got.id) > len("call_")
        assert _args(got.arguments) == _args(want["arguments"])
    assert resp.finish_reason == exp["finish_reason"]
    if exp["usage"] is not None:
        u = resp.usage
        assert u is not None
        assert (u.prompt_tokens, u.completion_tokens, u.total_tokens) == (
            exp["usage"]["prompt_tokens"], exp["usage"]["completion_tokens"], exp["usage"]["total_tokens"])
    if stream:
        # The streamed items add up to the same message.
        assert texts(items) == msg.text
