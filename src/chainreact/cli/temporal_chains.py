"""Rule chains on Temporal from the command line: `chainreact worker` serving chain files next to agent
documents, and `chainreact chain run CHAIN --temporal ...` (cli/chain_cmds.py) running one message durably.

    chainreact worker agent.json chain.json chains/ --temporal 127.0.0.1:7233 --task-queue q
    chainreact chain run chain.json --data '...' --temporal 127.0.0.1:7233 --task-queue q [--json]
    chainreact chain run chain.json --stream --temporal ... --state URL    # frames live, from the store
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from .common import UsageError, run_with_temporal_client


def split_documents(paths: list[str]) -> tuple[list[str], list[str]]:
    """(agent documents, chain files or folders) of `chainreact worker`'s arguments, told apart by shape."""
    from ..config import detect_document_kind
    from ..config.loader import read_document

    agents: list[str] = []
    chains: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            chains.append(path)  # a folder of chain files, as `chain run --load DIR`
            continue
        data, source = read_document(path)
        kind = detect_document_kind(data, source=source)
        if kind == "chain":
            chains.append(path)
        elif kind == "agent":
            agents.append(path)
        else:
            raise UsageError(f"{path}: a {kind} document: `chainreact worker` serves agents and rule chains")
    return agents, chains


def chain_host(chain_paths: list[str], globals_: dict[str, Any], agents: list[Any], store: Any) -> Any:
    """A ChainHost with the chains loaded (every problem of every file at once) and the agents."""
    from ..chains import RuleEngine
    from ..durable import ChainHost

    engine = RuleEngine(properties=globals_)
    for path in chain_paths:
        engine.load_path(path)
    return ChainHost(engine, agents, store=store)


def run_chain_durable(args: argparse.Namespace, chain_id: str, msg: Any,
                      on_stream: Callable[[Any], None]) -> list[Any]:
    """One message through chain `chain_id` as a workflow executed by a worker: its ends; its Stream
    frames to `on_stream`, as the workers log them with --state (the workers' store), else at the end."""
    from ..durable import DurableChain, connect

    if not args.temporal:
        raise UsageError("no Temporal address: give --temporal HOST:PORT")
    if args.debug_nodes:
        raise UsageError("--debug-nodes is not available with --temporal (node debug events stay in-process)")
    live = bool(args.state) and bool(args.stream or args.jsonl)

    async def go() -> list[Any]:
        client = await connect(str(args.temporal), namespace=args.namespace)
        run = await DurableChain(chain_id, client=client, task_queue=args.task_queue).start(
            msg, timeout=args.timeout, stream=live)
        if live:
            from ..state import open_store

            async with await open_store(args.state) as store:
                async for frame in run.stream(store):
                    on_stream(frame)
        ends = await run.result()
        if not live:
            for frame in run.frames:
                on_stream(frame)
        return ends

    return run_with_temporal_client(go)
