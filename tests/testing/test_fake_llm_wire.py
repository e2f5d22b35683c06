"""Replaying recorded provider traffic (/work/shared/wire) through FakeLLM byte-exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from chainreact.testing import FakeLLM

WIRE = Path("/work/shared/wire")
FILES = sorted(WIRE.glob("*.json")) if WIRE.is_dir() else []


def _turn(rec: dict[str, Any]) -> dict[str, Any]:
    return {
        "raw_body": rec["response_body"],
        "status": rec["status"],
        "content_type": rec["response_content_type"],
        "headers": rec.get("response_headers") or {},
    }


@pytest.mark.skipif(not FILES, reason="recorded traffic not present at /work/shared/wire")
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_recorded_body_is_served_byte_exact(path: Path) -> None:
    rec = json.loads(path.read_text(encoding="utf-8"))
    request = rec.get("request") or {"model": "m", "messages": []}
    with (
        FakeLLM([_turn(rec)]) as srv,
        httpx.Client(timeout=10) as client,
        client.stream("POST", srv.url + "/chat/completions", json=request) as r,
    ):
        content = r.read()
        status, headers = r.status_code, r.headers
    assert content == rec["response_body"].encode("utf-8")
    assert status == rec["status"]
    if rec["response_content_type"] is not None:
        assert headers["content-type"] == rec["response_content_type"]
    else:  # not recorded: the server guesses from the body
        sse = rec["response_body"].lstrip().startswith("data:")
        assert headers["content-type"].startswith("text/event-stream" if sse else "application/json")
    # Recorded gzip/chunked framing headers must not be replayed over a decoded body.
    assert "content-encoding" not in headers
    for name, value in (rec.get("response_headers") or {}).items():
        if name.lower() not in ("content-type", "content-encoding", "transfer-encoding", "content-length"):
            assert headers[name] == value


@pytest.mark.skipif(not FILES, reason="recorded traffic not present at /work/shared/wire")
def test_gzip_origin_stream_and_retry_after_replay() -> None:
    gz = json.loads((WIRE / "openai__gpt-4o__gzip-recorded-stream.json").read_text())
    rl = json.loads((WIRE / "openai__gpt-3.5-turbo__error-429-rate-limit-retry-after.json").read_text())
    with FakeLLM([_turn(gz), _turn(rl)]) as srv, httpx.Client(timeout=10) as client:
        stream = client.post(srv.url + "/chat/completions", json={"stream": True})
        limited = client.post(srv.url + "/chat/completions", json={})
    assert stream.headers["transfer-encoding"] == "chunked"  # one HTTP chunk per SSE event
    assert stream.text == gz["response_body"]
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "20"
    assert limited.json()["error"]["message"].startswith("Rate limit reached")
