"""Recording a durable agent run's I/O for `chainreact runs export` (agent/recording.py's records).

With a state store, the agent activities append the run's records to its event log as `io` events, the
form flow turns and evals use, so `runs export` makes the same cassette of it as of an in-process run:

    plan activity    {"kind": "run", ...} and {"kind": "slot", ...}   once per run (a log that has them
                                                                      already gets them no second time)
    model activity   {"kind": "model", ...}   with the attempt's result: a failed attempt records nothing
    tool activity    {"kind": "tool", ...}    likewise; a tool that stopped to ask records nothing (it runs
                                              again with the answer), and a nested agent's records (an
                                              agent as a tool) come with it

Activities are stateless and may run on any worker, so the slot's id is derived from the run id and each
model record holds the whole request (`keep` 0). Keys are redacted as IORecorder does: the document's
keys, the model client's, anything shaped like a key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..agent.plan import RunPlan, plan_hook
from ..agent.recording import (
    IO_EVENT,
    IORecorder,
    Record,
    agent_secrets,
    client_secrets,
    current_call,
    message_dict,
    model_record,
    redact,
    run_record,
    slot_record,
    tool_record,
)
from ..tools.base import ToolOutput
from ..types import ModelResponse
from .codec import JSON, call_from_dict, messages_from_list

if TYPE_CHECKING:
    from ..state.base import Store

HEAD = 50  # events read to find a run's records: the plan activity writes them before any other event


def slot_id(run_id: str) -> str:
    """The run's slot: the same on every worker and every attempt."""
    return hashlib.sha256(run_id.encode()).hexdigest()[:8]


def _known(agent: Any, plan: RunPlan) -> list[str]:
    return [*agent_secrets(agent), *client_secrets(plan.client)]


async def record_plan(store: Store, run_id: str, agent: Any, plan: RunPlan, data: Any) -> None:
    """The run's `run` and `slot` records, unless its log has them: a local activity runs again when the
    workflow task that ran it failed, and an interrupted run's resumption does not plan again anyway."""
    head = await store.events(run_id, after=0, limit=HEAD)
    if any(e.type == IO_EVENT and isinstance(e.data, dict) and e.data.get("kind") == "run" for e in head):
        return
    await store.append_events(run_id, [(IO_EVENT, redact(run_record(agent, data), _known(agent, plan))),
                                       (IO_EVENT, slot_io(agent, plan, run_id))])


def slot_io(agent: Any, plan: RunPlan, run_id: str) -> Record:
    """The run's slot: a top-level agent, its model (a durable agent run's, a durable flow node's run)."""
    return dict(redact(slot_record(slot_id(run_id), plan.agent, plan.client, None), _known(agent, plan)))


def model_io(agent: Any, plan: RunPlan, req: JSON, response: ModelResponse) -> Record:
    """A model call's record: every message sent (the activity knows no earlier request of the run)."""
    request = {"keep": 0, "messages": [message_dict(m) for m in messages_from_list(req["messages"])],
               "tools": req.get("tools"), "stream": bool(req.get("stream"))}
    rec = model_record(slot_id(req["run_id"]), int(req.get("step") or 0), request, response)
    return dict(redact(rec, _known(agent, plan)))


@contextmanager
def recording_tool(agent: Any, plan: RunPlan, req: JSON) -> Iterator[IORecorder]:
    """Around a tool activity's call: the agents the tool plans (an agent as a tool) are recorded as the
    run's slot's children, as in process. The records wait in the recorder for `tool_io`."""
    rec = IORecorder(secrets=_known(agent, plan))
    token = current_call.set((slot_id(req["run_id"]), str(req["call"]["id"])))
    try:
        with plan_hook(rec):
            yield rec
    finally:
        current_call.reset(token)
        rec.close()


def tool_io(agent: Any, plan: RunPlan, req: JSON, out: ToolOutput, nested: IORecorder) -> list[Record]:
    """A finished tool call's records: its nested agents' then its own (an interrupt's: its question)."""
    own = tool_record(slot_id(req["run_id"]), int(req.get("step") or 0), call_from_dict(req["call"]), out)
    return [*nested.take(), dict(redact(own, _known(agent, plan)))]


__all__ = ["model_io", "record_plan", "recording_tool", "slot_id", "slot_io", "tool_io"]
