"""The shared RuleGo conformance cases (tests/chains/test_conformance.py) through durable chain runs on the
real dev server: the workflow's traversal and the node activities give the ends the cases expect.

The cases whose chains use the nodes that run in the workflow (fork, join, end, flow, for, groupFilter,
groupAction) run here, a dozen at a time (each case its own engine, worker and task queue); the others
only add node activities of the same kind. All 85 (about a minute on a loaded machine):
CHAINREACT_DURABLE_CONFORMANCE=all."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from typing import Any

import pytest

from chainreact.durable import ChainHost, DurableChain, durable_chain_worker

from ..chains.rulego_cases import SHARED, engine_for, input_msg, load_cases, match_ends

ROUTING = {"fork", "join", "end", "flow", "for", "groupFilter", "groupAction"}
AT_ONCE = 12


def _routing(case: dict[str, Any]) -> bool:
    for name in case["chains"]:
        doc = json.loads((SHARED / "chains" / name).read_text())
        if any(n.get("type") in ROUTING for n in doc["metadata"]["nodes"]):
            return True
    return False


ALL = load_cases()
CASES = ALL if os.environ.get("CHAINREACT_DURABLE_CONFORMANCE") == "all" else [c for c in ALL if _routing(c)]


@pytest.mark.skipif(not ALL, reason="../shared/rulego is not there (outside CI)")
async def test_rulego_cases_durable(temporal_client: Any) -> None:
    gate = asyncio.Semaphore(AT_ONCE)

    async def one(case: dict[str, Any]) -> str | None:
        queue = f"rulego-{uuid.uuid4().hex[:12]}"
        async with gate, durable_chain_worker(temporal_client, queue, ChainHost(engine_for(case))):
            ends = await DurableChain(case["chain"], client=temporal_client, task_queue=queue).run(
                input_msg(case), timeout=30)
        problems = match_ends(case, ends)
        return f"{case['name']} ({case['source']}): " + " | ".join(problems) if problems else None

    assert len(CASES) >= 20  # the routing cases are there
    results = await asyncio.gather(*(one(c) for c in CASES))
    failed = [r for r in results if r]
    assert not failed, f"{len(failed)} of {len(CASES)} cases differ:\n" + "\n".join(failed)
