"""chainreact's suite agent with its run recorded (agent/recording.py: every model request and response and
tool call kept, keys redacted), as a run with a store is, minus the store's write. Not a suite entry;
bench/agent_instr.py compares it: `python bench/agent_instr.py --only chainreact,chainreact_recorded`."""

from __future__ import annotations

from typing import Any

import _harness as h
from run_chainreact import adapter as _chainreact


def adapter() -> h.Adapter:
    from chainreact.agent.plan import plan_hook
    from chainreact.agent.recording import IORecorder

    a = _chainreact()
    a.name = "chainreact (recorded)"
    plain = a.run

    async def run(agent: Any, prompt: str, streaming: bool) -> str:
        recorder = IORecorder()
        with plan_hook(recorder):
            recorder.note_run(agent, prompt)
            return await plain(agent, prompt, streaming)

    a.run = run
    return a


if __name__ == "__main__":
    h.main(adapter)
