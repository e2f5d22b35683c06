"""The benchmark's scripted OpenAI-compatible server, run as its own process by the suite.

    python bench/server.py --steps 3 [--latency 0.1] [--chunk-delay 0.005]

Prints the base URL on the first stdout line; on SIGTERM/SIGINT it stops and prints one JSON line with the
chat requests it answered (total, streamed, non-streamed), which the suite checks against what the runner
says it did. Own process on purpose: the server's CPU must not land in the measured client process.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any

from chainreact.testing import FakeLLM, tool_steps_responder


class CountingResponder:
    """`tool_steps_responder` plus request counters (read after the server thread stops)."""

    def __init__(self, steps: int, chunk_delay: float) -> None:
        self._inner = tool_steps_responder(steps)
        self._chunk_delay = chunk_delay
        self._lock = threading.Lock()
        self.streamed = 0
        self.plain = 0
        self.tool_messages_max = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        streaming = body.get("stream") is True
        with self._lock:
            if streaming:
                self.streamed += 1
            else:
                self.plain += 1
        turn = self._inner(body)
        if streaming and self._chunk_delay and "text" in turn:
            # Only the text answer is paced: time-to-first-text is measured on it.
            turn = {**turn, "chunk_delay": self._chunk_delay}
        return turn


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=3, help="tool calls before the final answer")
    p.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    p.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between streamed text chunks")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args(argv)

    responder = CountingResponder(args.steps, args.chunk_delay)
    # record=False: a long run must not keep every request in memory.
    srv = FakeLLM(responder, port=args.port, latency=args.latency, record=False, backlog=4096)
    srv.start()
    stop = threading.Event()
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, lambda *_: stop.set())
    print(srv.url, flush=True)
    while not stop.wait(0.2):  # timed wait: the main thread stays responsive to signals
        pass
    srv.stop()
    counts = {"requests": responder.streamed + responder.plain, "streamed": responder.streamed,
              "non_streamed": responder.plain}
    print(json.dumps(counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
