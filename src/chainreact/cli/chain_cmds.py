"""`chainreact chain run|validate`: send one message through a rule chain, or check chain files."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from .common import EXIT_FAIL, EXIT_OK, AddCommand, UsageError, build_globals, write


def register(add: AddCommand) -> None:
    p = add("chain", cmd_chain, "run or validate RuleGo rule chains")
    sub = p.add_subparsers(dest="chain_command", metavar="SUBCOMMAND")

    r = sub.add_parser("run", help="send one message to a chain and print the ended branches",
                       description="Send one message to a chain (by id from --load, or a chain file) and "
                                   "print every ended branch.")
    r.add_argument("chain", metavar="CHAIN_ID_OR_FILE", help="the chain to send to: an id or a chain file")
    r.add_argument("--load", action="append", default=[], metavar="FILE_OR_DIR",
                   help="load chain files (or every chain file of a folder) into the pool (repeatable)")
    r.add_argument("--type", default="", help="message type (msgType)")
    r.add_argument("--data-type", default="JSON", choices=["JSON", "TEXT", "BINARY"], help="dataType")
    r.add_argument("--data", default="", metavar="TEXT|@FILE", help="message data (@file reads a file)")
    r.add_argument("--meta", action="append", default=[], metavar="K=V", help="metadata entry (repeatable)")
    r.add_argument("--global", dest="globals_", action="append", default=[], metavar="K=V",
                   help="a ${global.K} property (repeatable; K:=JSON for a JSON value)")
    r.add_argument("--stream", action="store_true", help="ask stream-capable nodes to stream (metadata "
                                                          "stream=true); frames are printed as they come")
    r.add_argument("--timeout", type=float, default=None, help="message timeout in seconds")
    r.add_argument("--debug-nodes", action="store_true", help="node debug events for every node")
    from .temporal_cmds import add_run_options

    add_run_options(r)  # --temporal ADDRESS --task-queue Q: a worker runs it (cli/temporal_chains.py)
    r.add_argument("--state", default=None, metavar="URL",
                   help="with --temporal: the workers' state store, where --stream/--jsonl read the frames "
                        "as the workers log them (without it they come at the chain's end)")
    fmt = r.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help='print {"ends": [...]} (a stable form for scripts)')
    fmt.add_argument("--jsonl", action="store_true", help="print stream frames, debug events and ends as "
                                                          "JSON lines as they happen")

    v = sub.add_parser("validate", help="check chain files (every problem, with file and JSON path)")
    v.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")


def cmd_chain(args: argparse.Namespace) -> int:
    if getattr(args, "chain_command", None) == "run":
        return cmd_chain_run(args)
    if getattr(args, "chain_command", None) == "validate":
        return cmd_chain_validate(args)
    raise UsageError("chain: give a subcommand: run or validate")


def _meta(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise UsageError(f"--meta {item!r}: expected KEY=VALUE")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def _data(value: str) -> str:
    if value.startswith("@"):
        try:
            with open(value[1:], encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise UsageError(f"--data {value}: cannot read the file: {e}") from e
    return value


def _line(obj: dict[str, Any]) -> None:
    write(json.dumps(obj, ensure_ascii=False) + "\n")


def _load_beside(engine: Any, path: str) -> None:
    """The other rule chains in the folder of a chain file run without --load, as `serve` of the folder
    would load them: its `rulechain` tools and sub-chains name them by id. One that does not load is left
    out (this run is not about it; a tool that needs it says it is not loaded)."""
    from ..chains import ChainLoadError

    # The folder itself, not below it (load_path): a chain file in a home directory must not make a run
    # read it all. Every chain that loads is loaded; the errors of the rest are left out.
    try:
        engine.load_path(Path(path).resolve().parent)
    except ChainLoadError:
        pass


def cmd_chain_run(args: argparse.Namespace) -> int:
    from ..chains import ChainLoadError, RuleEngine, RuleMsg

    meta = _meta(args.meta)
    if args.stream:
        meta["stream"] = "true"
    msg = RuleMsg(type=args.type, data=_data(args.data), metadata=meta, data_type=args.data_type)
    events: list[Any] = []
    engine = RuleEngine(properties=build_globals(args.globals_), debug=args.debug_nodes)
    try:
        for path in args.load:
            engine.load_path(path)
        target = args.chain
        if os.path.isfile(target):
            if not args.load and not getattr(args, "temporal", None):
                _load_beside(engine, target)
            target = engine.load(target).id
        elif engine.get(target) is None and not getattr(args, "temporal", None):
            raise ChainLoadError(f"chain {target!r} is neither a loaded chain id nor a file "
                                 f"(loaded: {', '.join(sorted(engine.chains)) or 'none'})")
    except ChainLoadError as e:
        write(f"error: {e}\n", sys.stderr)
        return EXIT_FAIL

    def on_stream(m: RuleMsg) -> None:
        if args.jsonl:
            _line({"event": "stream", "msg": m.to_dict()})
        elif not args.json:
            write(m.data)

    def on_debug(ev: Any) -> None:
        if args.jsonl:
            _line(ev.to_dict())
        elif not args.json:
            err = f" error={ev.error}" if ev.error else ""
            write(f"[{ev.chain_id}/{ev.node_id}] {ev.flow} {ev.relation}{err} {ev.msg.data}\n", sys.stderr)
        else:
            events.append(ev)

    def on_end(e: Any) -> None:
        if args.jsonl:
            _line({"event": "end", **e.to_dict()})

    if getattr(args, "temporal", None):  # the same output, from a durable run's result
        from ..durable import DurableRunError
        from .temporal_chains import run_chain_durable

        try:
            ends = run_chain_durable(args, target, msg, on_stream)
        except DurableRunError as e:
            write(f"error: {e}\n", sys.stderr)
            return EXIT_FAIL
        for end in ends:
            on_end(end)
    else:
        ends = engine.tell_and_wait(target, msg, on_stream=on_stream, on_debug=on_debug, on_end=on_end,
                                    timeout=args.timeout)
    if args.json:
        _line({"ends": [e.to_dict() for e in ends]})
    elif not args.jsonl:
        if args.stream:
            write("\n")
        for end in ends:
            err = f" (error: {end.error})" if end.error else ""
            write(f"{end.relation or '(none)'}{err}: {end.msg.data}\n")
    return _exit_status(ends)


def _exit_status(ends: list[Any]) -> int:
    """1 when a branch ended in Failure (an error no relation of the chain handled), said on stderr; else 0.
    Every form prints the ends first (docs/cli.md, exit codes)."""
    failed = [e for e in ends if e.relation == "Failure" or e.error]
    if not failed:
        return EXIT_OK
    first = failed[0]
    where = f" at node {first.node_id!r}" if getattr(first, "node_id", "") else ""
    write(f"error: {len(failed)} of {len(ends)} branch(es) ended in Failure; the first{where}: "
          f"{first.error or 'no error text'}\n", sys.stderr)
    return EXIT_FAIL


def cmd_chain_validate(args: argparse.Namespace) -> int:
    from ..chains import ChainLoadError, RuleEngine

    status = EXIT_OK
    for path in args.paths:
        try:
            chains = RuleEngine().load_path(path)
        except ChainLoadError as e:
            write(f"error: {e}\n", sys.stderr)
            status = EXIT_FAIL
            continue
        for c in chains:
            write(f"ok: {c.source}: rule chain {c.id!r} ({len(c.nodes)} nodes)\n")
    return status
