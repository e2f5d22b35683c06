"""`chainreact chat FLOW`: talk to a chat flow at a prompt (`chat AGENT`: chat_agent.py, the same prompt).

On a terminal: a readline prompt (line editing, history with the arrow keys), each answer streamed as
the model writes it, tool calls and their results shown on stderr as they run. Lines starting with `/`
are commands: `/quit` (or Ctrl-D), `/reset` (forget the session: the next message starts the flow
afresh), `/help`; `//text` sends `/text`. Ctrl-C stops the turn that is running and goes back to the
prompt. With stdin not a terminal (a pipe or a file) every line is one user message, no prompt is
printed, and the exit status is 1 if any turn failed. The session lives in the state store like
`chainreact flow send`'s, so `flow send --session S` and `chat --session S` continue one conversation.
With `--temporal ADDRESS --state URL`, each turn runs as a workflow on a `chainreact worker` hosting the
flow (docs/durable.md, "Chat flows"), streamed from the workers' state store (`--state`).
"""

from __future__ import annotations

import argparse
import secrets
import sys
from typing import Any

from .chat_prompt import PromptLoop
from .common import AddCommand, UsageError, add_globals, write


def register(add: AddCommand) -> None:
    p = add("chat", cmd_chat, "talk to an agent or a chat flow at an interactive prompt")
    p.add_argument("config", metavar="DOCUMENT", help="agent or chat flow document (JSON or YAML)")
    p.add_argument("--session", default=None,
                   help="the conversation's id in the state store (default: a new one, printed at the "
                        "start; an agent's conversation is in memory without --session and --state)")
    p.add_argument("--user", default=None, metavar="JSON", help='the user object, e.g. \'{"id": "u1"}\'')
    p.add_argument("--group", default=None, metavar="JSON",
                   help='send every message as a group conversation\'s: {"id": "g1", "mentions": [...]}')
    p.add_argument("--state", default=None, metavar="URL",
                   help="state store URL (else $CHAINREACT_STATE, the flow's `state`, the default "
                        "SQLite file); an agent's conversation is kept there with --state or --session, "
                        "else in memory")
    p.add_argument("--load", action="append", default=[], metavar="CHAIN_FILE_OR_DIR",
                   help="an agent's rule chains for rulechain/agent tools, as `run --load`. Repeatable.")
    add_globals(p)  # an agent's, as `run`'s
    from .temporal_cmds import add_connection

    # --temporal: a flow's turns run on `chainreact worker`s (needs --state); refused for an agent
    add_connection(p, required=False)


def cmd_chat(args: argparse.Namespace) -> int:
    """An agent document goes to chat_agent.py, a flow the way below; told apart by their shape."""
    import asyncio

    from ..config import detect_document_kind
    from ..config.kinds import kind_mismatch
    from ..config.loader import read_document

    data, source = read_document(args.config)
    kind = detect_document_kind(data, source=source)
    if kind == "agent":
        from .chat_agent import cmd_chat_agent

        return cmd_chat_agent(args)
    if kind != "flow":
        raise kind_mismatch(kind, "flow", source or args.config)
    if args.globals or args.globals_file or args.load:
        raise UsageError("--global, --globals and --load are for agent documents, not chat flows")

    from ..flows import Flow
    from .flow_cmds import _object

    user = _object(args.user)
    group = _object(args.group, "--group")
    durable = None
    if args.temporal:
        if not args.state:
            raise UsageError("chat --temporal streams each turn from the workers' state store: give --state "
                             "URL (the workers' --state)")
        from ..durable import DurableFlow

        durable = DurableFlow(Flow.load(args.config).id, client=args.temporal, task_queue=args.task_queue,
                              namespace=args.namespace)
    flow = Flow.load(args.config, state=args.state)
    session = args.session or f"chat-{secrets.token_hex(4)}"
    interactive = sys.stdin.isatty()
    chat = _Chat(flow, session, user, group, interactive)
    chat.durable = durable
    del durable
    try:
        with asyncio.Runner() as runner:
            try:
                return chat.loop(runner)
            finally:
                runner.run(flow.aclose())
                if chat.durable is not None:
                    import gc

                    # Drop the Temporal client inside the loop (temporalio/sdk-python#300: its threads
                    # calling into a finalizing interpreter can abort the process at exit).
                    chat.durable = None
                    gc.collect()
                    runner.run(asyncio.sleep(0.1))
    finally:
        from .agent_cmds import _stop_local_if_started

        _stop_local_if_started()


class _Chat(PromptLoop):
    reset_help = "forget this session: the next message starts the flow again with an empty memory"

    def __init__(self, flow: Any, session: str, user: dict[str, Any] | None, group: dict[str, Any] | None,
                 interactive: bool):
        super().__init__(interactive)
        self.flow = flow
        self.session = session
        self.user = user
        self.group = group
        self.durable: Any = None  # a DurableFlow: turns run as workflows (--temporal)

    def banner(self) -> str:
        name = self.flow.definition.name or self.flow.id
        return f"chat with flow {name!r}, session {self.session!r}"

    def turn(self, runner: Any, text: str) -> None:
        runner.run(self._turn(text))

    def reset(self, runner: Any) -> None:
        runner.run(self.flow.reset(self.session))
        write(f"[session {self.session!r} reset: the next message starts the flow]\n", sys.stderr)

    async def _turn(self, text: str) -> None:
        from .chat_render import TurnPrinter

        printer = TurnPrinter(self.flow)
        try:
            if self.durable is not None:
                events = self.durable.stream(self.session, text, user=self.user, group=self.group,
                                             store=await self.flow.store(), agent_events=True)
            else:
                events = self.flow.stream(self.session, text, user=self.user, group=self.group,
                                          agent_events=True)
            async for ev in events:
                printer.show(ev)
        finally:
            printer.finish()


__all__ = ["cmd_chat", "register"]
