"""What a durable chain run's workflow knows of its chains: a JSON snapshot taken by the plan activity.

The workflow runs the chain's traversal (chainreact.chains.context: routing, fork, join, end nodes, the
node budget, sub-chains) over a copy of the chain's graph built from this snapshot. Which node runs where:

- WORKFLOW_TYPES run in the workflow: they only route or orchestrate other nodes (fork, join, end, flow,
  for, groupFilter, groupAction, msgTypeSwitch), or wait (delay: a durable timer, which no worker holds
  and a worker restart does not start again). Their configuration is in the snapshot.
- AGENT_TYPES (`ai/agent`, `ai/llm`) run as a child agent workflow (`chainreact.agent`), so each model and
  tool call is its own activity; with metadata `stream=true` or `sessionKey` they run as one node activity.
- every other node runs as one activity (`chainreact.chain.node`) in a worker that loaded the chain.

The snapshot is in the history: a run keeps the graph it started with when workers reload the chain.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from ..chains.engine import Chain, RuleEngine

JSON = dict[str, Any]

WORKFLOW_TYPES = frozenset({"fork", "join", "end", "flow", "for", "groupFilter", "groupAction",
                            "msgTypeSwitch", "delay"})
AGENT_TYPES = frozenset({"ai/agent", "ai/llm"})
AGENT_KEY_PREFIX = "chain:"
# An event of a run's frames log: {"type", "msg": a Stream frame, "node", "key": the node activity's id,
# "attempt": its attempt}.
FRAME_EVENT = "stream"


def frames_log(run_id: str) -> str:
    """The state store's event log where the workers append a durable chain run's Stream frames live."""
    return f"{run_id}/frames"


def agent_key(chain_id: str, node_id: str, model: str = "", extra: str = "") -> str:
    """The name a chain's agent node is served under in a worker's AgentHost (per metadata variant)."""
    return AGENT_KEY_PREFIX + orjson.dumps([chain_id, node_id, model, extra]).decode()


def parse_agent_key(name: str) -> tuple[str, str, str, str] | None:
    if not name.startswith(AGENT_KEY_PREFIX):
        return None
    try:
        chain_id, node_id, model, extra = orjson.loads(name[len(AGENT_KEY_PREFIX):])
    except (orjson.JSONDecodeError, ValueError, TypeError):
        return None
    return str(chain_id), str(node_id), str(model), str(extra)


def _node(n: Any) -> JSON:
    d: JSON = {"id": n.id, "type": n.type, "name": n.name, "debug": n.debug, "is_end": n.is_end,
               "cache": n.cache_output}
    if n.type in WORKFLOW_TYPES:
        d["config"] = n.component.config.model_dump(mode="json")
    elif n.type in AGENT_TYPES:
        d["model"] = n.component.agent_config.model
    return d


def _chain(c: Chain) -> JSON:
    return {
        "id": c.id,
        "name": c.name,
        "debug": c.debug,
        "vars": dict(c.vars or {}),
        "has_end_node": c.has_end_node,
        "first": c.first.id if c.first is not None else None,
        "referenced": list(c.referenced_nodes),
        "nodes": [_node(n) for n in c.nodes.values()],
        "routes": {n.id: {rel: [t.id for t in targets] for rel, targets in n.routes.items()}
                   for n in c.nodes.values() if n.routes},
        "parents": {k: list(v) for k, v in c.parents.items()},
    }


def _sub_chains(chain: Chain) -> tuple[list[str], bool]:
    """Chain ids the chain's flow and for nodes name, and whether one names its target by template."""
    ids: list[str] = []
    dynamic = False
    for n in chain.nodes.values():
        comp: Any = n.component
        if n.type == "flow":
            if comp.target.has_expr:
                dynamic = True
            else:
                ids.append(comp.target.text)
        elif n.type == "for" and comp.is_chain:
            ids.append(comp.target)
    return ids, dynamic


def chain_snapshot(engine: RuleEngine, chain: Chain) -> JSON:
    """The chain, every chain it may run as a sub-chain (all loaded chains when a target is a template),
    and the engine's figures."""
    chains: dict[str, Chain] = {}
    aliases: dict[str, str] = {}
    todo = [chain.id]
    while todo:
        cid = todo.pop()
        c = engine.get(cid)
        if c is None:
            continue  # a missing sub-chain fails where the in-process engine fails: at its flow node
        if cid != c.id:
            aliases[cid] = c.id
        if c.id in chains:
            continue
        chains[c.id] = c
        ids, dynamic = _sub_chains(c)
        todo.extend(ids)
        if dynamic:
            todo.extend(engine.chains)
    body = {"chains": {cid: _chain(c) for cid, c in chains.items()}, "aliases": aliases}
    version = hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()[:16]
    return {
        "chain": chain.id,
        **body,
        "properties": dict(engine.properties),
        "on_end_with_failure": engine.on_end_with_failure,
        "max_nodes": engine.max_nodes,
        "timeout": engine.timeout,
        "version": version,
    }


def chain_outcome(ends: Any) -> JSON:
    """A run's end for its record (chain_end.py), from its ended branches, as the server reads them
    (server/frames.py chain_frames): the first Success without error is the answer, else the run failed."""
    from ..chains.msg import FAILURE, SUCCESS

    ok = next((e for e in ends if e.relation == SUCCESS and not e.error), None)
    if ok is not None:
        md = ok.msg.metadata
        usage = {k: _int(md.get(k)) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
        return {"status": "done", "content": ok.msg.data, "usage": usage}
    bad = next((e for e in ends if e.relation == FAILURE or e.error), None)
    why = (bad.error or bad.msg.data) if bad else "the chain ended without a Success message"
    return {"status": "failed", "error": why or "the chain failed"}


def _int(v: Any) -> int:
    try:
        return int(v or 0)
    except (TypeError, ValueError):
        return 0
