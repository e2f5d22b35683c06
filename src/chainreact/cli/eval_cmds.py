"""`chainreact eval DATASET --agent DOC` (or `--chain`, `--flow`): score a target on a dataset of cases.

    chainreact eval cases.jsonl --agent agent.json --concurrency 4 --min-pass 0.9 --judge judge.json \
        --report eval.html --baseline last.html --state sqlite:///evals.db

A table on stdout (a progress bar on stderr while it runs, on a terminal); `--json` prints
`{"cases", "passed", "pass_rate", "results": [...]}` instead. Exit 1 when the pass rate is below
`--min-pass` (a fraction, 0..1), else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .common import EXIT_FAIL, EXIT_OK, AddCommand, UsageError, add_globals, build_globals, write


def register(add: AddCommand) -> None:
    p = add("eval", cmd_eval, "score an agent, a rule chain or a flow on a dataset of cases (JSONL or YAML)")
    p.add_argument("dataset", metavar="DATASET",
                   help='cases {"name"?, "input", "expect": {...}}, JSONL or YAML')
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--agent", metavar="DOC", help="the agent document to score")
    what.add_argument("--chain", metavar="CHAIN_ID_OR_FILE", help="the rule chain to score (its answer: the "
                                                                  "last ended branch's data)")
    what.add_argument("--flow", metavar="DOC", help="the flow to score (one session per case)")
    p.add_argument("--load", action="append", default=[], metavar="CHAIN_FILE_OR_DIR",
                   help="rule chains to load (for --chain, and an agent's rulechain tools); repeatable")
    p.add_argument("--concurrency", type=int, default=4, metavar="N", help="cases run at once (default 4)")
    p.add_argument("--min-pass", type=float, default=None, metavar="F",
                   help="exit 1 when the pass rate (0..1) is below this")
    p.add_argument("--judge", default=None, metavar="DOC",
                   help="a model document that scores `judge` checks (its verdict and reason are kept)")
    p.add_argument("--state", default=None, metavar="URL",
                   help="keep every case's run in this store (export a failing one: "
                        "`chainreact runs export`)")
    p.add_argument("--report", default=None, metavar="FILE.html", help="write a self-contained HTML report")
    p.add_argument("--baseline", default=None, metavar="OLD.html",
                   help="with --report: show what changed since this earlier report")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    add_globals(p)


class Progress:
    """A one-line progress bar on stderr (only on a terminal)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.failed = total, enabled, 0

    def __call__(self, result: Any, done: int, total: int) -> None:
        self.failed += 0 if result.passed else 1
        if not self.enabled:
            return
        width = 30
        filled = int(width * done / max(total, 1))
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} cases, "
                         f"{self.failed} failed ")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def table(result: Any) -> str:
    """The terminal table: one row per case, then the totals."""
    rows = [("CASE", "RESULT", "TOKENS", "MS", "FAILED CHECKS")]
    for r in result.results:
        failed = "; ".join(f"{c['kind']}: {c.get('detail', '')}" for c in r.checks if not c["passed"])
        if r.error and not failed:
            failed = r.error
        rows.append((r.name, "pass" if r.passed else "FAIL", str(r.tokens), f"{r.ms:.0f}", failed[:100]))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(f"{row[i]:<{widths[i]}}" for i in range(4)) + "  " + row[4] for row in rows]
    lines.append(f"\n{result.passed}/{result.cases} passed ({result.pass_rate * 100:.1f}%)")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def cmd_eval(args: argparse.Namespace) -> int:
    if args.concurrency < 1:
        raise UsageError("--concurrency: at least 1")
    if args.min_pass is not None and not 0 <= args.min_pass <= 1:
        raise UsageError("--min-pass: a fraction between 0 and 1 (0.9 = 90% of the cases)")
    if args.baseline and not args.report:
        raise UsageError("--baseline compares reports: give --report FILE.html too")
    import asyncio

    from ..evals import load_dataset

    cases = load_dataset(args.dataset)
    baseline = None
    if args.baseline:
        from ..evals import read_report

        baseline = read_report(args.baseline)
    globals_ = build_globals(args.globals, args.globals_file)
    result = asyncio.run(_run(args, cases, globals_))
    data = result.to_dict()
    if args.report:
        from ..evals import write_report

        path = write_report(args.report, data, baseline, dataset=os.path.basename(args.dataset))
        write(f"report: {path}\n", sys.stderr)
    if args.json:
        write(json.dumps(data, ensure_ascii=False) + "\n")
    else:
        write(table(result))
    if args.min_pass is not None and result.pass_rate < args.min_pass:
        write(f"pass rate {result.pass_rate:.3f} is below --min-pass {args.min_pass}\n", sys.stderr)
        return EXIT_FAIL
    return EXIT_OK


async def _run(args: argparse.Namespace, cases: list[Any], globals_: dict[str, Any]) -> Any:
    from ..evals import Judge, run_eval

    closers: list[Any] = []
    store = None
    try:
        target = _target(args, globals_, closers)
        judge = None
        if args.judge:
            from ..chains.agent_doc import agent_from_document

            judge = Judge(agent_from_document(args.judge, globals=globals_))
            closers.append(judge.agent.aclose)
        if args.state and not args.flow:  # a flow keeps its turns in its own store (--state is its store)
            from ..state import open_store

            store = await open_store(args.state)
        progress = Progress(len(cases), sys.stderr.isatty() and not args.json)
        return await run_eval(cases, target, concurrency=args.concurrency, judge=judge, store=store,
                              on_done=progress)
    finally:
        for close in reversed(closers):
            result = close()
            if hasattr(result, "__await__"):
                await result
        if store is not None:
            await store.close()


def _target(args: argparse.Namespace, globals_: dict[str, Any], closers: list[Any]) -> Any:
    from ..evals import AgentTarget, ChainTarget, FlowTarget

    if args.agent:
        from ..chains.agent_doc import agent_from_document

        agent = agent_from_document(args.agent, globals=globals_, load=args.load)
        closers.append(agent.aclose)
        return AgentTarget(agent)
    if args.chain:
        from ..chains import RuleEngine

        engine = RuleEngine(properties=globals_)
        closers.append(engine.close)
        for path in args.load:
            engine.load_path(path)
        chain_id = args.chain
        if os.path.isfile(chain_id):
            chain_id = engine.load(os.path.abspath(chain_id)).id
        elif engine.get(chain_id) is None:
            raise UsageError(f"--chain {chain_id!r}: neither a chain file nor a loaded chain id")
        return ChainTarget(engine, chain_id)
    from ..flows import Flow

    flow = Flow.load(args.flow, state=args.state or "sqlite:///:memory:")
    closers.append(flow.aclose)
    return FlowTarget(flow, kept=bool(args.state))


__all__ = ["Progress", "cmd_eval", "register", "table"]
