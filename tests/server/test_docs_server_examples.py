"""docs/server.md's examples run as a newcomer runs them (issue 25): the block that creates the agent `helper`
and the chain `echo` is run by bash in an empty folder, `chainreact serve agents/ chains/` serves them, and
the page's curl commands (the real curl, only the port changed) answer what the page prints after them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from chainreact.testing import FakeLLM
from tests.server.test_serve_start import ROOT, Serving, _env

DOC = ROOT / "docs" / "server.md"


def _blocks() -> list[tuple[str, str]]:
    """(language, text) of every fenced block of the page, in order."""
    return re.findall(r"^```(\w*)\n(.*?)^```", DOC.read_text(), flags=re.M | re.S)


def _after(command: str) -> tuple[str, list[Any]]:
    """The bash block holding `command`, and the JSON values of the json block that follows it."""
    blocks = _blocks()
    i = next(i for i, (lang, text) in enumerate(blocks) if lang == "bash" and command in text)
    lang, printed = blocks[i + 1]
    assert lang == "json", f"no json block after {command!r}"
    return blocks[i][1], _values(printed.replace("{...}", "{}"))


def _values(text: str) -> list[Any]:
    decoder, out, pos = json.JSONDecoder(), [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return out
        value, pos = decoder.raw_decode(text, pos)
        out.append(value)


def _curl(block: str, port: int, cwd: Path) -> list[Any]:
    r = subprocess.run(["bash", "-e", "-c", block.replace("127.0.0.1:9090", f"127.0.0.1:{port}")],
                       capture_output=True, text=True, cwd=cwd, timeout=60)
    assert r.returncode == 0, r.stderr
    return _values(r.stdout)


@pytest.mark.skipif(shutil.which("curl") is None, reason="the page's commands need curl")
def test_the_pages_examples_answer_as_printed(tmp_path: Path) -> None:
    setup = next(text for lang, text in _blocks() if lang == "bash" and "cat > agents/helper.json" in text)
    *files, serve = setup.strip().splitlines()
    assert serve == "chainreact serve agents/ chains/"
    subprocess.run(["bash", "-e", "-c", "\n".join(files)], cwd=tmp_path, check=True, timeout=30)
    with FakeLLM([{"text": "Paris."}]) as llm:
        srv = Serving([str(tmp_path / "agents"), str(tmp_path / "chains"), "--no-watch"],
                      _env(OPENAI_BASE_URL=llm.url, OPENAI_API_KEY="sk-docs"))
        try:
            port = int(srv.until(r"^listening on http://127\.0\.0\.1:(\d+)/").group(1))
            block, printed = _after("curl -s http://127.0.0.1:9090/v1/models")
            assert _curl(block, port, tmp_path) == printed
            block, printed = _after("curl -s http://127.0.0.1:9090/v1/chat/completions")
            [got] = _curl(block, port, tmp_path)
            assert got["model"] == printed[0]["model"] == "helper"
            assert got["choices"] == printed[0]["choices"]
            block, printed = _after("/api/v1/rules/echo/execute/TEST?room=kitchen")
            got = _curl(block, port, tmp_path)
            for value in (got[1], printed[1]):  # the time a message was made is the run's own
                value["ends"][0]["msg"].pop("ts")
            assert got == printed
            block, printed = _after("curl -s 'http://127.0.0.1:9090/api/v1/rules?size=1'")
            [rules] = _curl(block, port, tmp_path)
            assert rules["total"] == 1
            assert rules["items"][0]["ruleChain"] == printed[0]["items"][0]["ruleChain"]
        finally:
            srv.stop()
    assert [r.headers.get("authorization") for r in llm.chat_requests] == ["Bearer sk-docs"]
