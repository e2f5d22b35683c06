"""Durable runs on Temporal: `chainreact worker`, `chainreact run ... --temporal`, `chainreact durable ...`.

    chainreact worker agent.json [more.json ...] --temporal 127.0.0.1:7233 --task-queue agents \
        [--state URL]
    chainreact run agent.json "prompt" --temporal 127.0.0.1:7233 --task-queue agents \
        [--json | --jsonl --state URL]
    chainreact worker support.json --temporal ... --state URL        # a flow: its turns as workflows
    chainreact flow send support.json "text" --session s1 --temporal ... [--json | --jsonl --state URL]
    chainreact durable answer RUN_ID --answer '{"call_1": "yes"}' --temporal ...
    chainreact durable cancel RUN_ID [--mode after_tools] [--timeout 30] --temporal ...

Everything of Temporal is imported inside the commands (the `temporal` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .common import (
    EXIT_FAIL,
    EXIT_OK,
    AddCommand,
    UsageError,
    add_globals,
    build_globals,
    run_with_temporal_client,
    write,
)

ENV_ADDRESS = "CHAINREACT_TEMPORAL"
DEFAULT_QUEUE = "chainreact"


def add_connection(p: argparse.ArgumentParser, *, required: bool) -> None:
    if required:
        p.add_argument("--temporal", default=os.environ.get(ENV_ADDRESS), metavar="ADDRESS",
                       help=f"Temporal frontend host:port (default: ${ENV_ADDRESS})")
    else:
        p.add_argument("--temporal", default=None, metavar="ADDRESS",
                       help="Temporal frontend host:port: the run is durable, executed by a "
                       "`chainreact worker`")
    p.add_argument("--task-queue", default=DEFAULT_QUEUE, metavar="QUEUE",
                   help=f"the workers' task queue (default {DEFAULT_QUEUE!r})")
    p.add_argument("--namespace", default="default", help="Temporal namespace (default 'default')")


def add_run_options(p: argparse.ArgumentParser, *, wait: bool = False) -> None:
    """The durable options of `chainreact run` (agent_cmds registers them on its parser, with `--wait`) and
    of `chain run`."""
    add_connection(p, required=False)
    if wait:
        p.add_argument("--wait", type=float, default=None, metavar="SECONDS",
                       help="with --temporal: give up when no worker took the run within SECONDS (exit 5; "
                            "the run stays queued for a worker started later)")


def _address(args: argparse.Namespace) -> str:
    if not args.temporal:
        raise UsageError(f"no Temporal address: give --temporal HOST:PORT or set ${ENV_ADDRESS}")
    return str(args.temporal)


# -- worker -----------------------------------------------------------------------------------------

def cmd_worker(args: argparse.Namespace) -> int:
    return run_with_temporal_client(lambda: _worker(args))


async def _worker(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from ..durable import AgentHost, FlowHost, connect, durable_worker
    from .temporal_chains import load_documents

    globals_ = build_globals(args.globals, args.globals_file)
    store = None
    if args.state:
        from ..state import open_store

        store = await open_store(args.state)
    try:
        # Files and folders read as `chainreact serve` reads them (config.find_documents): chains, agents
        # and flows (their turns are workflows too: docs/durable.md, "Chat flows").
        docs = load_documents(args.config, globals_, list(getattr(args, "load", None) or ()), store)
        if not (docs.agents or docs.chains or docs.flows):
            raise UsageError(f"worker: nothing to serve in {' '.join(args.config)}")
        host: Any = AgentHost(docs.agents, store=store)
        extras: dict[str, Any] = {}
        if docs.engine is not None:  # a ChainHost: the chains, and the agents
            from ..durable import ChainHost, chain_worker_extras

            host = ChainHost(docs.engine, docs.agents, store=store)
            extras = chain_worker_extras(host)
        flow_host = FlowHost(docs.flows) if docs.flows else None
        client = await connect(_address(args), namespace=args.namespace)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with durable_worker(client, args.task_queue, host, flows=flow_host,
                                  max_concurrent_activities=args.max_activities, **extras):
            flows = [f"flow {f}" for f in sorted(flow_host.flows)] if flow_host is not None else []
            names = ", ".join([*sorted(host.agents), *sorted(docs.chains), *flows])
            write(f"worker ready: {names} on task queue {args.task_queue!r} at {args.temporal} "
                  f"(pid {os.getpid()})\n", sys.stderr)
            await stop.wait()
    finally:
        if store is not None:
            await store.close()
    return EXIT_OK


# -- run --------------------------------------------------------------------------------------------

def cmd_run_durable(args: argparse.Namespace, prompt: str) -> int:
    """`chainreact run DOC PROMPT --temporal ...`: the run is a workflow; a worker serving the document's
    agent (by name) executes it. Same output as an in-process run."""
    return run_with_temporal_client(lambda: _run(args, prompt))


async def _run(args: argparse.Namespace, prompt: str) -> int:
    from ..config import resolve_agent_config
    from ..durable import DurableAgent, connect

    streaming = bool(args.jsonl or args.stream)
    if streaming and not args.state:
        raise UsageError("--jsonl/--stream with --temporal read the run's events from the workers' state "
                         "store: give --state URL (the workers' --state)")
    doc = resolve_agent_config(args.config, build_globals(args.globals, args.globals_file))
    name = doc.name  # the workers serve the document's agent by this name (chains.agent_from_document)
    client = await connect(_address(args), namespace=args.namespace)
    durable = DurableAgent(name, client=client, task_queue=args.task_queue)
    run = await durable.start(prompt, stream=streaming)
    from .temporal_wait import follow  # asyncio: not at --help time

    return await follow(client, args, run, lambda: _follow(args, run, streaming))


async def _follow(args: argparse.Namespace, run: Any, streaming: bool) -> int:
    from .run_outcome import durable_answer_command, is_empty, report_empty, report_waiting

    status = EXIT_OK
    if streaming:
        from ..state import open_store

        async with await open_store(args.state) as store:
            async for ev in run.events(store):
                if args.jsonl:
                    write(json.dumps(ev, ensure_ascii=False) + "\n")
                elif ev.get("type") == "text_delta":
                    write(str(ev.get("text", "")))
                elif ev.get("type") == "stream_reset":  # a retried model call: its text starts over
                    write("\n")
                    write(f"[model call retried (attempt {ev.get('attempt')}): its text starts again]\n",
                          sys.stderr)
                if ev.get("type") in ("error", "cancelled"):
                    status = EXIT_FAIL
    result = await run.result()
    if args.json:
        write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
    elif args.stream:
        write("\n")
    if result.stop_reason == "interrupted" and result.interruption is not None:
        questions = list(result.interruption.questions)
        return report_waiting(questions, f"for an answer (durable run {run.run_id})",
                              durable_answer_command(args, run.run_id, questions))
    if result.stop_reason == "cancelled" or status != EXIT_OK:
        return EXIT_FAIL
    if is_empty(result.content):
        return report_empty(result.stop_reason, result.steps)
    if not (args.json or args.jsonl or args.stream):
        write(result.content + ("" if result.content.endswith("\n") else "\n"))
    return EXIT_OK


# -- flow send -----------------------------------------------------------------------------------------

def cmd_flow_send_durable(args: argparse.Namespace, text: str, user: dict[str, Any] | None,
                          group: dict[str, Any] | None) -> int:
    """`chainreact flow send FLOW TEXT --temporal ...`: the turn is a workflow; a worker hosting the flow
    (by id) runs it. Same output as an in-process turn."""
    return run_with_temporal_client(lambda: _flow_turn(args, text, user, group))


async def _flow_turn(args: argparse.Namespace, text: str, user: dict[str, Any] | None,
                     group: dict[str, Any] | None) -> int:
    from ..durable import DurableFlow, connect
    from ..flows.validate import load_flow

    if args.jsonl and not args.state:
        raise UsageError("--jsonl with --temporal reads the turn's events from the workers' state store: "
                         "give --state URL (the workers' --state)")
    from ..config import fallback_id
    from ..config.loader import read_document

    data, source = read_document(args.flow)
    definition = load_flow(data, source=source)
    flow_id = definition.id or definition.name or fallback_id(source, "flow")  # as the worker hosts it
    client = await connect(_address(args), namespace=args.namespace)
    durable = DurableFlow(flow_id, client=client, task_queue=args.task_queue)
    if args.jsonl:
        from ..state import open_store

        async with await open_store(args.state) as store:
            turn = await durable.start(args.session, text, user=user, group=group)
            async for ev in turn.events(store):
                write(json.dumps(ev, ensure_ascii=False, default=str) + "\n")
            await turn.result()
        return EXIT_OK
    result = await durable.send(args.session, text, user=user, group=group)
    if args.json:
        write(json.dumps(result.to_dict(), ensure_ascii=False, default=str) + "\n")
        return EXIT_OK
    for m in result.messages:
        write(m.content + ("" if m.content.endswith("\n") else "\n"))
    where = "flow ended" if result.ended else f"waiting at node {result.node!r}"
    write(f"[{where}]\n", sys.stderr)
    return EXIT_OK


# -- durable answer / cancel / status ------------------------------------------------------------------

def cmd_durable(args: argparse.Namespace) -> int:
    return run_with_temporal_client(lambda: _durable(args))


async def _durable(args: argparse.Namespace) -> int:
    from ..durable import DurableAgent, connect

    client = await connect(_address(args), namespace=args.namespace)
    run = await DurableAgent("", client=client, task_queue=args.task_queue).get(args.run_id)
    if args.action == "answer":
        return await _answer(args, run)
    if args.action == "cancel":
        await run.cancel(args.mode, timeout=args.timeout)
        write(f"{args.run_id}: cancel ({args.mode}) requested\n")
        return EXIT_OK
    write(json.dumps(await _status(run), ensure_ascii=False) + "\n")
    return EXIT_OK


async def _status(run: Any) -> dict[str, Any]:
    """The run's status: the workflow's `status` query while a worker runs it; without asking a worker when
    none took it yet (`queued`) or when it has ended (a query would wait for a worker to replay it). A run
    that is done has its `answer`."""
    from temporalio.client import WorkflowExecutionStatus as S

    d = await run.handle.describe()
    if d.status == S.RUNNING and d.history_length <= 2:  # started and scheduled: no worker took it yet
        return {"status": "queued", "questions": [], "step": 0}
    if d.status == S.RUNNING:
        status: dict[str, Any] = await run.status()
        if status.get("status") == "done":
            status["answer"] = (await run.result()).content
        return status
    if d.status == S.COMPLETED:
        result = await run.result()
        return {"status": "cancelled" if result.stop_reason == "cancelled" else "done", "questions": [],
                "step": result.steps, "answer": result.content}
    return {"status": "cancelled" if d.status == S.CANCELED else "failed", "questions": [], "step": None}


async def _answer(args: argparse.Namespace, run: Any) -> int:
    """Answer the run's questions (`--answer` as `runs resume` takes it), then follow the run to its next
    stop: print its answer, or what it waits for next."""
    from ..agent.interrupt import Question
    from .run_outcome import durable_answer_command, is_empty, report_empty, report_waiting
    from .run_state import parse_answers

    if args.answer is None:
        raise UsageError("durable answer: give --answer (a JSON object by question id, or the one answer)")
    status = await run.status()
    questions = [Question(q["id"], q.get("kind", ""), q.get("question", ""), q.get("tool", ""),
                          q.get("arguments", ""), q.get("schema")) for q in status.get("questions") or []]
    if not questions:
        raise UsageError(f"run {args.run_id!r} is {status.get('status')}: it asks nothing to answer")
    answers = parse_answers(args.answer, questions)
    await run.answer(answers)
    write(f"{args.run_id}: answered {', '.join(sorted(answers))}\n", sys.stderr)
    result = await run.result()
    if result.stop_reason == "interrupted" and result.interruption is not None:
        again = list(result.interruption.questions)
        return report_waiting(again, f"for an answer again (durable run {args.run_id})",
                              durable_answer_command(args, args.run_id, again))
    if result.stop_reason == "cancelled":
        write(f"error: run {args.run_id} was cancelled\n", sys.stderr)
        return EXIT_FAIL
    if is_empty(result.content):
        return report_empty(result.stop_reason, result.steps)
    write(result.content + ("" if result.content.endswith("\n") else "\n"))
    return EXIT_OK


def register(add: AddCommand) -> None:
    p = add("worker", cmd_worker, "serve agent documents, rule chains and chat flows to durable runs on a "
                                  "Temporal task queue")
    p.add_argument("config", nargs="+", help="agent document(s), rule chain files or folders and flow "
                   "documents (JSON or YAML); each agent by its name, each chain and flow by its id")
    add_connection(p, required=True)
    p.add_argument("--state", default=None, metavar="URL",
                   help="state store for the runs' event logs (streaming to callers) and the flows' "
                   "sessions; optional for agents")
    p.add_argument("--load", action="append", default=[], metavar="CHAIN_FILE_OR_DIR",
                   help="rule chains for rulechain tools. Repeatable.")
    p.add_argument("--max-activities", type=int, default=200, help="concurrent model/tool calls (200)")
    add_globals(p)

    p = add("durable", cmd_durable, "answer, cancel or inspect a durable run")
    p.add_argument("action", choices=("answer", "cancel", "status"))
    p.add_argument("run_id")
    p.add_argument("--answer", default=None, metavar="JSON",
                   help="answer: a JSON object by question id, or the one question's answer (text that is "
                        "not JSON is a string; an approval: approve or reject); then the run's answer is "
                        "printed")
    p.add_argument("--mode", default="immediate", help="immediate, after_model, after_tools (cancel)")
    p.add_argument("--timeout", type=float, default=None, help="escalate to immediate after N s (cancel)")
    add_connection(p, required=True)
