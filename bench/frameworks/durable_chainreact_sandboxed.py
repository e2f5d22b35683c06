"""chainreact in the durable benchmark with its workflow inside Temporal's workflow sandbox.

The same agent, caller and in-process run as durable_chainreact.py; only the worker differs:
`durable_worker(..., sandboxed=True)` (what CHAINREACT_SANDBOX=1 gives `chainreact worker`), chainreact's
modules passed through. The peers' workflows run in the sandbox (their integrations' default), so this is
the like-for-like figure, the headline of docs/performance.md's Durable section; the unsandboxed worker
(chainreact's default) is measured beside it.
"""

from __future__ import annotations

from typing import Any

from durable_chainreact import EXTRA_VERSIONS, PACKAGE, Caller, InProcess, agent, connect

NAME = "chainreact (sandboxed)"
__all__ = ["EXTRA_VERSIONS", "NAME", "PACKAGE", "Caller", "InProcess", "connect", "worker"]


def worker(client: Any, task_queue: str, url: str) -> Any:
    """An async context manager: the worker polls `task_queue` inside it, its workflows sandboxed."""
    from chainreact.durable import AgentHost, durable_worker

    return durable_worker(client, task_queue, AgentHost([agent(url)]), sandboxed=True)
