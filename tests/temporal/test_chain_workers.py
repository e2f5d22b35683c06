"""Durable rule chains served by `chainreact worker CHAIN.json` processes on the real dev server: the CLI's
`chain run --temporal --json` prints what an in-process run prints, and a worker killed with SIGKILL in the
middle of a chain (inside its agent node) is taken over by another without repeating completed work."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from chainreact.chains import RuleMsg
from chainreact.durable import DevServer, DurableChain, DurableOptions
from chainreact.state import open_store
from chainreact.testing import FakeLLM

from .test_durable_chain import single_node_chain
from .test_workers import TOOLS, steps_responder


def write_chain(tmp: Path, url: str) -> Path:
    """fork -> (ai/agent with a python tool | exprTransform) -> join (merged)."""
    (tmp / "durable_tools.py").write_text(TOOLS)
    agent = {"url": url, "model": "m", "systemPrompt": "Record the steps.", "maxRetries": 2,
             "tools": [{"type": "python", "name": "record", "config": {"function": "durable_tools:record"}}]}
    nodes = [
        {"id": "s1", "type": "fork"},
        {"id": "rec", "type": "ai/agent", "configuration": agent},
        {"id": "calc", "type": "exprTransform", "configuration": {"mapping": {"double": "msg.n * 2"}}},
        {"id": "j1", "type": "join", "configuration": {"mergeToMap": True, "timeout": 120}},
    ]
    conns = [("s1", "rec"), ("s1", "calc"), ("rec", "j1"), ("calc", "j1")]
    doc = {"ruleChain": {"id": "recorder_chain", "name": "recorder chain"},
           "metadata": {"nodes": nodes, "connections": [{"fromId": a, "toId": b, "type": "Success"}
                                                        for a, b in conns]}}
    path = tmp / "chain.json"
    path.write_text(json.dumps(doc))
    return path


def _env(tmp: Path) -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    path = os.pathsep.join(p for p in (src, str(tmp), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "DURABLE_TOOL_LOG": str(tmp / "tool.log")}


def _tool_lines(tmp: Path) -> list[tuple[int, int]]:
    path = tmp / "tool.log"
    if not path.exists():
        return []
    return [(int(a), int(b)) for a, b in (line.split() for line in path.read_text().splitlines())]


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chainreact", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=90)


def _strip(out: dict[str, Any]) -> dict[str, Any]:
    for end in out["ends"]:
        end["msg"].pop("id")  # each CLI invocation makes its own message
        end["msg"].pop("ts")
    return out


def test_cli_chain_run_temporal_prints_the_same_json(temporal_server: DevServer, task_queue: str,
                                                     tmp_path: Path, worker_processes: Any) -> None:
    env = _env(tmp_path)
    with FakeLLM(steps_responder(1)) as llm:
        chain = write_chain(tmp_path, llm.url)
        worker_processes([str(chain), "--temporal", temporal_server.address, "--task-queue", task_queue],
                         env=env)
        common = ("chain", "run", str(chain), "--data", '{"n": 21}', "--meta", "user=ana", "--json")
        local = _cli(*common, env=env, cwd=tmp_path)
        durable = _cli(*common, "--temporal", temporal_server.address, "--task-queue", task_queue, env=env,
                       cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    assert durable.returncode == 0, durable.stderr
    a, b = _strip(json.loads(local.stdout)), _strip(json.loads(durable.stdout))
    assert a == b
    assert json.loads(b["ends"][0]["msg"]["data"]) == {"double": 42, "rec": "recorded 1 steps"}
    assert len({pid for _, pid in _tool_lines(tmp_path)}) == 2  # in this process, then in the worker


async def test_worker_killed_inside_the_chain(temporal_server: DevServer, temporal_client: Any,
                                              task_queue: str, tmp_path: Path, worker_processes: Any) -> None:
    env = _env(tmp_path)
    args = ["--temporal", temporal_server.address, "--task-queue", task_queue]
    # The agent node's second model call is slow: the worker dies while it is in flight, after the
    # exprTransform branch and the agent's first tool step completed.
    with FakeLLM(steps_responder(2, slow_step=1, delay=3.0)) as llm:
        chain = write_chain(tmp_path, llm.url)
        first = worker_processes([str(chain), *args], name="first", env=env)
        durable = DurableChain("recorder_chain", client=temporal_client, task_queue=task_queue,
                               options=DurableOptions(heartbeat_timeout=4.0))
        run = await durable.start(RuleMsg(data='{"n": 21}'))
        deadline = time.monotonic() + 30
        while len(llm.chat_requests) < 2:
            assert time.monotonic() < deadline, "the chain did not reach the agent's second model call"
            await asyncio.sleep(0.02)
        assert [n for n, _ in _tool_lines(tmp_path)] == [0]
        first.kill9()
        second = worker_processes([str(chain), *args], name="second", env=env)
        ends = await asyncio.wait_for(run.result(), 90)
        requests = [sum(1 for m in r.messages if m.get("role") == "tool") for r in llm.chat_requests]
    assert [(e.relation, e.node_id) for e in ends] == [("Success", "j1")]
    assert ends[0].msg.json_value() == {"double": 42, "rec": "recorded 2 steps"}
    lines = _tool_lines(tmp_path)
    assert [n for n, _ in lines] == [0, 1]  # every tool call ran exactly once
    assert lines[0][1] == first.proc.pid and lines[1][1] == second.proc.pid
    # Completed model calls ran once; only the one in flight when the worker died ran again (at least
    # once more: on a loaded machine a late heartbeat may retry it again).
    counts = Counter(requests)
    assert counts[0] == 1 and counts[2] == 1 and counts[1] >= 2, counts
    assert (await run.status())["status"] == "done"


async def test_worker_killed_while_a_node_streams_live(temporal_server: DevServer, temporal_client: Any,
                                                      task_queue: str, tmp_path: Path,
                                                      worker_processes: Any) -> None:
    """The reader has shown part of an agent node's stream when the worker dies; the node runs again on
    another worker and streams again: the reader gives its text once (the repeated frames skipped)."""
    state = f"sqlite:///{tmp_path / 'state.db'}"
    args = ["--temporal", temporal_server.address, "--task-queue", task_queue, "--state", state]
    text = " ".join(f"word{i}" for i in range(20))
    turn = {"text": text, "chunks": 20, "chunk_delay": 0.3}  # 6 s: the worker dies after 4 chunks
    with FakeLLM([turn, turn]) as llm:
        doc = tmp_path / "streamer.json"
        doc.write_text(json.dumps(single_node_chain("streamer", {
            "type": "ai/agent", "configuration": {"url": llm.url, "model": "m", "maxRetries": -1}})))
        first = worker_processes([str(doc), *args], name="first")
        durable = DurableChain("streamer", client=temporal_client, task_queue=task_queue,
                               options=DurableOptions(heartbeat_timeout=3.0))
        msg = RuleMsg(data="hi", data_type="TEXT", metadata={"stream": "true"})
        run = await durable.start(msg, stream=True)
        frames: list[RuleMsg] = []
        async with await open_store(state) as store:
            async for frame in run.stream(store):
                frames.append(frame)
                if len(frames) == 4:  # shown to the reader: now the worker dies in the middle
                    first.kill9()
                    worker_processes([str(doc), *args], name="second")
            ends = await run.result()
        n_requests = len(llm.chat_requests)
    chunks = [f.data for f in frames if f.metadata.get("chunk") == "true"]
    assert "".join(chunks) == text  # once: the retried attempt's first four frames were not given again
    assert [f.metadata.get("stream_completed") for f in frames].count("true") == 1
    assert n_requests == 2 and [(e.relation, e.msg.data) for e in ends] == [("Success", text)]


def test_worker_arguments_are_read_as_serve_reads_them(tmp_path: Path) -> None:
    from chainreact.cli.temporal_chains import load_documents

    chain = write_chain(tmp_path, "http://127.0.0.1:9")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "other.json").write_text(chain.read_text().replace("recorder_chain", "other_chain"))
    agent = {"id": "a", "type": "ai/agent", "name": "a",
             "configuration": {"url": "http://127.0.0.1:9", "model": "m"}}
    (folder / "agent.json").write_text(json.dumps(agent))  # an agent in a folder: an agent, not a chain
    (folder / "package.json").write_text('{"name": "x"}')  # no document of ours: skipped
    docs = load_documents([str(chain), str(folder)], {}, [], None)
    assert sorted(docs.chains) == ["other_chain", "recorder_chain"]
    assert [a.name for a in docs.agents] == ["a"] and docs.flows == []
