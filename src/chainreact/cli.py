"""The `chainreact` command line.

Only argparse and the standard library are imported at module level, so `chainreact --help` starts fast;
every command imports what it needs inside its function. Exit codes: 0 ok, 1 invalid document or failed
run, 2 usage error, 130 interrupted. Errors print `error: <message>` to stderr; `--debug` adds the
traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .jsonutil import deep_merge

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Bad command-line input (exit 2)."""


# --------------------------------------------------------------------------- --global parsing


def parse_global(item: str) -> tuple[list[str], Any]:
    """Parse one `--global` item: `KEY=VALUE` (a string) or `KEY:=JSON` (a JSON value).

    Dotted keys nest: `models.default.url=x` -> ["models", "default", "url"].
    """
    raw_json = False
    if ":=" in item and item.index(":=") + 1 == item.index("="):
        key, value_text = item.split(":=", 1)
        raw_json = True
    elif "=" in item:
        key, value_text = item.split("=", 1)
    else:
        raise UsageError(f"--global {item!r}: expected KEY=VALUE (a string) or KEY:=JSON (a JSON value)")
    parts = key.strip().split(".")
    if not key.strip() or any(not p for p in parts):
        raise UsageError(f"--global {item!r}: empty key or key part (dotted keys look like a.b.c)")
    value: Any = value_text
    if raw_json:
        try:
            value = json.loads(value_text)
        except json.JSONDecodeError as e:
            raise UsageError(f"--global {item!r}: the value after ':=' is not valid JSON ({e.msg})") from None
    return parts, value


def build_globals(items: Sequence[str] | None, files: Sequence[str] | None = None) -> dict[str, Any]:
    """The run's globals: `--globals FILE`s merged in order, then `--global` items on top."""
    result: dict[str, Any] = {}
    for f in files or ():
        result = deep_merge(result, _load_globals_file(f))
    for item in items or ():
        parts, value = parse_global(item)
        node = result
        for i, part in enumerate(parts[:-1]):
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                if nxt is not None:
                    raise UsageError(
                        f"--global {item!r}: {'.'.join(parts[: i + 1])} is already a value, not an object"
                    )
                nxt = node[part] = {}
            node = nxt
        node[parts[-1]] = value
    return result


def _load_globals_file(path: str) -> dict[str, Any]:
    from pathlib import Path

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"--globals {path}: cannot read ({e.strerror or e})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise UsageError(f"--globals {path}: neither JSON nor YAML ({e})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"--globals {path}: expected an object at the top level, got {type(data).__name__}")
    return data


# --------------------------------------------------------------------------- commands


def cmd_version(args: argparse.Namespace) -> int:
    from . import __version__

    print(f"chainreact {__version__} (Python {sys.version.split()[0]})")
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from .config import json_schema

    print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    import warnings

    from .config import UnknownFieldWarning, load_document
    from .errors import ConfigError

    status = EXIT_OK
    for path in args.config:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UnknownFieldWarning)
            try:
                doc = load_document(path)
            except ConfigError as e:
                status = EXIT_FAIL
                if e.errors:
                    where = e.source or path
                    for json_path, msg in e.errors:
                        print(f"{where}: {json_path}: {msg}", file=sys.stderr)
                else:
                    print(f"error: {e}", file=sys.stderr)
                continue
        for w in caught:
            if issubclass(w.category, UnknownFieldWarning):
                print(f"warning: {w.message}", file=sys.stderr)
        cfg = doc.config
        target = cfg.url or "the embedded local model"
        print(f"{path}: ok (agent {doc.name!r}, {len(cfg.tools)} tool(s), model endpoint: {target})")
    return status


def _read_prompt(prompt: str | None) -> str:
    if prompt is None or prompt == "-":
        if prompt is None and sys.stdin.isatty():
            raise UsageError("no prompt: give it as an argument, or '-' / a pipe to read it from stdin")
        return sys.stdin.read()
    return prompt


