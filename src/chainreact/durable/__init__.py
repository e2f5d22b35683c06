"""Durable, distributed agent runs on Temporal (the `temporal` extra): see docs/durable.md.

    from chainreact.durable import AgentHost, DurableAgent, connect, durable_worker

    client = await connect("127.0.0.1:7233")
    async with durable_worker(client, "agents", AgentHost([agent])):   # or `chainreact worker`
        result = await DurableAgent(agent, client=client, task_queue="agents").run("What is 2+3?")
    async with durable_worker(client, "flows", AgentHost(), flows=FlowHost([flow])):   # chat flows
        turn = await DurableFlow(flow, client=client, task_queue="flows").send("s1", "Hello")

Nothing here is imported by `import chainreact`; importing this package imports temporalio.
"""

from __future__ import annotations

try:
    import temporalio  # noqa: F401
except ImportError as e:  # pragma: no cover - the extra is installed in CI
    from ..errors import ConfigError

    raise ConfigError("chainreact.durable needs the temporal extra: "
                      "pip install 'chainreact[temporal]'") from e

from .activities import AgentActivities
from .chain_activities import ChainActivities
from .chain_client import DurableChain, DurableChainRun, chain_worker_extras, durable_chain_worker
from .client import DurableAgent, DurableRun, DurableRunError, connect
from .devserver import DevServer
from .flow_client import DurableFlow, DurableTurn
from .hosts import AgentHost, ChainHost, FlowHost
from .options import DurableOptions
from .worker import durable_worker, make_worker

__all__ = ["AgentActivities", "AgentHost", "ChainActivities", "ChainHost", "DevServer", "DurableAgent",
           "DurableChain", "DurableChainRun", "DurableFlow", "DurableOptions", "DurableRun",
           "DurableRunError", "DurableTurn", "FlowHost", "chain_worker_extras", "connect",
           "durable_chain_worker", "durable_worker", "make_worker"]
