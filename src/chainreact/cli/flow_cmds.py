"""`chainreact flow send|schema`: one user message through a chat flow, or the flow document's JSON Schema."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import EXIT_OK, AddCommand, UsageError, read_input, write


def register(add: AddCommand) -> None:
    p = add("flow", cmd_flow, "send a message through a chat flow, or print the flow JSON Schema")
    sub = p.add_subparsers(dest="flow_command", metavar="SUBCOMMAND")

    s = sub.add_parser("send", help="send one user message; the session lives in the state store",
                       description="Send one user message to a flow session and print the turn's messages. "
                                   "The session's current node is kept in the state store, so the next "
                                   "`flow send` with the same --session continues the conversation.")
    s.add_argument("flow", metavar="FLOW", help="flow document (JSON or YAML)")
    s.add_argument("text", help="the user's message; '-' reads stdin")
    s.add_argument("--session", required=True, help="the conversation's id")
    s.add_argument("--user", default=None, metavar="JSON", help='the user object, e.g. \'{"id": "u1"}\'')
    s.add_argument("--group", default=None, metavar="JSON",
                   help='a group conversation\'s message: {"id": "g1", "mentions": ["support"]}')
    s.add_argument("--state", default=None, metavar="URL",
                   help="state store URL (else $CHAINREACT_STATE, the flow's `state`, the default "
                        "SQLite file)")
    fmt = s.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true",
                     help='print {"node", "ended", "messages", "output"} (a stable form for scripts)')
    fmt.add_argument("--jsonl", action="store_true", help="print the turn's events as JSON lines")
    from .temporal_cmds import add_connection

    add_connection(s, required=False)  # --temporal: the turn runs as a workflow on a `chainreact worker`

    sub.add_parser("schema", help="print the JSON Schema of flow documents (for editors)")


def cmd_flow(args: argparse.Namespace) -> int:
    cmd = getattr(args, "flow_command", None)
    if cmd == "send":
        return cmd_flow_send(args)
    if cmd == "schema":
        from ..flows import flow_json_schema

        write(json.dumps(flow_json_schema(), indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    raise UsageError("flow: give a subcommand: send or schema")


def _object(value: str | None, option: str = "--user") -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        obj = json.loads(value)
    except ValueError as e:
        raise UsageError(f"{option}: not JSON ({e}); give an object such as '{{\"id\": \"u1\"}}'") from None
    if not isinstance(obj, dict):
        raise UsageError(f"{option}: expected a JSON object, got {type(obj).__name__}")
    return obj


def cmd_flow_send(args: argparse.Namespace) -> int:
    import asyncio

    text = read_input(args.text, "message")
    user = _object(args.user)
    group = _object(args.group, "--group")
    from ..flows import Flow

    if args.temporal:
        from .temporal_cmds import cmd_flow_send_durable

        return cmd_flow_send_durable(args, text, user, group)
    flow = Flow.load(args.flow, state=args.state)
    return asyncio.run(_send(flow, args, text, user, group))


async def _send(flow: Any, args: argparse.Namespace, text: str, user: dict[str, Any] | None,
                group: dict[str, Any] | None) -> int:
    try:
        if args.jsonl:
            async for ev in flow.stream(args.session, text, user=user, group=group):
                write(json.dumps(ev.to_dict(), ensure_ascii=False, default=str) + "\n")
            return EXIT_OK
        turn = await flow.send(args.session, text, user=user, group=group)
    finally:
        await flow.aclose()
    if args.json:
        write(json.dumps(turn.to_dict(), ensure_ascii=False, default=str) + "\n")
        return EXIT_OK
    for m in turn.messages:
        write(m.content + ("" if m.content.endswith("\n") else "\n"))
    where = "flow ended" if turn.ended else f"waiting at node {turn.node!r}"
    write(f"[{where}]\n", sys.stderr)
    return EXIT_OK
