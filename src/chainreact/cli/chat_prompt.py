"""The prompt `chainreact chat` shows for a flow (chat_cmds.py) and for an agent (chat_agent.py).

On a terminal: a readline prompt (line editing, history with the arrow keys). Lines starting with `/` are
commands: `/quit` (or Ctrl-D), `/reset`, `/help`; `//text` sends `/text`. Ctrl-C stops the turn that is
running and goes back to the prompt. With stdin not a terminal (a pipe or a file) every line is one
message, no prompt is printed, and the exit status is 1 if any turn failed.
"""

from __future__ import annotations

import sys
from typing import Any

from .common import EXIT_FAIL, EXIT_OK, write

PROMPT = "you> "
HELP = ("/quit       leave (also Ctrl-D)\n"
        "/reset      {reset}\n"
        "/help       this text\n"
        "//text      send a message that starts with '/'\n")


class PromptLoop:
    """The prompt both chats share (chat_cmds.py's and chat_agent.py's): lines read one by one, `/commands`,
    each message a turn (`turn`), a failed turn said and the chat going on. A subclass gives `banner`,
    `turn(runner, text)` and `reset(runner)`."""

    reset_help = "forget the conversation"

    def __init__(self, interactive: bool):
        self.interactive = interactive
        self.failed = False

    def banner(self) -> str:
        raise NotImplementedError

    def turn(self, runner: Any, text: str) -> None:
        raise NotImplementedError

    def reset(self, runner: Any) -> None:
        raise NotImplementedError

    def read(self, prompt: str = PROMPT) -> str | None:
        """The next line, None at the end of input (the prompt only on a terminal)."""
        if not self.interactive:
            line = sys.stdin.readline()
            return None if line == "" else line.rstrip("\n")
        try:
            return input(prompt)
        except EOFError:
            write("\n")
            return None

    def loop(self, runner: Any) -> int:
        if self.interactive:
            import readline  # noqa: F401  (input() gets line editing and history once it is loaded)

            write(f"{self.banner()} (/help for commands, /quit to leave)\n", sys.stderr)
        while True:
            try:
                line = self.read()
            except KeyboardInterrupt:
                write("\n")  # Ctrl-C at the prompt drops the line, as shells do
                continue
            if line is None:
                break
            text = line.strip()
            if not text:
                continue
            if text.startswith("/") and not text.startswith("//"):
                if not self._command(runner, text):
                    break
                continue
            if text.startswith("//"):
                text = text[1:]
            try:
                self.turn(runner, text)
            except KeyboardInterrupt:
                write("\n[turn cancelled]\n", sys.stderr)
            except Exception as e:  # one failed turn does not end the chat; the session is unchanged
                self.failed = True
                from ..errors import ChainreactError

                name = "" if isinstance(e, ChainreactError) else f"{type(e).__name__}: "
                write(f"error: {name}{e}\n", sys.stderr)
        return EXIT_FAIL if self.failed and not self.interactive else EXIT_OK

    def _command(self, runner: Any, text: str) -> bool:
        """Run a /command; False to leave."""
        cmd = text.split()[0].lower()
        if cmd in ("/quit", "/exit", "/q"):
            return False
        if cmd == "/reset":
            self.reset(runner)
        elif cmd == "/help":
            write(HELP.format(reset=self.reset_help), sys.stderr)
        else:
            write(f"unknown command {cmd}; /help lists them (//text sends a message starting with '/')\n",
                  sys.stderr)
        return True


__all__ = ["PROMPT", "PromptLoop"]
