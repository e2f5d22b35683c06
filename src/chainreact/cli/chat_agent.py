"""`chainreact chat AGENT`: talk to an agent document at a prompt (`chat` given a flow: chat_cmds.py).

The agent is built as `chainreact run` builds it (agent_cmds.resolve_document); the prompt is the flow
chat's (chat_prompt.PromptLoop). Each turn runs the agent on the conversation so far plus the message, kept
in memory, or with `--state`/`--session` in the store's session as `run --session` keeps it. The answer
streams to stdout, tool activity to stderr; a run that stops to ask has its questions asked at the prompt
and goes on with the answers.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import secrets
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from .chat_prompt import PromptLoop
from .chat_render import _short, activity_line
from .common import UsageError, notices_shown_as_events, write
from .run_outcome import is_empty
from .run_state import parse_answers


def cmd_chat_agent(args: argparse.Namespace) -> int:
    from .agent_cmds import _EVENT_LOGGERS, _stop_local_if_started, resolve_document

    if getattr(args, "temporal", None):
        raise UsageError("chat --temporal is for chat flows; to run an agent durably on a worker use "
                         "`chainreact run AGENT PROMPT --temporal ADDRESS`")
    if args.user or args.group:
        raise UsageError("--user and --group are for chat flows, not agent documents")
    doc, globals_ = resolve_document(args)
    notices_shown_as_events(_EVENT_LOGGERS)  # retries and failovers are shown as the run's events
    try:
        with asyncio.Runner() as runner:
            chat = runner.run(_open(args, doc, globals_))
            try:
                return chat.loop(runner)
            finally:
                runner.run(chat.close())
    finally:
        _stop_local_if_started()


async def _open(args: argparse.Namespace, doc: Any, globals_: dict[str, Any]) -> _AgentChat:
    from ..chains.agent_doc import agent_from_document
    from ..config import fallback_id

    load = list(args.load or ())
    agent = agent_from_document(doc, globals=globals_, load=load)
    name = doc.id or fallback_id(args.config, "agent")
    conv = _Memory()
    if args.state or args.session:
        from ..state import open_store

        session = args.session or f"chat-{secrets.token_hex(4)}"
        extra = {"document": os.path.abspath(args.config), "session": session,  # for `runs resume`
                 "load": [os.path.abspath(p) for p in load]}
        conv = _Stored(await open_store(args.state), session, extra)
    return _AgentChat(agent, name, conv, sys.stdin.isatty())


class _Memory:
    """The conversation in memory; a run's checkpoints kept only to go on after a question."""

    session: str | None = None

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self._last: Any = None  # the run's last Checkpoint

    async def _keep(self, cp: Any) -> None:
        self._last = cp

    async def history(self) -> list[Any]:
        return list(self.messages)

    async def start(self, agent: Any, data: Any) -> Any:
        return agent.start(data, checkpoint=self._keep)

    async def resume(self, agent: Any, run_id: str, answers: dict[str, Any]) -> Any:
        from ..agent import Resume

        cp = self._last
        resume = Resume(list(cp.messages), cp.step, list(cp.pending), dict(cp.completed), answers=answers,
                        run_id=cp.run_id)
        return agent.start(resume=resume, checkpoint=self._keep)

    async def end(self, agent: Any, run: Any, result: Any, error: BaseException | None) -> None:
        if _answered(result):
            self.messages = [m for m in result.messages if m.role != "system"]

    async def reset(self) -> None:
        self.messages = []

    async def close(self) -> None:
        pass


class _Stored(_Memory):
    """The conversation as the store's session; every run checkpointed there (state/runs.py), as the
    server's runs are, so an unanswered question can also be answered later with `chainreact runs resume`."""

    def __init__(self, store: Any, session: str, extra: dict[str, Any]):
        super().__init__()
        self.store, self.session, self.extra = store, session, extra
        self._ckpt: Any = None

    async def history(self) -> list[Any]:
        return list(await self.store.history(self.session))

    async def start(self, agent: Any, data: Any) -> Any:
        from ..state.runs import StoreCheckpointer, recording

        self._ckpt = StoreCheckpointer(self.store, session=self.session, extra=self.extra)
        with recording(self._ckpt, agent, data):  # the run's task copies the context: it is recorded
            return agent.start(data, checkpoint=self._ckpt)

    async def resume(self, agent: Any, run_id: str, answers: dict[str, Any]) -> Any:
        from ..state.runs import claim_resume, recording

        resume, self._ckpt = await claim_resume(agent, self.store, run_id, answers)  # StateError: refused
        with recording(self._ckpt, agent, None):
            return agent.start(resume=resume, checkpoint=self._ckpt)

    async def end(self, agent: Any, run: Any, result: Any, error: BaseException | None) -> None:
        from ..state.runs import session_messages

        await self._ckpt.finish(result, run.run_id, agent.name, error)
        if _answered(result):
            await self.store.append(self.session, session_messages(result.messages))

    async def reset(self) -> None:
        await self.store.delete_session(self.session)

    async def close(self) -> None:
        await self.store.close()


