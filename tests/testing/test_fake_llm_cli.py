"""`python -m chainreact.testing.cli` as a real subprocess: URL line, serving, scripts, responder, signals."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from .fakellm_helpers import deltas, post, sse_chunks


@contextmanager
def serve(*args: str) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "chainreact.testing.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), (url, proc.stderr.read())  # type: ignore[union-attr]
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        assert code == 0, proc.stderr.read() if proc.stderr else ""  # clean exit on SIGTERM
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


def test_cli_serves_a_json_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps([{"text": "from the cli"}, {"status": 429, "headers": {"Retry-After": "1"}}])
    )
    with serve("--script", str(script)) as url, httpx.Client(timeout=10) as c:
        assert post(c, url).json()["choices"][0]["message"]["content"] == "from the cli"
        r = post(c, url)
        assert r.status_code == 429 and r.headers["retry-after"] == "1"
        assert post(c, url).status_code == 500  # exhausted: no loop


def test_cli_yaml_with_loop(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("turns:\n  - text: again\n    chunks: 2\nloop: true\n")
    with serve("--script", str(script), "--model", "cli-model") as url, httpx.Client(timeout=10) as c:
        for _ in range(3):
            chunks = sse_chunks(post(c, url, stream=True).text)
            assert "".join(d.get("content") or "" for d in deltas(chunks)) == "again"
        assert c.get(url + "/models").json()["data"][0]["id"] == "cli-model"


def test_cli_loop_flag_and_sigint(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "x"}]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "chainreact.testing.cli", "--script", str(script), "--loop"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    with httpx.Client(timeout=10) as c:
        assert [post(c, url).status_code for _ in range(3)] == [200, 200, 200]
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    proc.stdout.close()


def test_cli_tool_steps_responder() -> None:
    with serve("--responder", "tool-steps:1") as url, httpx.Client(timeout=10) as c:
        first = c.post(url + "/chat/completions", json={"messages": [{"role": "user", "content": "go"}]})
        call = first.json()["choices"][0]["message"]["tool_calls"][0]
        assert call["function"]["name"] == "add" and json.loads(call["function"]["arguments"]) == {
            "a": 0,
            "b": 1,
        }
        msgs = [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": call["id"], "content": "1"},
        ]
        final = c.post(url + "/chat/completions", json={"messages": msgs})
        assert final.json()["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize(
    ("content", "args", "needle"),
    [
        ("[{]", ["--script", "{path}"], "not valid JSON"),
        ('{"steps": []}', ["--script", "{path}"], "must be a list of turns"),
        ('[{"txt": 1}]', ["--script", "{path}"], "unknown turn key(s) 'txt'"),
        (None, ["--responder", "tool-steps:many"], "whole number"),
        (None, ["--script", "/nonexistent/script.json"], "cannot read script"),
    ],
)
def test_cli_bad_input_exits_2_with_a_message(
    tmp_path: Path, content: str | None, args: list[str], needle: str
) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    argv = [a.replace("{path}", str(path)) for a in args]
    proc = subprocess.run(
        [sys.executable, "-m", "chainreact.testing.cli", *argv], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert proc.stdout == ""


def test_cli_main_is_callable_in_process(tmp_path: Path) -> None:
    from chainreact.testing.cli import main

    assert main(["--script", str(tmp_path / "missing.json")]) == 2
