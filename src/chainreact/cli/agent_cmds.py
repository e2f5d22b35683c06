"""Agent commands: run, validate, schema, complete."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import (
    EXIT_FAIL,
    EXIT_OK,
    AddCommand,
    add_globals,
    build_globals,
    notices_shown_as_events,
    read_input,
    write,
)
from .run_outcome import is_empty, report_empty, report_waiting, rerun_with_state


def cmd_schema(args: argparse.Namespace) -> int:
    if getattr(args, "flow", False):
        from ..flows import flow_json_schema  # the flow document with its node kinds

        schema = flow_json_schema()
    else:
        from ..tools.descriptors import document_json_schema  # the agent document + typed tool descriptors

        schema = document_json_schema()
    print(json.dumps(schema, indent=2, ensure_ascii=False))
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    """Each document is told apart by its shape (config.detect_document_kind): an agent is checked here,
    a rule chain or a flow by its wing (chainreact.chains / chainreact.flows `validate`) when installed."""
    from ..errors import ConfigError

    status = EXIT_OK
    for path, unparsed in _validate_paths(args.config):
        if unparsed:  # a file of a folder that does not parse (config.find_documents)
            status = EXIT_FAIL
            print(f"error: {unparsed}", file=sys.stderr)
            continue
        try:
            line = _validate_one(path, lenient=getattr(args, "lenient", False))
        except ConfigError as e:
            status = EXIT_FAIL
            if e.errors:
                where = e.source or path
                for json_path, msg in e.errors:
                    print(f"{where}: {json_path}: {msg}", file=sys.stderr)
            else:
                print(f"error: {e}", file=sys.stderr)
            continue
        print(f"{path}: ok ({line})")
    return status


def _validate_paths(paths: list[str]) -> list[tuple[str, str]]:
    """(file, "") for each file given and each document of a folder given, read as `serve` reads folders
    (config.find_documents); ("", "file: why") for a file there that does not parse. A file there that is
    no document (a package.json) is said skipped on stderr."""
    from pathlib import Path

    from ..config import find_documents

    out: list[tuple[str, str]] = []
    for path in paths:
        if not Path(path).is_dir():
            out.append((path, ""))
            continue
        found = find_documents([path])
        out += sorted((str(d.path), "") for d in found.documents)
        out += [("", line) for line in found.broken]
        for line in found.skipped:
            print(f"skipped: {line.split('. Expected')[0]}", file=sys.stderr)
    return out


def _validate_one(path: str, *, lenient: bool = False) -> str:
    """An agent document: its shape and fields (unknown ones are errors unless lenient), its tools, its
    `${...}` templates and includes, and its `agent` tools' targets, all reported at once."""
    import warnings

    from ..agent import sub_agent_problems
    from ..config import (
        UnknownFieldWarning,
        detect_document_kind,
        fallback_id,
        load_document,
        template_problems,
    )
    from ..config.loader import read_document
    from ..errors import ConfigError
    from ..tools.check import descriptor_problems

    data, source = read_document(path)
    kind = detect_document_kind(data, source=source)
    if kind != "agent":
        return _validate_wing(kind, data, source)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownFieldWarning)
        doc = load_document(data, source=source, lenient=lenient)
    for w in caught:
        if issubclass(w.category, UnknownFieldWarning):
            print(f"warning: {w.message}", file=sys.stderr)
    cfg = doc.config
    body = data["configuration"] if doc.json_prefix != "$" else data
    problems = [*descriptor_problems(cfg.tools, f"{doc.json_prefix}.tools"),
                *template_problems(body, doc.json_prefix, doc.base_dir),
                *sub_agent_problems(doc)]
    if problems:
        raise ConfigError(f"{source}: {len(problems)} problem(s)", source=source, errors=problems)
    target = cfg.url or "the embedded local model"
    ident = doc.id or fallback_id(source, "agent")  # the id `serve` lists it under
    given = cfg.name or (data.get("name") if isinstance(data, dict) else None)  # not the default 'agent'
    named = f" (name {given!r})" if given and given != ident else ""
    return f"agent {ident!r}{named}, {len(cfg.tools)} tool(s), model endpoint: {target}"


def _validate_wing(kind: str, data: Any, source: str | None) -> str:
    """A rule chain or a flow: validated by its wing's `validate(data, source=...) -> str` if installed."""
    import importlib

    label, module = {"chain": ("rule chain", "chainreact.chains"), "flow": ("flow", "chainreact.flows")}[kind]
    try:
        wing = importlib.import_module(module)
    except ImportError:
        wing = None
    validate = getattr(wing, "validate", None)
    if validate is None:
        return f"{label} (engine not installed: only its shape was checked)"
    summary = validate(data, source=source)
    if kind == "chain":
        _warn_agent_node_fields(data, source)
    return f"{label}{': ' + summary if summary else ''}"


