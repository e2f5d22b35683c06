"""`chainreact fake-llm`: serve a scripted FakeLLM from the command line until SIGINT/SIGTERM.

The first stdout line is the base URL (flushed), so a parent process can read it and connect.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from chainreact.errors import ChainreactError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="chainreact fake-llm",
        description="Serve a scripted OpenAI-compatible chat-completions endpoint (see docs/testing.md).",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--script", type=Path, help="JSON or YAML file: a list of turns, or {turns: [...], loop: bool}"
    )
    src.add_argument("--responder", help="built-in responder, e.g. tool-steps:3 (N tool calls, then a text)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 (default) picks a free port")
    p.add_argument("--latency", type=float, default=0.0, help="seconds to wait before every answer")
    p.add_argument("--model", default="fake-model", help="model name in responses and /v1/models")
    p.add_argument("--loop", action="store_true", help="repeat the script forever")
    return p


def load_script(path: Path) -> tuple[list[Any], bool]:
    """(turns, loop) from a JSON/YAML file; raises ChainreactError naming the file on any problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ChainreactError(f"cannot read script {path}: {e}") from e
    is_yaml = path.suffix.lower() in (".yaml", ".yml")
    try:
        if is_yaml:
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as e:
        raise ChainreactError(f"script {path} is not valid {'YAML' if is_yaml else 'JSON'}: {e}") from e
    if isinstance(data, list):
        return data, False
    if isinstance(data, dict) and isinstance(data.get("turns"), list):
        extra = set(data) - {"turns", "loop"}
        if extra:
            raise ChainreactError(f"script {path}: unknown top-level key(s) {sorted(extra)}; use turns, loop")
        return data["turns"], bool(data.get("loop", False))
    raise ChainreactError(f"script {path} must be a list of turns or an object with a 'turns' list")


def _responder(spec: str) -> Any:
    from .responders import tool_steps_responder

    name, _, arg = spec.partition(":")
    if name == "tool-steps":
        try:
            return tool_steps_responder(int(arg))
        except ValueError as e:
            raise ChainreactError(f"--responder tool-steps:N needs a whole number N >= 0, got {arg!r}") from e
    raise ChainreactError(f"unknown --responder {spec!r}; available: tool-steps:N")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .server import FakeLLM

    try:
        if args.responder:
            script: Any = _responder(args.responder)
            loop = False
        else:
            script, loop = load_script(args.script)
        # No request recording: a long benchmark run would otherwise grow memory without bound.
        srv = FakeLLM(
            script,
            host=args.host,
            port=args.port,
            latency=args.latency,
            model=args.model,
            loop=loop or args.loop,
            record=False,
        )
        srv.start()
    except ChainreactError as e:
        print(f"chainreact fake-llm: {e}", file=sys.stderr)
        return 2

    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(srv.url, flush=True)
        while not stop.wait(0.5):  # a timed wait keeps the main thread responsive to signals
            pass
    finally:
        srv.stop()
        for s, handler in old.items():
            signal.signal(s, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
