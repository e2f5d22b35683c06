"""State commands: `state migrate|info [URL]` and `runs list|show RUN_ID` over the state store.

The URL argument is optional everywhere: without it, $CHAINREACT_STATE, else ./.chainreact/state.db.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from .common import EXIT_OK, AddCommand, UsageError, add_globals, write


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def cmd_state(args: argparse.Namespace) -> int:
    from ..state import open_store

    async def run() -> int:
        if args.action == "migrate":
            async with await open_store(args.url, migrate=False, create=True) as store:
                before = await store.schema_version()
                applied = await store.migrate()
                if args.json:
                    write(_dump({"url": store.url.masked, "from": before, "applied": applied}))
                elif applied:
                    write(f"{store.url.masked}: migrated from version {before} to {applied[-1]} "
                          f"(applied {', '.join(map(str, applied))})\n")
                else:
                    write(f"{store.url.masked}: schema version {before}, up to date\n")
            return EXIT_OK
        async with await open_store(args.url, migrate=False) as store:
            info = await store.info()
        if args.json:
            write(_dump({"url": info.url, "backend": info.backend, "schema_version": info.schema_version,
                         "latest_version": info.latest_version, "counts": info.counts, **info.details}))
            return EXIT_OK
        lines = [f"url:            {info.url}", f"backend:        {info.backend}"]
        lines += [f"{k + ':':<15} {v}" for k, v in info.details.items()]
        missing = info.latest_version - info.schema_version
        state = f"{missing} migration(s) pending: run `chainreact state migrate`" if missing else "up to date"
        lines.append(f"schema version: {info.schema_version} of {info.latest_version} ({state})")
        lines += [f"{k + ':':<15} {v}" for k, v in info.counts.items()]
        write("\n".join(lines) + "\n")
        return EXIT_OK

    import asyncio

    return asyncio.run(run())


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def cmd_runs(args: argparse.Namespace) -> int:
    from ..state import RUN_STATUSES, open_store

    if args.action == "list" and args.status and args.status not in RUN_STATUSES:
        raise UsageError(f"--status {args.status!r}: expected one of {', '.join(RUN_STATUSES)}")

    if args.action == "export":
        from .replay_cmds import cmd_runs_export

        return cmd_runs_export(args)
    if args.action == "resume":
        import asyncio

        from .common import build_globals
        from .run_state import resume_from_cli

        globals_ = build_globals(args.globals, args.globals_file)
        return asyncio.run(resume_from_cli(args.run_id, args.answer, url=args.url, document=args.doc,
                                           load=args.load, globals_=globals_, as_json=args.json,
                                           args=args))

    async def run() -> int:
        async with await open_store(args.url) as store:
            if args.action == "list":
                runs = await store.runs(status=args.status, limit=args.limit)
                if args.json:
                    write(_dump([{"run_id": r.run_id, "status": r.status, "version": r.version,
                                  "agent": r.agent, "session": r.session, "events": r.last_event_id,
                                  "created_at": r.created_at, "updated_at": r.updated_at} for r in runs]))
                    return EXIT_OK
                if not runs:
                    write("no runs\n")
                    return EXIT_OK
                width = max(len(r.run_id) for r in runs)
                write(f"{'RUN':<{width}}  {'STATUS':<11}  {'UPDATED':<19}  {'AGENT':<16}  EVENTS\n")
                for r in runs:
                    write(f"{r.run_id:<{width}}  {r.status:<11}  {_when(r.updated_at)}  "
                          f"{(r.agent or '-'):<16}  {r.last_event_id}\n")
                return EXIT_OK
            rec = await store.load_run(args.run_id)  # RunNotFoundError: `error: no run ...`, exit 1
            events = await store.events(args.run_id, limit=None) if args.events else []
            out: dict[str, Any] = {
                "run_id": rec.run_id, "status": rec.status, "version": rec.version, "agent": rec.agent,
                "session": rec.session, "created_at": rec.created_at, "updated_at": rec.updated_at,
                "events": rec.last_event_id, "snapshot": rec.snapshot,
            }
            if args.events:
                out["event_log"] = [{"id": e.id, "type": e.type, "data": e.data} for e in events]
            write(_dump(out))
            return EXIT_OK

    import asyncio

    return asyncio.run(run())


def register(add: AddCommand) -> None:
    p = add("state", cmd_state, "inspect or migrate the state store (sessions, memory, runs)")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, help_ in (("migrate", "apply pending schema migrations"),
                        ("info", "backend, schema version and row counts (changes nothing)")):
        q = sub.add_parser(name, help=help_, description=help_)
        q.add_argument("url", nargs="?", default=None,
                       help="store URL (default: $CHAINREACT_STATE, else sqlite:///.chainreact/state.db)")
        q.add_argument("--json", action="store_true", help="print JSON")

    p = add("runs", cmd_runs, "list saved runs or show one run's checkpoint")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    q = sub.add_parser("list", help="runs, most recently updated first")
    q.add_argument("--state", dest="url", default=None, metavar="URL", help="store URL")
    q.add_argument("--status", default=None, help="only runs with this status")
    q.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    q.add_argument("--json", action="store_true", help="print JSON")
    q = sub.add_parser("show", help="one run's checkpoint as JSON")
    q.add_argument("run_id", metavar="RUN_ID")
    q.add_argument("--state", dest="url", default=None, metavar="URL", help="store URL")
    q.add_argument("--events", action="store_true", help="include the run's event log")
    q = sub.add_parser("resume", help="go on with an interrupted run (or one whose process died)")
    q.add_argument("run_id", metavar="RUN_ID")
    q.add_argument("--state", dest="url", default=None, metavar="URL", help="store URL")
    q.add_argument("--answer", default=None, metavar="JSON",
                   help="the answer(s): a JSON object keyed by question id, or the one question's answer "
                        "(text that is not JSON is a string)")
    q.add_argument("--doc", default=None, metavar="DOCUMENT",
                   help="the agent document (default: the one `chainreact run` saved with the run)")
    q.add_argument("--load", action="append", default=[], metavar="CHAIN_FILE_OR_DIR",
                   help="rule chains for rulechain tools (default: those `chainreact run --load` saved with "
                        "the run). Repeatable.")
    q.add_argument("--json", action="store_true", help="print one JSON object for the run")
    add_globals(q)
    from .replay_cmds import add_export

    add_export(sub)
