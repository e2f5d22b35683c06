"""The cassette: a recorded run as one JSON document, and how it is made from a run's `io` records.

    {"chainreact_cassette": 1, "kind": "agent" | "chain" | "flow", "run_id", "exported_at",
     "document": {"id", "name", "source", "hash"},          the agent's (a chain's, a flow's) document
     "input": ...,                                         what the run was given
     "answer": "...", "stop_reason": "stop",               what it answered
     "agents": [{"slot", "agent", "parent": [slot, call id] | null, "model", "endpoint", "params",
                 "steps": [{"step": 1,
                            "request": {"messages": [...], "tools": [...], "stream": false},
                            "response": {"message", "finish_reason", "usage", "model"} | "error": {...},
                            "tools": [{"id", "name", "arguments", "content", "is_error"}]}]}],
     ...kind's own fields (chain: "nodes", "ends"; flow: "turn", "reads")}

Every model request is complete (the log's `keep` prefixes are expanded), so a cassette can be read and
edited by hand: change a tool's recorded `content` to the right value and the replay with `--live-tools`
fails until the tool returns it. A run that was resumed (it stopped to ask, or its process died) is one
agent: the resumed part's steps follow the first part's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError

FORMAT = 1
KINDS = ("agent", "chain", "flow")


class CassetteError(ConfigError):
    """A cassette that cannot be read or replayed; the message names the file and the field."""


def _announced_first(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`records` with each slot's announcement before the first record of it: a durable turn announces a
    resumed run's slot with its first model call, after its pending tool calls ran."""
    announced = {str(r.get("slot")) for r in records if r.get("kind") == "slot"}
    out: list[dict[str, Any]] = []
    waiting: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        sid = str(r.get("slot"))
        if r.get("kind") == "slot":
            out += [r, *waiting.pop(sid, [])]
            announced.discard(sid)  # announced now: its records follow in their order
        elif sid in announced and r.get("kind") in ("model", "tool"):
            waiting.setdefault(sid, []).append(r)
        else:
            out.append(r)
    return out


def build_agents(records: list[dict[str, Any]], *, merge_top: bool) -> list[dict[str, Any]]:
    """The slots of `records` (agent/recording.py's log form) with complete requests, steps in order and
    each step's tool calls. `merge_top`: top-level slots of one agent are one run (resumed parts)."""
    agents: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    sent: dict[str, tuple[list[Any], Any]] = {}  # recorded slot -> (its last request's messages, tools)
    step_of: dict[tuple[str, int], dict[str, Any]] = {}  # (recorded slot, its step) -> the cassette's step
    for r in _announced_first(records):
        kind = r.get("kind")
        if kind == "slot":
            sid = str(r["slot"])
            if sid in by_id:
                continue  # announced again (a durable flow node's model activity that ran again)
            top = next((a for a in agents if a["parent"] is None and a["agent"] == r.get("agent")), None) \
                if merge_top and r.get("parent") is None else None
            if top is None:
                top = {"slot": sid, "agent": r.get("agent"), "parent": r.get("parent"),
                       "model": r.get("model"), "endpoint": r.get("endpoint"),
                       "params": r.get("params") or {}, "steps": []}
                agents.append(top)
            by_id[sid] = top
            sent[sid] = ([], None)
        elif kind == "model" and str(r.get("slot")) in by_id:
            sid = str(r["slot"])
            agent = by_id[sid]
            req = r.get("request") or {}
            prev, tools = sent[sid]
            messages = [*prev[: int(req.get("keep") or 0)], *(req.get("messages") or [])]
            tools = req.get("tools", tools)
            sent[sid] = (messages, tools)
            # A step recorded twice (a durable run's model activity whose first success was not
            # acknowledged, so it ran again) is the later recording, in its place.
            again = step_of.get((sid, int(r.get("step") or 0)))
            step: dict[str, Any] = again if again is not None else {"step": len(agent["steps"]) + 1}
            step.pop("error", None)
            step.pop("response", None)
            step["request"] = {"messages": messages, "tools": tools, "stream": bool(req.get("stream"))}
            if "response" in r:
                step["response"] = r["response"]
            else:
                step["error"] = r.get("error") or {"type": "Error", "message": "no response recorded"}
            step["tools"] = []
            if again is None:
                agent["steps"].append(step)
            step_of[(sid, int(r.get("step") or 0))] = step
        elif kind == "tool":
            sid = str(r.get("slot"))
            target = step_of.get((sid, int(r.get("step") or 0)))
            if target is None and sid in by_id and by_id[sid]["steps"]:
                target = by_id[sid]["steps"][-1]  # a resumed run's first tools: the step that asked for them
            key = "tools"
            if target is None and sid in by_id:
                # Before the slot's first model call: a resumed run's pending calls, when the run that asked
                # is in another cassette (a flow turn that goes on with the answer of the turn before).
                target, key = by_id[sid], "resumed"
            if target is not None:
                call = {k: r.get(k) for k in ("id", "name", "arguments", "content", "is_error")}
                if r.get("interrupt") is not None:  # the call stopped to ask: a replay stops there too
                    call["interrupt"] = r["interrupt"]
                # One call recorded twice (it stopped to ask, then ran with the answer; or a retried durable
                # tool activity whose success was not acknowledged): the later recording. Same id, name and
                # arguments: the same call.
                target[key] = [*(t for t in target.get(key) or [] if (t["id"], t["name"], t["arguments"]) !=
                                 (call["id"], call["name"], call["arguments"])), call]
    return agents


