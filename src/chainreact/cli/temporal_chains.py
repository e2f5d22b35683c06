"""Rule chains on Temporal from the command line: `chainreact worker` serving chain files next to agent
documents, and `chainreact chain run CHAIN --temporal ...` (cli/chain_cmds.py) running one message durably.

    chainreact worker agent.json chain.json chains/ --temporal 127.0.0.1:7233 --task-queue q
    chainreact worker examples/ --temporal ...     # a folder: its agents, chains and flows, as `serve`
    chainreact chain run chain.json --data '...' --temporal 127.0.0.1:7233 --task-queue q [--json]
    chainreact chain run chain.json --stream --temporal ... --state URL    # frames live, from the store
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .common import UsageError, one_line, run_with_temporal_client, write


@dataclass
class WorkerDocuments:
    """What `chainreact worker` serves: agents, the engine holding the chains (None without chains), flows."""

    agents: list[Any] = field(default_factory=list)
    engine: Any = None
    chains: list[str] = field(default_factory=list)  # the chains' ids
    flows: list[Any] = field(default_factory=list)


def load_documents(paths: list[str], globals_: dict[str, Any], load: list[str], store: Any
                   ) -> WorkerDocuments:
    """The documents of `chainreact worker`'s arguments, files and folders, read as `chainreact serve`
    reads them (config.find_documents: told apart by shape, chains first). A named file that does not load
    is an error; a document in a folder that does not load is reported on stderr and left out, as `serve`
    does."""
    from ..chains import agent_from_document
    from ..config import find_documents
    from ..errors import ConfigError

    found = find_documents(paths)
    out = WorkerDocuments()
    for line in found.broken:  # files in folders that do not parse
        write(f"not loaded: {one_line(line)}\n", sys.stderr)
    for doc in found.documents:
        try:
            if doc.kind == "chain":
                if out.engine is None:
                    from ..chains import RuleEngine

                    out.engine = RuleEngine(properties=globals_)
                out.chains.append(out.engine.load(doc.path).id)
            elif doc.kind == "agent":
                out.agents.append(agent_from_document(doc.path, globals=globals_, load=load,
                                                      engine=out.engine))
            else:
                from ..flows import Flow

                out.flows.append(Flow.load(doc.path, store=store))
        except ConfigError as e:
            if not doc.in_folder:
                raise
            write(f"not loaded: {doc.path}: {one_line(str(e))}\n", sys.stderr)
    return out


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
