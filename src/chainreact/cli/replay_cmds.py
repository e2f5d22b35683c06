"""`chainreact replay CASSETTE` and `chainreact runs export RUN_ID`: recorded runs as offline tests.

    chainreact runs export RUN_ID --state URL --out run.json     # the run's cassette (keys redacted)
    chainreact replay run.json [--doc agent.json] [--live-tools] [--json]

`replay` exits 0 when the run follows the recording, 1 with the differences (which step, which tool,
expected vs got) when it does not; `--json` prints `{"ok", "answer", "steps", "diffs": [...]}`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import EXIT_FAIL, EXIT_OK, AddCommand, UsageError, add_globals, build_globals, write


def register(add: AddCommand) -> None:
    p = add("replay", cmd_replay,
            "re-run a recorded run (a cassette) offline and compare it with the recording")
    p.add_argument("cassette", metavar="CASSETTE", help="a cassette file from `chainreact runs export`")
    p.add_argument("--doc", default=None, metavar="DOCUMENT",
                   help="the agent (chain, flow) document to replay (default: the one the cassette names)")
    p.add_argument("--load", action="append", default=[], metavar="CHAIN_FILE_OR_DIR",
                   help="more rule chains to load (chain cassettes, rulechain tools); repeatable")
    p.add_argument("--live-tools", action="store_true",
                   help="run the tools for real and compare their results with the recorded ones "
                        "(default: tool results come from the cassette)")
    p.add_argument("--ignore", default="", metavar="PARTS",
                   help="request parts not compared: system (a prompt that changes by itself, e.g. with the "
                        "time), tools; comma-separated")
    p.add_argument("--json", action="store_true", help='print {"ok", "answer", "steps", "diffs": [...]}')
    add_globals(p)


def add_export(sub: Any) -> None:
    """`runs export` (registered by state_cmds beside `runs list|show|resume`)."""
    q = sub.add_parser("export", help="write a run's cassette: its input, model calls and tool calls",
                       description="Write a recorded run as a cassette (JSON) for `chainreact replay`: the "
                                   "document's identity, the input, every model request and response and "
                                   "every tool call with its result. Keys and secrets are redacted.")
    q.add_argument("run_id", metavar="RUN_ID", help="a run id (a flow session: flow:<flow id>:<session>)")
    q.add_argument("--state", dest="url", default=None, metavar="URL", help="store URL")
    q.add_argument("-o", "--out", default=None, metavar="FILE", help="write it here (default: stdout)")
    q.add_argument("--turn", type=int, default=None, metavar="N",
                   help="a flow session's turn, from 1 (default: the last one)")
    q.add_argument("--redact", action="append", default=[], metavar="TEXT",
                   help="one more secret to replace by [redacted] wherever it appears (repeatable)")


def cmd_runs_export(args: argparse.Namespace) -> int:
    import asyncio

    from ..replay import export_run
    from ..replay.cassette import dumps, save
    from ..state import open_store

    if args.turn is not None and args.turn < 1:
        raise UsageError("--turn: turns are counted from 1")

    async def run() -> dict[str, Any]:
        async with await open_store(args.url) as store:
            return await export_run(store, args.run_id, turn=args.turn, redact_values=tuple(args.redact))

    cassette = asyncio.run(run())
    if args.out:
        path = save(cassette, args.out)
        steps = sum(len(a["steps"]) for a in cassette["agents"])
        write(f"wrote {path} ({cassette['kind']} run {args.run_id}: {steps} model call(s))\n", sys.stderr)
    else:
        write(dumps(cassette))
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    from ..replay import replay_sync

    ignore = tuple(p.strip() for p in args.ignore.split(",") if p.strip())
    globals_ = build_globals(args.globals, args.globals_file)
    result = replay_sync(args.cassette, live_tools=args.live_tools, ignore=ignore, load=args.load,
                         globals=globals_, **_target(args.cassette, args.doc))
    if args.json:
        write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
    else:
        write(result.report(), sys.stdout if result.ok else sys.stderr)
    return EXIT_OK if result.ok else EXIT_FAIL


def _target(cassette: str, doc: str | None) -> dict[str, Any]:
    """--doc as the target of the cassette's kind."""
    if not doc:
        return {}
    from ..replay import load_cassette

    kind = load_cassette(cassette)["kind"]
    return {{"agent": "agent", "chain": "chain", "flow": "flow"}[kind]: doc}


__all__ = ["add_export", "cmd_replay", "cmd_runs_export", "register"]
