"""The `chainreact` command line.

Only argparse and the standard library are imported at module level, so `chainreact --help` starts fast;
every command imports what it needs inside its function. One module per family of commands, each with a
`register(add)` function; `COMMAND_MODULES` lists them in the order `--help` shows them.

Exit codes: 0 ok, 1 invalid document or failed run, 2 usage error, 3 the run waits for an answer, 4 an
empty answer, 5 no worker took a durable run within --wait, 130 interrupted (docs/cli.md). Errors print
`error: <message>` to stderr; `--debug` adds the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .common import (
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    build_globals,
    install_notices,
    parse_global,
    uninstall_notices,
)

__all__ = ["EXIT_FAIL", "EXIT_OK", "EXIT_USAGE", "UsageError", "build_globals", "build_parser", "main",
           "parse_global"]

COMMAND_MODULES = ("agent_cmds", "state_cmds", "chain_cmds", "flow_cmds", "chat_cmds", "serve_cmds",
                   "temporal_cmds", "replay_cmds", "eval_cmds", "misc_cmds")

# Commands whose arguments belong to another parser: everything after the command name is passed on
# untouched (argparse.REMAINDER alone would still reject a leading "--option").
_PASSTHROUGH = {"fake-llm"}


class _Version(argparse.Action):
    """`chainreact --version`: what `chainreact version` prints, exit 0 (the version is read only then, so
    `--help` stays fast)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from .misc_cmds import cmd_version

        parser.exit(cmd_version(namespace))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chainreact", description="Declarative ReAct agents: run, validate and serve agent documents."
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    parser.add_argument("--version", action=_Version,
                        help="print the version (as `chainreact version`) and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        p.set_defaults(func=func)
        return p

    for name in COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(add)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    i = 0
    while i < len(argv) and argv[i] == "--debug":
        i += 1
    if i < len(argv) and argv[i] in _PASSTHROUGH:
        from .misc_cmds import cmd_fake_llm

        args = argparse.Namespace(command=argv[i], func=cmd_fake_llm, rest=argv[i + 1:], debug=i > 0)
        parser = None
    else:
        parser = build_parser()
        args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        assert parser is not None
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    debug = bool(getattr(args, "debug", False)) or os.environ.get("CHAINREACT_DEBUG") == "1"
    args.debug = debug
    install_notices()
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
        from ..errors import ChainreactError

        name = "" if isinstance(e, ChainreactError) else f"{type(e).__name__}: "
        print(f"error: {name}{e}", file=sys.stderr)
        if not isinstance(e, ChainreactError):
            print("(run with --debug for the traceback)", file=sys.stderr)
        return EXIT_FAIL
    finally:
        uninstall_notices()
