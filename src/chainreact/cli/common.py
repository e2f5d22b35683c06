"""What every command shares: exit codes, `--global` parsing, output helpers."""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ..errors import UsageError

T = TypeVar("T")

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_WAITING = 3  # the run stopped to ask (a question, an approval): stderr says what and how to go on
EXIT_EMPTY = 4  # the run ended with an empty answer
EXIT_NOT_DONE = 5  # `run --temporal --wait N`: the durable run had not ended after N seconds
EXIT_INTERRUPTED = 130

_original_showwarning = warnings.showwarning

__all__ = ["EXIT_EMPTY", "EXIT_FAIL", "EXIT_INTERRUPTED", "EXIT_NOT_DONE", "EXIT_OK", "EXIT_USAGE",
           "EXIT_WAITING", "AddCommand", "NoticeHandler",
           "UsageError", "add_globals", "build_globals", "install_notices", "notices_shown_as_events",
           "parse_global", "uninstall_notices", "write"]


# --------------------------------------------------------------------------- --global parsing
# The parser lives in chainreact.config.globals (one parser for every entry point); these wrappers import
# it on first use, because importing chainreact.config loads pydantic and `--help` must stay fast.


def parse_global(item: str) -> tuple[list[str], Any]:
    """Parse one `--global` item: `KEY=VALUE` (a string) or `KEY:=JSON` (a JSON value)."""
    from ..config.globals import parse_global as parse

    return parse(item)


def build_globals(items: Sequence[str] | None, files: Sequence[str] | None = None) -> dict[str, Any]:
    """The run's globals: `--globals FILE`s merged in order, then `--global` items on top."""
    from ..config.globals import build_globals as build

    return build(items, files)


def write(text: str, stream: Any = None) -> None:
    stream = stream or sys.stdout
    stream.write(text)
    stream.flush()


# --------------------------------------------------------------------------- library notices
# The library reports through `logging` (chainreact.*) and `warnings`. Without this, Python's last-resort
# handler prints bare messages and `warnings` prints file paths and source lines; a retry shown by
# `--stream` as "! retry ..." was printed a second time by the log. The CLI prints each notice once, as
# `warning: <message>` on stderr.


class NoticeHandler(logging.Handler):
    """Prints chainreact's log warnings as `warning: ...` on stderr, each distinct message once."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: set[str] = set()
        # Loggers whose notices a streaming run already shows as events (retry, failover, breaker).
        self.shown_as_events: tuple[str, ...] = ()

    def emit(self, record: logging.LogRecord) -> None:
        if self.shown_as_events and record.name.startswith(self.shown_as_events):
            return
        try:
            self.notice(record.getMessage())
        except Exception:
            self.handleError(record)

    def notice(self, message: str) -> None:
        if message in self.seen:
            return
        if len(self.seen) < 10_000:
            self.seen.add(message)
        write(f"warning: {message}\n", sys.stderr)


_handler: NoticeHandler | None = None


def install_notices() -> NoticeHandler:
    """Route chainreact's log warnings and Python warnings through the CLI's output (see NoticeHandler)."""
    global _handler
    uninstall_notices()
    _handler = handler = NoticeHandler()
    logging.getLogger("chainreact").addHandler(handler)

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        handler.notice(str(message))

    warnings.showwarning = show
    return handler


def uninstall_notices() -> None:
    global _handler
    if _handler is not None:
        logging.getLogger("chainreact").removeHandler(_handler)
        _handler = None
    warnings.showwarning = _original_showwarning


def notices_shown_as_events(*loggers: str) -> None:
    """A streaming command shows these loggers' notices as events: do not print them again."""
    if _handler is not None:
        _handler.shown_as_events = loggers


def add_globals(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--global", dest="globals", action="append", default=[], metavar="KEY=VALUE",
        help="a global for templates; dotted keys nest (a.b=x). KEY:=JSON sets a JSON value. Repeatable.",
    )
    p.add_argument(
        "--globals", dest="globals_file", action="append", default=[], metavar="FILE",
        help="JSON/YAML file of globals (merged under --global items). Repeatable.",
    )


def one_line(text: str) -> str:
    """A problem's text on one line (a document's errors are one per line)."""
    return "; ".join(part.strip() for part in text.splitlines() if part.strip())


def read_input(text: str | None, what: str = "prompt") -> str:
    """The prompt (or message) given, or stdin's for '-' / none given; blank is a usage error, since a
    command run from a script with stdin closed (cron, CI) would otherwise ask the model nothing."""
    how = "give it as an argument, or '-' / a pipe to read it from stdin"
    if text is None or text == "-":
        if text is None and sys.stdin.isatty():
            raise UsageError(f"no {what}: {how}")
        text, where = sys.stdin.read(), "stdin was empty"
    else:
        where = f"the {what} given is blank"
    if not text.strip():
        raise UsageError(f"no {what}: {where}; {how}")
    return text


def port_number(text: str) -> int:
    """An argparse type for --port: 0-65535 (the socket layer took 70000 as 4464, silently)."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535 (0: a free one), "
                                         f"got {text!r}")
    return int(text)


# A command module's `register(add)` declares its commands through this: `add(name, func, help)` returns
# the subparser to add arguments to.
AddCommand = Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]


def run_with_temporal_client(main: Callable[[], Awaitable[T]]) -> T:
    """`asyncio.run(main())` for a command that holds a Temporal client in `main`: once `main` has
    returned (its frame, and the client with it, gone), garbage is collected inside the still-running
    loop. A client collected later, by a finalizing interpreter, can abort the process at exit with
    `PyGILState_Release` (temporalio/sdk-python#300)."""
    import asyncio
    import gc

    async def go() -> T:
        try:
            return await main()
        finally:
            gc.collect()
            await asyncio.sleep(0.1)  # let the client's native threads wind down

    return asyncio.run(go())
