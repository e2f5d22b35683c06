"""How `chainreact run` (in process, with `--state`, with `--temporal`), `runs resume` and `durable answer`
end when the run did not give an answer: never silent (issue 25).

- A run that stops to ask (an `ask_user` question, a `requireApproval` tool) prints on stderr what it
  waits for (the question, or the tool and its arguments) and the command that goes on, and exits
  EXIT_WAITING (3). The command repeats the options the run needs again (`--state`, `--global`,
  `--globals`, `--temporal`/`--task-queue`/`--namespace`), so it works as printed.
- A run that ends with an empty answer says so on stderr and exits EXIT_EMPTY (4).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from typing import Any

from .common import EXIT_EMPTY, EXIT_WAITING, write

# The placeholder of a question's answer in a printed command (an approval's is `approve`).
ANSWER_PLACEHOLDER = "ANSWER"


def _as_dict(q: Any) -> dict[str, Any]:
    if isinstance(q, dict):
        return q
    return {"id": q.id, "kind": q.kind, "question": q.question, "tool": q.tool, "arguments": q.arguments,
            "schema": q.schema}


def answer_value(questions: list[Any]) -> str:
    """The `--answer` of a printed command: `approve` for one approval, ANSWER for one question, else a JSON
    object by question id with those."""
    qs = [_as_dict(q) for q in questions]
    each = {str(q["id"]): "approve" if q["kind"] == "approval" else ANSWER_PLACEHOLDER for q in qs}
    if len(each) == 1:
        return next(iter(each.values()))
    return json.dumps(each, ensure_ascii=False)


def question_lines(questions: list[Any]) -> list[str]:
    lines = []
    for q in map(_as_dict, questions):
        if q["kind"] == "approval":
            lines.append(f"  approval of tool {q['tool']} with arguments {q['arguments']} (question id "
                         f"{q['id']}): answer approve, reject, or {{\"arguments\": {{...}}}} to edit them")
        else:
            schema = f"; the answer must match {json.dumps(q['schema'])}" if q.get("schema") else ""
            lines.append(f"  question: {q['question']} (question id {q['id']}{schema})")
    return lines


def report_waiting(questions: list[Any], how: str, command: list[str] | None, note: str = "") -> int:
    """Print what the run waits for and how to go on (stderr); the exit code of a waiting run."""
    out = [f"the run is waiting {how}:", *question_lines(questions)]
    if command is not None:
        has_question = any(_as_dict(q)["kind"] != "approval" for q in questions)
        out.append("to go on: " + shlex.join(command))
        if "--answer" not in command:
            pass
        elif has_question:
            out.append(f"  (put your answer in place of {ANSWER_PLACEHOLDER}: text, or JSON for a structured "
                       "answer)")
        elif any(_as_dict(q)["kind"] == "approval" for q in questions):
            out.append("  (reject instead of approve to refuse)")
    if note:
        out.append(note)
    write("\n".join(out) + "\n", sys.stderr)
    return EXIT_WAITING


def report_empty(stop_reason: str | None, steps: int | None) -> int:
    """An answer that is empty (or only blanks): a line on stderr, EXIT_EMPTY."""
    why = f" (stop reason {stop_reason!r}, {steps} step(s))" if stop_reason else ""
    write(f"error: the run ended with an empty answer{why}: the model returned no text; run with --stream "
          "or --jsonl to see its steps\n", sys.stderr)
    return EXIT_EMPTY


def is_empty(content: str | None) -> bool:
    return not (content or "").strip()


def _global_options(args: argparse.Namespace) -> list[str]:
    """The run's `--global` and `--globals` options, as given (files made absolute)."""
    out: list[str] = []
    for item in getattr(args, "globals", None) or ():
        out += ["--global", item]
    for path in getattr(args, "globals_file", None) or ():
        out += ["--globals", os.path.abspath(path)]
    return out


def resume_command(args: argparse.Namespace, run_id: str, url: str | None, questions: list[Any]) -> list[str]:
    """`chainreact runs resume RUN_ID ...` for a run checkpointed by `run --state` (or `runs resume`)."""
    cmd = ["chainreact", "runs", "resume", run_id]
    if url:
        cmd += ["--state", url]
    return [*cmd, *_global_options(args), "--answer", answer_value(questions)]


def rerun_with_state(args: argparse.Namespace, prompt_was_argument: bool, prompt: str) -> list[str]:
    """The same `chainreact run` with `--state` (the default store): a run that can wait for answers."""
    from ..state.url import default_url

    cmd = ["chainreact", "run", args.config, prompt if prompt_was_argument else "-"]
    for path in getattr(args, "load", None) or ():
        cmd += ["--load", path]
    if args.json:
        cmd.append("--json")
    return [*cmd, "--state", default_url(), *_global_options(args)]


def durable_answer_command(args: argparse.Namespace, run_id: str, questions: list[Any]) -> list[str]:
    """`chainreact durable answer RUN_ID ...` for a run of `run --temporal`."""
    cmd = ["chainreact", "durable", "answer", run_id, "--answer", answer_value(questions),
           "--temporal", str(args.temporal), "--task-queue", args.task_queue]
    if args.namespace != "default":
        cmd += ["--namespace", args.namespace]
    return cmd
