"""The run records durable runs leave in the state store (`Store.save_run`), typed.

A durable agent run with a store (its last activity, `chainreact.events.publish`), and a chain run of
`serve --temporal`'s runs API (chain_end.py, or the server following it), save a record whose snapshot is
a `DurableRecord`: the workflow holds the run, the record says where to find it and how it ended. The
server's durable runs read and write the same shape (`format` "temporal").
"""

from __future__ import annotations

from typing import Any, TypedDict

FORMAT = "temporal"  # the `format` of a durable run's record


class DurableRecord(TypedDict, total=False):
    format: str  # FORMAT
    workflow_id: str  # the run's workflow (its id is the run id)
    result: dict[str, Any] | None  # an agent run's end (codec.result_to_dict), None while it has none
    extra: dict[str, Any]  # a chain run's end: content and stop_reason, or error


def durable_record(workflow_id: str, *, result: dict[str, Any] | None = None,
                   extra: dict[str, Any] | None = None) -> DurableRecord:
    rec = DurableRecord(format=FORMAT, workflow_id=workflow_id)
    if extra is not None:
        rec["extra"] = extra
    else:
        rec["result"] = result
    return rec
