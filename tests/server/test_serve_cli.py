"""`chainreact serve` as a process: serves what it loaded, refuses nothing to serve, stops on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.runs_helpers import free_port, start_serve

_port = free_port


@pytest.mark.parametrize("stack", [[], ["--loop", "asyncio", "--http", "h11"]], ids=["auto", "asyncio-h11"])
def test_serve_process_answers_and_stops_on_sigterm(fake_llm: Any, tmp_path: Path, stack: list[str]) -> None:
    # auto: uvloop and httptools (the `server` extra installs them); asyncio + h11: serving without them
    llm = fake_llm([{"text": "served"}])
    doc = {"id": "bot", "configuration": {"url": "${global.url}", "key": "k", "model": "fake-model"}}
    (tmp_path / "bot.json").write_text(json.dumps(doc))
    (tmp_path / "package.json").write_text('{"name": "not-an-agent"}')  # skipped, not an error
    port = _port()
    proc = start_serve([str(tmp_path), "--global", f"url={llm.url}", *stack], port)
    try:
        r = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                       json={"model": "bot", "messages": [{"role": "user", "content": "hi"}]}, timeout=30)
        assert r.json()["choices"][0]["message"]["content"] == "served"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    # a graceful stop (nothing in flight) is a normal exit
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "serving agent 'bot'" in err


def test_serve_with_nothing_to_serve_fails(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "x"}')
    proc = subprocess.run([sys.executable, "-m", "chainreact", "serve", str(tmp_path), "--port", "1"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "nothing to serve" in proc.stderr


def test_hash_key_prints_the_digest_a_keys_file_holds() -> None:
    proc = subprocess.run([sys.executable, "-m", "chainreact", "serve", "--hash-key", "test"],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


def test_runs_pruning_flags_refuse_bad_values(tmp_path: Path) -> None:
    for flag, value, why in (("--runs-ttl", "0", "seconds > 0"), ("--runs-max", "-1", "whole number")):
        proc = subprocess.run([sys.executable, "-m", "chainreact", "serve", str(tmp_path), flag, value],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and flag in proc.stderr and why in proc.stderr, proc.stderr


def test_a_loop_or_parser_that_is_not_installed_is_refused(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    for module in ("uvloop", "httptools"):
        (hidden / f"{module}.py").write_text("raise ImportError('not here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden), os.environ.get("PYTHONPATH", "")])}
    for flag, value in (("--loop", "uvloop"), ("--http", "httptools")):
        proc = subprocess.run([sys.executable, "-m", "chainreact", "serve", str(tmp_path), flag, value],
                              capture_output=True, text=True, timeout=60, env=env)
        assert proc.returncode == 2, proc.stderr
        assert f"{flag} {value}: {value} is not installed" in proc.stderr


def test_the_serving_process_freezes_what_it_loaded_and_collects_young_objects_less_often() -> None:
    code = ("import gc\nfrom chainreact.cli.serve_cmds import tune_gc\n"
            "before = gc.get_freeze_count()\ntune_gc()\n"
            "print(before, gc.get_freeze_count() > 1000, gc.get_threshold()[0])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "True", "10000"]