def check(data: Any, where: str = "cassette") -> dict[str, Any]:
    """A loaded cassette, checked enough to replay; CassetteError names what is wrong and where."""
    if not isinstance(data, dict):
        raise CassetteError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if data.get("chainreact_cassette") != FORMAT:
        raise CassetteError(f"{where}: $.chainreact_cassette: expected {FORMAT}, got "
                            f"{data.get('chainreact_cassette')!r} (is this a cassette from `chainreact runs "
                            "export`?)")
    if data.get("kind") not in KINDS:
        raise CassetteError(f"{where}: $.kind: expected one of {', '.join(KINDS)}, got {data.get('kind')!r}")
    agents = data.get("agents")
    if not isinstance(agents, list):
        raise CassetteError(f"{where}: $.agents: expected a list of recorded agents")
    for i, a in enumerate(agents):
        if not isinstance(a, dict) or not isinstance(a.get("steps"), list):
            raise CassetteError(f"{where}: $.agents[{i}]: expected an object with steps")
        for j, s in enumerate(a["steps"]):
            at = f"{where}: $.agents[{i}].steps[{j}]"
            if not isinstance(s, dict) or not isinstance(s.get("request"), dict):
                raise CassetteError(f"{at}: expected an object with a request")
            if not isinstance(s.get("response"), dict) and not isinstance(s.get("error"), dict):
                raise CassetteError(f"{at}: expected a response (or an error)")
            if isinstance(s.get("response"), dict) and not isinstance(s["response"].get("message"), dict):
                raise CassetteError(f"{at}.response.message: expected the assistant message")
            for k, t in enumerate(s.get("tools") or []):
                if not isinstance(t, dict) or not isinstance(t.get("id"), str) or \
                        not isinstance(t.get("content"), str):
                    raise CassetteError(f"{at}.tools[{k}]: expected "
                                        "{id, name, arguments, content, is_error}")
    return data


def load(path: str | Path) -> dict[str, Any]:
    """Read and check a cassette file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise CassetteError(f"cassette {p}: cannot read it ({e.strerror or e})") from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise CassetteError(f"cassette {p}: not JSON ({e})") from None
    return check(data, f"cassette {p}")


def dumps(cassette: dict[str, Any]) -> str:
    return json.dumps(cassette, ensure_ascii=False, indent=1) + "\n"


def save(cassette: dict[str, Any], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(dumps(cassette), encoding="utf-8")
    return p


def top_agent(cassette: dict[str, Any]) -> dict[str, Any] | None:
    """The recorded run's own agent (the first top-level one)."""
    return next((a for a in cassette.get("agents") or [] if a.get("parent") is None), None)


__all__ = ["FORMAT", "KINDS", "CassetteError", "build_agents", "check", "dumps", "load", "save", "top_agent"]