def _answered(result: Any) -> bool:
    return result is not None and result.stop_reason not in ("interrupted", "cancelled")


class _AgentChat(PromptLoop):
    reset_help = "forget the conversation: the next message starts a new one"

    def __init__(self, agent: Any, name: str, conv: _Memory, interactive: bool):
        super().__init__(interactive)
        self.agent, self.name, self.conv = agent, name, conv

    def banner(self) -> str:
        session = f", session {self.conv.session!r}" if self.conv.session else ""
        return f"chat with agent {self.name!r}{session}"

    def reset(self, runner: Any) -> None:
        runner.run(self.conv.reset())
        write("[conversation reset: the next message starts a new one]\n", sys.stderr)

    async def close(self) -> None:
        try:
            await self.agent.aclose()
        finally:
            await self.conv.close()

    def turn(self, runner: Any, text: str) -> None:
        from ..state import StateError
        from ..types import Message

        history = runner.run(self.conv.history())
        data: Any = [*history, Message("user", text)] if history else text
        printer = _Printer()  # one for the turn: a resumed run's calls are not shown again
        result = runner.run(self._go(printer, functools.partial(self.conv.start, self.agent, data)))
        while result.stop_reason == "interrupted":
            answers = self._ask(result.interruption.questions)  # at the prompt, outside the event loop
            run_id = str(result.metadata["run_id"])
            try:
                resume = functools.partial(self.conv.resume, self.agent, run_id, answers)
                result = runner.run(self._go(printer, resume))
            except StateError as e:  # an answer the store refused changed nothing: ask again
                write(f"error: {e}\n", sys.stderr)

    async def _go(self, printer: _Printer, start: Callable[[], Awaitable[Any]]) -> Any:
        """One run (started or resumed) to its end, its events shown as they come."""
        run = await start()
        result, error = None, None
        try:
            async for ev in run:
                printer.show(ev)
            result = await run.result()
        except asyncio.CancelledError:  # Ctrl-C: stop the run (its own task), then leave
            run.cancel()
            try:
                result = await run.result()
            except Exception as e:
                error = e
            raise
        except Exception as e:
            error = e
            raise
        finally:
            printer.finish(result)
            await self.conv.end(self.agent, run, result, error)
        return result

    def _ask(self, questions: list[Any]) -> dict[str, Any]:
        """Each question's answer from the next line: an approval y (yes) or not, else the line (JSON when
        its schema asks for something other than a string)."""
        from ..errors import ChainreactError

        answers: dict[str, Any] = {}
        for q in questions:
            if q.kind == "approval":
                args = q.arguments
                args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                ask = f"? {q.tool}({_short(args)}): approve? [y/N] "
            else:
                ask = f"? {q.question} "
            if not self.interactive:
                write(ask.rstrip() + "\n", sys.stderr)
            line = self.read(ask)
            if line is None:
                raise ChainreactError("no answer (end of input): the run was left waiting")
            if q.kind == "approval":
                yes = line.strip().lower() in ("y", "yes")
                answers[q.id] = True if yes else {"approve": False, "reason": "rejected at the prompt"}
            elif isinstance(q.schema, dict) and q.schema and q.schema.get("type") != "string":
                answers[q.id] = parse_answers(line, [q])[q.id]  # JSON if it parses (an integer, ...)
            else:
                answers[q.id] = line
        return answers


class _Printer:
    """A turn's events: the answer's text on stdout as it arrives, tool activity on stderr."""

    def __init__(self) -> None:
        self.open = False  # stdout holds text without its newline
        self.answer = ""  # the text streamed since the last tool call
        self.calls: set[str] = set()  # the tool calls shown (a resumed run starts its pending ones again)

    def _note(self, text: str) -> None:
        if self.open:
            write("\n")
            self.open = False
        write(text + "\n", sys.stderr)

    def _text(self, text: str) -> None:
        write(text)
        self.answer += text
        self.open = not text.endswith("\n")

    def show(self, ev: Any) -> None:
        top = len(ev.path) <= 1  # not a collaborator agent's
        if ev.type == "text_delta" and top:
            if ev.text:
                self._text(ev.text)
        elif ev.type == "final" and top:
            if ev.content and not self.answer:  # not streamed as deltas
                self._text(ev.content)
        elif ev.type == "tool_call" and ev.call.id in self.calls:
            pass
        elif (line := activity_line(ev, "  " * (len(ev.path) - 1))) is not None:
            if ev.type == "tool_call":
                self.calls.add(ev.call.id)
                self.answer = "" if top else self.answer  # text before a tool call was a preamble
            self._note(line)
        elif ev.type == "warning":
            self._note(f"warning: {ev.message}")

    def finish(self, result: Any) -> None:
        """The end of a run: its answer's line closed, an empty answer said."""
        if self.open:
            write("\n")
            self.open = False
        if _answered(result) and is_empty(result.content):
            why = f"stop reason {result.stop_reason!r}, {result.steps} step(s)"
            write(f"[the agent gave an empty answer ({why})]\n", sys.stderr)


__all__ = ["cmd_chat_agent"]