def cmd_run(args: argparse.Namespace) -> int:
    import asyncio

    prompt = _read_prompt(args.prompt)
    globals_ = build_globals(args.globals, args.globals_file)
    try:
        return asyncio.run(_run(args, prompt, globals_))
    finally:
        _stop_local_if_started()


def _stop_local_if_started() -> None:
    # Only if this run imported it: importing it here just to stop nothing would cost time.
    mod = sys.modules.get("chainreact.local.server")
    if mod is not None:
        mod.stop_local_sync()


async def _run(args: argparse.Namespace, prompt: str, globals_: dict[str, Any]) -> int:
    from .agent import Agent

    agent = Agent.from_config(args.config, globals=globals_)
    try:
        if args.jsonl:
            return await _run_jsonl(agent, prompt)
        if args.json:
            result = await agent.run(prompt)
            _write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
            return EXIT_OK
        if args.stream:
            return await _run_stream(agent, prompt)
        result = await agent.run(prompt)
        _write(result.content + ("" if result.content.endswith("\n") else "\n"))
        return EXIT_OK
    finally:
        await agent.aclose()


def _write(text: str, stream: Any = None) -> None:
    stream = stream or sys.stdout
    stream.write(text)
    stream.flush()


async def _run_jsonl(agent: Any, prompt: str) -> int:
    status = EXIT_OK
    async for event in agent.stream(prompt):
        _write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
        if event.type in ("error", "cancelled"):
            status = EXIT_FAIL
    return status


def _short(text: str, limit: int = 300) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


async def _run_stream(agent: Any, prompt: str) -> int:
    """Human streaming: answer text to stdout as it arrives; tool calls, results, reasoning and resilience
    notices to stderr, one line each, so `> file` captures only the answer."""
    err = sys.stderr
    status = EXIT_OK
    text_open = False  # whether stdout holds text without a trailing newline
    for_final = ""
    async for event in agent.stream(prompt):
        t = event.type
        if t == "text_delta":
            _write(event.text)
            for_final += event.text
            text_open = bool(event.text) and not event.text.endswith("\n")
            continue
        if text_open and t in ("tool_call", "tool_result", "retry", "failover", "breaker", "error"):
            _write("\n")
            text_open = False
        if t == "reasoning_delta":
            _write(event.text, err)
        elif t == "tool_call":
            for_final = ""  # text before a tool call was a preamble, not the answer
            _write(f"→ {event.call.name}({event.call.arguments})\n", err)
        elif t == "tool_result":
            mark = "✗" if event.is_error else "←"
            _write(f"{mark} {event.name}: {_short(event.content)}\n", err)
        elif t == "retry":
            _write(f"! retry {event.attempt} on {event.endpoint} in {event.delay:.1f}s: {event.error}\n", err)
        elif t == "failover":
            _write(f"! failover {event.from_endpoint} -> {event.to_endpoint}: {event.error}\n", err)
        elif t == "breaker":
            _write(f"! circuit breaker {event.endpoint}: {event.previous} -> {event.state}\n", err)
        elif t == "final":
            # If the answer was not streamed as deltas (e.g. a non-streamed tool step), print it now.
            if event.content and not for_final:
                _write(event.content)
                text_open = not event.content.endswith("\n")
        elif t == "error":
            _write(f"error: {event.error}\n", err)
            status = EXIT_FAIL
        elif t == "cancelled":
            _write("cancelled\n", err)
            status = EXIT_FAIL
    if text_open:
        _write("\n")
    return status


def cmd_local_model(args: argparse.Namespace) -> int:
    from .local import LocalServer, find_model_path

    server = LocalServer(model_path=find_model_path(), host=args.host, port=args.port)
    if args.ctx:
        server.n_ctx = args.ctx
    if args.threads:
        server.n_threads = args.threads

    def ready(s: LocalServer) -> None:
        print(f"embedded model {s.model_name} ({s.model_path.name}) ready at {s.base_url}", file=sys.stderr)
        print("use it from other processes with:", file=sys.stderr)
        print(f"  export CHAINREACT_LOCAL_URL={s.base_url}", file=sys.stderr)
        print("stop with Ctrl-C", file=sys.stderr)
        _write(s.base_url + "\n")  # the one stdout line, for scripts

    return server.serve_forever(on_ready=ready)