def _warn_agent_node_fields(data: Any, source: str | None) -> None:
    """A rule chain's ai/agent nodes keep foreign keys, as every RuleGo node does (the chain loads); a
    misspelt field is still worth a warning, with the closest field."""
    from ..config.loader import unknown_fields

    nodes = (data.get("metadata") or {}).get("nodes") or []
    for i, node in enumerate(nodes if isinstance(nodes, list) else []):
        config = node.get("configuration") if isinstance(node, dict) else None
        if isinstance(config, dict) and node.get("type") == "ai/agent":
            for path, msg in unknown_fields(config, f"$.metadata.nodes[{i}].configuration"):
                print(f"warning: {source}: {path}: {msg}, ignored (a rule chain keeps foreign keys)",
                      file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> int:
    import asyncio

    prompt = read_input(args.prompt)
    if getattr(args, "temporal", None):  # durable: a worker runs it (cli/temporal_cmds.py)
        from .temporal_cmds import cmd_run_durable

        return cmd_run_durable(args, prompt)
    doc, globals_ = resolve_document(args)
    try:
        return asyncio.run(_run(args, prompt, doc, globals_))
    finally:
        _stop_local_if_started()


def _stop_local_if_started() -> None:
    # Only if this run imported it: importing it here just to stop nothing would cost time.
    mod = sys.modules.get("chainreact.local")  # its face loads the server module
    if mod is not None:
        mod.stop_local_sync()


def resolve_document(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The document of `run`/`complete` with its templates rendered (the one path: config.resolve), and
    the globals; says once on stderr when the run will use the embedded local model."""
    from ..config import as_document, env_endpoint, resolve_agent_config, uses_embedded_model

    globals_ = build_globals(args.globals, args.globals_file)
    raw = as_document(args.config)
    doc = resolve_agent_config(raw, globals_)
    if uses_embedded_model(doc.config):
        write(f"note: {args.config}: no url (or url 'local'): using the embedded local model\n", sys.stderr)
    elif not raw.config.url.strip() and env_endpoint() is not None:
        write(f"note: {args.config}: no url: using {doc.config.url} (OPENAI_BASE_URL / OPENAI_API_KEY), "
              f"model {doc.config.model}\n", sys.stderr)
    return doc, globals_


async def _run(args: argparse.Namespace, prompt: str, doc: Any, globals_: dict[str, Any]) -> int:
    from ..chains.agent_doc import agent_from_document

    load = list(getattr(args, "load", None) or ())
    agent = agent_from_document(doc, globals=globals_, load=load)
    try:
        if args.state or args.session:  # checkpointed, with the session's history (cli/run_state.py)
            from .run_state import run_with_state

            return await run_with_state(agent, prompt, url=args.state, session=args.session,
                                        document=args.config, load=load, as_json=args.json,
                                        stream=args.stream, args=args)
        if args.jsonl:
            return await _run_jsonl(agent, prompt, args)
        if args.stream:
            return await _run_stream(agent, prompt, args)
        result = await agent.run(prompt)
        if args.json:
            write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
        if result.stop_reason == "interrupted" and result.interruption is not None:
            return _waiting_without_state(args, prompt, result.interruption.questions)
        if is_empty(result.content):
            return report_empty(result.stop_reason, result.steps)
        if not args.json:
            write(result.content + ("" if result.content.endswith("\n") else "\n"))
        if isinstance(warning := result.metadata.get("warning"), dict):  # not a normal answer: say so
            write(f"warning: {warning.get('message')}\n", sys.stderr)
        return EXIT_OK
    finally:
        await agent.aclose()


def _waiting_without_state(args: argparse.Namespace, prompt: str, questions: list[Any]) -> int:
    """A run without a store stopped to ask: nothing was kept, so it is run again with --state."""
    from_arg = args.prompt not in (None, "-")
    stdin = "" if from_arg else " (with the same prompt on stdin)"
    return report_waiting(
        questions, "for an answer, but without --state nothing of it was kept, so it cannot go on",
        rerun_with_state(args, from_arg, prompt),
        f"  (run again with a store{stdin}: it stops at the same point and prints the command that answers)")


async def _run_jsonl(agent: Any, prompt: str, args: argparse.Namespace) -> int:
    status = EXIT_OK
    notices_shown_as_events(_EVENT_LOGGERS)
    async for event in agent.stream(prompt):
        write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
        status = _end_status(event, status, args, prompt)
    return status


def _end_status(event: Any, status: int, args: argparse.Namespace, prompt: str) -> int:
    """The exit status after a streamed event: a failure, a run waiting to be answered, an empty answer."""
    if event.type in ("error", "cancelled"):
        return EXIT_FAIL
    if len(event.path) > 1:  # a sub-agent's (path: the nested agents, outermost first)
        return status
    if event.type == "interrupted":
        return _waiting_without_state(args, prompt, list(event.questions))
    if event.type == "final" and is_empty(event.content):
        return report_empty(event.stop_reason, getattr(event, "step", None))
    return status


# The model client logs retries and failovers; streaming commands show them as events instead.
_EVENT_LOGGERS = "chainreact.llm"


def _short(text: str, limit: int = 300) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


async def _run_stream(agent: Any, prompt: str, args: argparse.Namespace) -> int:
    """Human streaming: answer text to stdout as it arrives; tool calls, results, reasoning and resilience
    notices to stderr, one line each, so `> file` captures only the answer."""
    err = sys.stderr
    status = EXIT_OK
    text_open = False  # whether stdout holds text without a trailing newline
    for_final = ""
    notices_shown_as_events(_EVENT_LOGGERS)
    try:
        async for event in agent.stream(prompt):
            t = event.type
            if t == "text_delta":
                write(event.text)
                for_final += event.text
                text_open = bool(event.text) and not event.text.endswith("\n")
                continue
            if text_open and t in ("tool_call", "tool_result", "retry", "failover", "breaker", "warning",
                                   "error"):
                write("\n")
                text_open = False
            if t == "reasoning_delta":
                write(event.text, err)
            elif t == "tool_call":
                for_final = ""  # text before a tool call was a preamble, not the answer
                write(f"→ {event.call.name}({event.call.arguments})\n", err)
            elif t == "tool_result":
                mark = "✗" if event.is_error else "←"
                write(f"{mark} {event.name}: {_short(event.content)}\n", err)
            elif t == "retry":
                delay = f"{event.delay:.1f}s"
                write(f"! retry {event.attempt} on {event.endpoint} in {delay}: {event.error}\n", err)
            elif t == "failover":
                write(f"! failover {event.from_endpoint} -> {event.to_endpoint}: {event.error}\n", err)
            elif t == "breaker":
                write(f"! circuit breaker {event.endpoint}: {event.previous} -> {event.state}\n", err)
            elif t == "warning":
                write(f"warning: {event.message}\n", err)
            elif t == "final":
                # If the answer was not streamed as deltas (e.g. a non-streamed tool step), print it now.
                if event.content and not for_final:
                    write(event.content)
                    text_open = not event.content.endswith("\n")
            elif t == "error":
                write(f"error: {event.error}\n", err)
            elif t == "cancelled":
                write("cancelled\n", err)
            status = _end_status(event, status, args, prompt)
    except Exception:
        # The error event already printed `error: ...` once; the exception that ends the stream is the same
        # error, which main() would print a second time.
        if status != EXIT_FAIL:
            raise
    if text_open:
        write("\n")
    return status


def cmd_complete(args: argparse.Namespace) -> int:
    from ..config import render_run_texts
    from ..llm.cli import complete_main

    prompt = read_input(args.prompt)
    doc, globals_ = resolve_document(args)
    try:
        return complete_main(render_run_texts(doc, globals_), prompt, stream=args.stream, as_json=args.json)
    finally:
        _stop_local_if_started()


def register(add: AddCommand) -> None:
    p = add("run", cmd_run, "run an agent document on a prompt")
    p.add_argument("config", help="agent document (JSON or YAML)")
    p.add_argument("prompt", nargs="?", help="the user input; '-' or omitted with a pipe = read stdin")
    p.add_argument("--stream", action="store_true", help="print text as it arrives, tool activity on stderr")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print one JSON object for the run")
    fmt.add_argument("--jsonl", action="store_true", help="print one JSON object per event")
    p.add_argument("--load", action="append", default=[], metavar="CHAIN_FILE_OR_DIR",
                   help="rule chains for rulechain/agent tools and the MCP 'self' provider. Repeatable.")
    p.add_argument("--state", default=None, metavar="URL",
                   help="checkpoint the run in this store (resumable: `chainreact runs resume`)")
    p.add_argument("--session", default=None, metavar="KEY",
                   help="conversation history loaded from and saved to the store")
    add_globals(p)
    from .temporal_cmds import add_run_options

    add_run_options(p, wait=True)  # --temporal ADDRESS --task-queue Q [--wait S]: durably, on a worker

    p = add("validate", cmd_validate, "check agent, rule chain and flow documents (files or folders); exit 1 "
            "listing each error's JSON path")
    p.add_argument("config", nargs="+", help="agent, rule chain or flow documents, or folders of them")
    p.add_argument("--lenient", action="store_true",
                   help="unknown fields of agent documents are warnings, not errors (documents that carry "
                   "another tool's fields; a document can say so itself: \"unknownFields\": \"warn\")")

    p = add("schema", cmd_schema,
            "print the JSON Schema of agent documents, or with --flow of flow documents (for editors)")
    p.add_argument("--flow", action="store_true", help="the flow document's schema (as `flow schema`)")

    p = add("complete", cmd_complete, "one model call (no tools) with an agent document's endpoint")
    p.add_argument("config", help="agent document (JSON or YAML)")
    p.add_argument("prompt", nargs="?", help="the user input; '-' or omitted with a pipe = read stdin")
    p.add_argument("--stream", action="store_true", help="print text as it arrives, reasoning on stderr")
    p.add_argument("--json", action="store_true", help="print one JSON object for the call")
    add_globals(p)
