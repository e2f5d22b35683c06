"""Fault cases of issue 23 for the HTTP server: hostile or malformed requests that used to reach the server's
code (a 500, an exception in a stream) or hold its event loop. Each failed before its fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.ops_support import serve
from tests.server.runs_helpers import agent_doc


@pytest.fixture
def helper(fake_llm: Any, tmp_path: Path) -> Any:
    llm = fake_llm([{"text": "fine"}] * 40)
    with serve(tmp_path / "s", {"helper.json": agent_doc(llm.url)}) as srv:
        yield srv


@pytest.mark.parametrize("given", [b"\xb2", b"\xb9\xb3", b"1\xbd", b"-1", b"1e3", b"9" * 19, b"0x10", b"7 x"])
def test_a_malformed_last_event_id_is_400(helper: Any, given: bytes) -> None:
    # `"²".isdigit()` is true, and int("²") raised in the stream: the connection broke mid-answer.
    run = httpx.post(f"{helper.url}/api/v1/agents/helper/runs", json={"input": "x"}, timeout=30).json()
    resp = httpx.get(f"{helper.url}/api/v1/runs/{run['id']}/events", headers={"Last-Event-ID": given},
                     timeout=30)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["code"] == "invalid_event_id"
    assert "non-negative event id" in resp.json()["error"]["message"]


def test_a_valid_last_event_id_still_resumes(helper: Any) -> None:
    run = httpx.post(f"{helper.url}/api/v1/agents/helper/runs", json={"input": "x"}, timeout=30).json()
    url = f"{helper.url}/api/v1/runs/{run['id']}/events"
    every = httpx.get(url, timeout=30).text
    after = httpx.get(url, headers={"Last-Event-ID": "1"}, timeout=30).text
    assert "id: 1\n" in every and "id: 1\n" not in after and "id: 2\n" in after
    assert httpx.get(url + "?after=\u0661", timeout=30).status_code == 400  # an Arabic-Indic digit
