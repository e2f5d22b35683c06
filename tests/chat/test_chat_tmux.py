"""`chainreact chat` on a real terminal (tmux: send-keys in, capture-pane out): the prompt, an answer
that appears while the model is still writing it, a tool call on screen while the tool runs, readline
history (Up recalls the last message), `/reset`, Ctrl-C during a turn, `/quit`.

tmux runs on its own socket (-L) and the test kills that server, whatever happens."""

from __future__ import annotations

import json
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .helpers import SRC, USER_JSON, answer, chat_flow, orders_server

LONG = "Which order is it, and what went wrong with the delivery?"


class Pane:
    def __init__(self, socket: str):
        self.tmux = ["tmux", "-L", socket, "-f", "/dev/null"]

    def run(self, *args: str) -> str:
        return subprocess.run([*self.tmux, *args], capture_output=True, text=True, check=True,
                              timeout=30).stdout

    def text(self) -> str:
        return self.run("capture-pane", "-p", "-J", "-t", "chat", "-S", "-200")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "chat", *keys)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", "chat", "-l", text)

    def line(self, text: str) -> None:
        """`text` typed, then Enter: one line at the prompt."""
        self.type(text)
        self.keys("Enter")

    def wait(self, cond: Callable[[str], bool], what: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.text()
            if cond(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the pane shows:\n{screen}")
            time.sleep(0.05)


@pytest.fixture
def pane() -> Iterator[Pane]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (.ci/setup.d/tmux.sh installs it)")
    p = Pane(f"chainreact-test-{secrets.token_hex(4)}")
    try:
        yield p
    finally:
        subprocess.run([*p.tmux, "kill-server"], capture_output=True, timeout=30)


def test_chat_at_a_terminal(pane: Pane, fake_llm: Any, tmp_path: Path) -> None:
    with orders_server(hold=True) as orders:
        srv = fake_llm([
            answer({"response": LONG, "resolved": False}, chunks=12, chunk_delay=0.25),
            {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "42"}}]},
            answer({"response": "Order 42 is late; refund started.", "resolved": True}),
            answer({"response": "Hi again.", "resolved": False}),
            answer({"response": "Still here.", "resolved": False}),
            answer({"response": "This answer is too slow to wait for.", "resolved": False},
                   chunks=20, chunk_delay=1.0),
            answer({"response": "Back.", "resolved": False}),
        ])
        flow = tmp_path / "support.json"
        flow.write_text(json.dumps(chat_flow(srv.url, orders.url)))
        cmd = shlex.join(["env", f"PYTHONPATH={SRC}", sys.executable, "-m", "chainreact", "chat", str(flow),
                          "--session", "t1", "--state", f"sqlite:///{tmp_path}/state.db",
                          "--user", USER_JSON])
        # The shell prints the exit status and keeps the pane open so the test can read it.
        pane.run("new-session", "-d", "-s", "chat", "-x", "150", "-y", "50",
                 f"{cmd}; echo \"[exit $?]\"; sleep 120")
        pane.wait(lambda s: s.rstrip().endswith("you>"), "the prompt")
        assert "session 't1'" in pane.text()

        # Typing with a correction (readline editing), then the answer streams in.
        pane.type("I want a refunx")
        pane.keys("BSpace")
        pane.line("d")
        partial = pane.wait(lambda s: "support: Which" in s, "the answer's first words")
        assert LONG not in partial, "the whole answer arrived at once: it was not streamed"
        done = pane.wait(lambda s: LONG in s and s.rstrip().endswith("you>"), "the whole answer")
        assert "greet: Hello Ann!" in done
        assert '{"response"' not in done  # the text field is shown, not the raw JSON
        assert srv.chat_requests[0].messages[-1]["content"] == "Customer says: I want a refund"

        # The tool call is on screen while the tool is still running (the orders server holds it).
        pane.line("order 42")
        running = pane.wait(lambda s: '→ orderLookup({"orderId":"42"})' in s, "the tool call")
        assert "refund started" not in running
        orders.release.set()
        done = pane.wait(lambda s: "Anything else, Ann?" in s, "the answer after the tool")
        assert '← orderLookup: {"orderId":"42","status":"late"}' in done
        assert "support: Order 42 is late; refund started." in done

        # /reset: the next message starts at the greeting again, with an empty memory.
        pane.line("/reset")
        pane.wait(lambda s: "[session 't1' reset" in s, "the reset")
        pane.line("hi again")
        pane.wait(lambda s: "support: Hi again." in s, "the answer after the reset")
        assert [m["content"] for m in srv.chat_requests[3].messages[1:]] == ["Customer says: hi again"]
        assert pane.text().count("greet: Hello Ann!") == 2

        # Up recalls the last message from readline's history.
        pane.wait(lambda s: s.rstrip().endswith("you>"), "the prompt")
        pane.keys("Up")
        pane.wait(lambda s: s.rstrip().endswith("you> hi again"), "the recalled line")
        pane.keys("Enter")
        pane.wait(lambda s: "support: Still here." in s, "the answer to the recalled line")
        assert srv.chat_requests[4].messages[-1]["content"] == "Customer says: hi again"

        # Ctrl-C while an answer streams stops that turn (nothing of it is kept) and the chat goes on.
        pane.line("slow one")
        pane.wait(lambda s: "support: This" in s, "the slow answer's start")
        pane.keys("C-c")
        pane.wait(lambda s: "[turn cancelled]" in s and s.rstrip().endswith("you>"), "the cancelled turn")
        pane.line("after")
        pane.wait(lambda s: "support: Back." in s, "the answer after the cancelled turn")
        sent = [m["content"] for m in srv.chat_requests[6].messages[1:]]
        assert "Customer says: slow one" not in sent and sent[-1] == "Customer says: after"

        pane.line("/quit")
        pane.wait(lambda s: "[exit 0]" in s, "the exit")
