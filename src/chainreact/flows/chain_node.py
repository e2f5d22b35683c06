"""A `rulechain` node's run: the rendered `input` sent to a rule chain (chainreact.chains), the first
successful end's data (parsed when it is JSON) is the node's output.

The message: type `FLOW`, data the rendered `input` (data type JSON when it parses as JSON, else TEXT),
metadata `session`, `node`, `flow` and `userId` (when the user has an id). A chain whose every end failed
fails the turn with the ends' errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import FlowError
from .exprs import render
from .model import RuleChainNode

if TYPE_CHECKING:
    from ..chains.engine import RuleEngine


async def run_chain_node(node: RuleChainNode, env: dict[str, Any], engine: RuleEngine, *, flow_id: str,
                         base_dir: Path, loaded: dict[str, str]) -> Any:
    """`loaded` maps chain files (resolved paths) to their chain ids: each file is loaded once per flow."""
    from ..chains import ChainLoadError, RuleMsg

    chain_id = node.chainId
    if node.chainFile:
        path = str((base_dir / node.chainFile).resolve())
        if path not in loaded:
            try:
                loaded[path] = engine.load(path, chain_id=node.chainId or None).id
            except (ChainLoadError, OSError) as e:
                raise FlowError(f"node {node.name!r}: cannot load chainFile {node.chainFile!r}: {e}") from e
        chain_id = loaded[path]
    if not chain_id or engine.get(chain_id) is None:
        known = ", ".join(sorted(engine.chains)) or "none"
        raise FlowError(f"node {node.name!r}: no rule chain {chain_id!r} in the flow's engine "
                        f"(loaded: {known}); give chainFile, or pass Flow(chains=engine) with it loaded")
    data = render(node.input, env)
    try:
        json.loads(data)
        data_type = "JSON"
    except ValueError:
        data_type = "TEXT"
    meta = {"session": str(env["session"]["id"]), "node": node.name, "flow": flow_id}
    user = env.get("user")
    if isinstance(user, dict) and user.get("id") is not None:
        meta["userId"] = str(user["id"])
    ends = await engine.run(chain_id, RuleMsg(type="FLOW", data=data, metadata=meta, data_type=data_type))
    for end in ends:
        if end.error is None and end.relation != "Failure":
            try:
                return json.loads(end.msg.data)
            except ValueError:
                return end.msg.data
    errors = "; ".join(f"{e.relation} at {e.node_id or '?'}: {e.error}" for e in ends) or "no end"
    raise FlowError(f"node {node.name!r}: rule chain {chain_id!r} failed: {errors}")


__all__ = ["run_chain_node"]