def cmd_complete(args: argparse.Namespace) -> int:
    from .llm.cli import complete_main

    return int(complete_main(args))


def cmd_fake_llm(args: argparse.Namespace) -> int:
    from .testing.cli import main as fake_main

    return int(fake_main(list(args.rest)))


# Commands whose arguments belong to another parser: everything after the command name is passed on
# untouched (argparse.REMAINDER alone would still reject a leading "--option").
_PASSTHROUGH = {"fake-llm"}


# --------------------------------------------------------------------------- parser


def _add_globals(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--global", dest="globals", action="append", default=[], metavar="KEY=VALUE",
        help="a global for templates; dotted keys nest (a.b=x). KEY:=JSON sets a JSON value. Repeatable.",
    )
    p.add_argument(
        "--globals", dest="globals_file", action="append", default=[], metavar="FILE",
        help="JSON/YAML file of globals (merged under --global items). Repeatable.",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chainreact", description="Declarative ReAct agents: run, validate and serve agent documents."
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        p.set_defaults(func=func)
        return p

    p = add("run", cmd_run, "run an agent document on a prompt")
    p.add_argument("config", help="agent document (JSON or YAML)")
    p.add_argument("prompt", nargs="?", help="the user input; '-' or omitted with a pipe = read stdin")
    p.add_argument("--stream", action="store_true", help="print text as it arrives, tool activity on stderr")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print one JSON object for the run")
    fmt.add_argument("--jsonl", action="store_true", help="print one JSON object per event")
    _add_globals(p)

    p = add("validate", cmd_validate, "check agent documents; exit 1 listing each error's JSON path")
    p.add_argument("config", nargs="+", help="agent document(s)")

    add("schema", cmd_schema, "print the JSON Schema of agent documents (for editors)")

    p = add("complete", cmd_complete, "one model call (no tools) with an agent document's endpoint")
    p.add_argument("config")
    p.add_argument("prompt", nargs="?")
    p.add_argument("--stream", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--global", dest="globals", action="append", default=[], metavar="KEY=VALUE")

    p = add("local-model", cmd_local_model, "run the embedded model server in the foreground")
    p.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    p.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    p.add_argument("--ctx", type=int, default=0, help="context size in tokens (default 4096)")
    p.add_argument(
        "--threads", type=int, default=0,
        help="CPU threads (default: $CHAINREACT_LOCAL_THREADS, else a quarter of the CPUs, 1 to 4)",
    )

    p = add("fake-llm", cmd_fake_llm, "run the scripted fake OpenAI-compatible server (for tests)")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="arguments of the fake server (see --help)")

    add("version", cmd_version, "print the version")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    i = 0
    while i < len(argv) and argv[i] == "--debug":
        i += 1
    if i < len(argv) and argv[i] in _PASSTHROUGH:
        args = argparse.Namespace(command=argv[i], func=cmd_fake_llm, rest=argv[i + 1:], debug=i > 0)
    else:
        args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    debug = bool(getattr(args, "debug", False)) or os.environ.get("CHAINREACT_DEBUG") == "1"
    args.debug = debug
    try:
        return int(args.func(args))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `chainreact run ... | head`: the reader went away; not an error of ours.
        # Point stdout at /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as e:
        if debug:
            raise
        from .errors import ChainreactError

        name = "" if isinstance(e, ChainreactError) else f"{type(e).__name__}: "
        print(f"error: {name}{e}", file=sys.stderr)
        if not isinstance(e, ChainreactError):
            print("(run with --debug for the traceback)", file=sys.stderr)
        return EXIT_FAIL

