"""Out of file descriptors: the model client says so (and what to change), and its default connection
cap keeps a process with a low `ulimit -n` from getting there. Each case runs in a subprocess whose
RLIMIT_NOFILE is lowered to 64; the scripted server runs in the test process (its sockets are not counted
against the child's limit)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from chainreact.testing import FakeLLM

CHILD = textwrap.dedent('''
    import asyncio, json, resource, sys
    from chainreact.config import AgentConfig
    from chainreact.llm import ModelClient
    from chainreact.types import Message

    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))

    async def main(url, cap, n):
        client = ModelClient.from_config(AgentConfig(url=url, model="m", maxRetries=-1, maxConnections=cap))
        async def one(i):
            try:
                return (await client.complete([Message("user", str(i))])).message.text
            except Exception as e:
                return f"{type(e).__name__}: {e}"
        out = await asyncio.gather(*(one(i) for i in range(n)))
        await client.aclose()
        print(json.dumps(out))

    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
''')


def _run(url: str, cap: int, n: int) -> list[str]:
    cp = subprocess.run([sys.executable, "-c", CHILD, url, str(cap), str(n)], capture_output=True, text=True,
                        timeout=120)
    assert cp.returncode == 0, cp.stderr
    answers: list[str] = json.loads(cp.stdout.strip().splitlines()[-1])
    return answers


def test_running_out_of_file_descriptors_is_named_with_what_to_change() -> None:
    # maxConnections 500 under a limit of 64 descriptors: the sockets run out.
    with FakeLLM([{"text": "ok", "delay": 0.5}], loop=True, record=False, backlog=512) as srv:
        answers = _run(srv.url, 500, 150)
    failed = [a for a in answers if a != "ok"]
    assert failed, "expected some requests to run out of file descriptors"
    for a in failed:
        assert a.startswith("ModelError: ") and "too many open files" in a, a
        assert "ulimit -n, is 64" in a and "raise ulimit -n or lower maxConnections" in a, a
        assert "now 500" in a and "All connection attempts failed" not in a, a


def test_the_default_cap_keeps_a_low_ulimit_process_from_running_out() -> None:
    # The same 150 requests at once with the default cap (half of 64 here): every one answered.
    with FakeLLM([{"text": "ok", "delay": 0.2}], loop=True, record=False) as srv:
        answers = _run(srv.url, 0, 150)
        assert len({r.peer for r in srv.chat_requests}) <= 32
    assert answers == ["ok"] * 150
