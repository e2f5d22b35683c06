"""chainreact's suite agent with `@tool(thread=False)`: the sync `add` tool called on the event loop, no
worker thread. Not a suite entry (the suite runs the default); bench/agent_instr.py compares it:
`python bench/agent_instr.py --only chainreact,chainreact_inline,bare_httpx`."""

from __future__ import annotations

import _harness as h
from run_chainreact import adapter as _chainreact


def adapter() -> h.Adapter:
    a = _chainreact(thread=False)
    a.name = "chainreact (thread=False)"
    return a


if __name__ == "__main__":
    h.main(adapter)
