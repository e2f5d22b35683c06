"""Reading and checking the shared RuleGo conformance cases (../shared/rulego, format in its README)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from chainreact.chains import FAILURE, End, NodeContext, RuleEngine, RuleMsg
from chainreact.chains.msg import TRUE

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "rulego"
if not SHARED.is_dir():  # worktrees live one level deeper than the main checkout
    SHARED = ROOT.parents[1] / "shared" / "rulego"


def load_cases() -> list[dict[str, Any]]:
    path = SHARED / "cases.jsonl"
    if not path.is_file():
        if os.environ.get("CI") == "true":
            raise FileNotFoundError(f"RuleGo conformance cases missing: {path}")
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def require_cases() -> list[dict[str, Any]]:
    cases = load_cases()
    if not cases:
        pytest.skip(f"no RuleGo cases at {SHARED}")
    return cases


# Python equivalents of the Go functions the RuleGo tests register (by the names the cases use).
def _tell_next_empty(ctx: NodeContext, msg: RuleMsg) -> None:
    msg.metadata["aa"] = "aa"
    msg.metadata["bb"] = "bb"
    ctx.tell_next(msg)


def _do_end(ctx: NodeContext, msg: RuleMsg) -> None:
    if msg.metadata.get("productType") == "test01":
        ctx.tell_next(msg, TRUE)
    else:
        ctx.do_on_end(msg, None, "False")


def _setter(**kv: str) -> Any:
    def fn(ctx: NodeContext, msg: RuleMsg) -> None:
        msg.metadata.update(kv)
        ctx.tell_success(msg)
    return fn


async def _pressure(ctx: NodeContext, msg: RuleMsg) -> None:
    import asyncio

    msg.metadata.update(pressureProcessed="true", processNode="pressure")
    await asyncio.sleep(0.01)
    ctx.tell_failure(msg, "pressure sensor failed")


def _add(ctx: NodeContext, msg: RuleMsg) -> None:
    msg.metadata["addFrom"] = "addFunction"
    ctx.tell_next(msg, "fromAdd")


def _group_action_test1(ctx: NodeContext, msg: RuleMsg) -> None:
    index = msg.metadata.get("_loopIndex", "")
    msg.metadata["add" + index] = "value" + index
    if msg.metadata.get("mode") == "2":
        msg.data = index
    ctx.tell_success(msg)


FUNCTIONS: dict[str, Any] = {
    "tellNextRelationTypeEmpty": _tell_next_empty,
    "doEnd": _do_end,
    "processTemperature": _setter(tempProcessed="true", processNode="temperature"),
    "processHumidity": _setter(humidityProcessed="true", processNode="humidity"),
    "processPressure": _pressure,
    "testFailErrorMsg26": lambda ctx, msg: ctx.tell_failure(msg, "boom"),
    "testCaptureErrorMsg26": lambda ctx, msg: ctx.tell_success(msg),
    "testSuccessNoErr26": lambda ctx, msg: ctx.tell_success(msg),
    "testCaptureSuccess26": lambda ctx, msg: ctx.tell_success(msg),
    "add": _add,
    "echo": lambda ctx, msg: ctx.tell_success(msg),
    "groupActionTest1": _group_action_test1,
}


def engine_for(case: dict[str, Any]) -> RuleEngine:
    cfg = case.get("config") or {}
    engine = RuleEngine(properties=cfg.get("properties"),
                        on_end_with_failure=cfg.get("onEndWithFailure", True), functions=FUNCTIONS)
    register_as = case.get("register_as") or {}
    for name in case["chains"]:
        engine.load(SHARED / "chains" / name, chain_id=register_as.get(name))
    return engine


def input_msg(case: dict[str, Any]) -> RuleMsg:
    return RuleMsg.from_dict(case["input"])


def _strip_ws(s: str) -> str:
    return "".join(s.split())


def end_matches(exp: dict[str, Any], got: End) -> list[str]:
    """Why `got` does not match the expected end (empty: it matches)."""
    bad: list[str] = []
    m = got.msg
    if exp.get("relation") is not None and exp["relation"] != got.relation:
        bad.append(f"relation {got.relation!r} != {exp['relation']!r}")
    if exp.get("type") is not None and exp["type"] != m.type:
        bad.append(f"type {m.type!r} != {exp['type']!r}")
    if exp.get("data") is not None and exp["data"] != m.data:
        bad.append(f"data {m.data!r} != {exp['data']!r}")
    if exp.get("dataType") is not None and exp["dataType"] != m.data_type:
        bad.append(f"dataType {m.data_type!r} != {exp['dataType']!r}")
    if exp.get("data_json") is not None:
        try:
            if json.loads(m.data) != exp["data_json"]:
                bad.append(f"data {m.data!r} !~ {exp['data_json']!r}")
        except ValueError:
            bad.append(f"data {m.data!r} is not JSON")
    for k, v in (exp.get("metadata") or {}).items():
        if m.metadata.get(k, "") != v:
            bad.append(f"metadata[{k}] {m.metadata.get(k)!r} != {v!r}")
    ec = exp.get("error_contains")
    if ec is not None:
        opts = ec if isinstance(ec, list) else [ec]
        if not got.error or not any(o in got.error for o in opts):
            bad.append(f"error {got.error!r} lacks {opts!r}")
    if exp.get("has_error") is True and not got.error:
        bad.append("error expected")
    if exp.get("has_error") is False and got.error:
        bad.append(f"no error expected, got {got.error!r}")
    for sub in exp.get("data_contains") or []:
        if sub not in m.data:
            bad.append(f"data lacks {sub!r}")
    if exp.get("data_json_subset") is not None:
        try:
            d = json.loads(m.data)
            for k, v in exp["data_json_subset"].items():
                if d.get(k) != v:
                    bad.append(f"data[{k}] {d.get(k)!r} != {v!r}")
        except (ValueError, AttributeError):
            bad.append(f"data {m.data!r} is not a JSON object")
    ws = exp.get("data_ws_insensitive")
    if ws is not None and _strip_ws(m.data) != _strip_ws(ws):
        bad.append(f"data {m.data!r} != (ws-insensitive) {exp['data_ws_insensitive']!r}")
    if exp.get("wrappers") is not None:
        bad += _wrappers_match(exp["wrappers"], m.data)
    return bad


def _wrappers_match(w: dict[str, Any], data: str) -> list[str]:
    try:
        items = json.loads(data)
    except ValueError:
        return [f"data {data!r} is not JSON"]
    if not isinstance(items, list):
        return [f"data {data!r} is not an array"]
    if w.get("exact_count") and len(items) != len(w["items"]):
        return [f"{len(items)} wrappers, expected {len(w['items'])}: {data}"]
    left = list(items)
    bad = []
    for exp in w["items"]:
        hit = next((it for it in left if not _wrapper_diff(exp, it)), None)
        if hit is None:
            bad.append(f"no wrapper matches {exp!r} in {data}")
        else:
            left.remove(hit)
    return bad


def _wrapper_diff(exp: dict[str, Any], it: dict[str, Any]) -> bool:
    if exp.get("nodeId") is not None and it.get("nodeId") != exp["nodeId"]:
        return True
    if exp.get("err") is not None and it.get("err") != exp["err"]:
        return True
    em, im = exp.get("msg") or {}, it.get("msg") or {}
    for k in ("type", "dataType", "data"):
        if em.get(k) is not None and im.get(k) != em[k]:
            return True
    if em.get("data_json") is not None:
        try:
            if json.loads(im.get("data", "")) != em["data_json"]:
                return True
        except ValueError:
            return True
    return em.get("metadata") is not None and im.get("metadata") != em["metadata"]


def match_ends(case: dict[str, Any], ends: list[End]) -> list[str]:
    expected = case["expect"]["ends"]
    problems: list[str] = []
    if len(ends) != len(expected):
        problems.append(f"{len(ends)} ends, expected {len(expected)}")
    left = list(ends)
    for exp in expected:
        reasons = {id(g): end_matches(exp, g) for g in left}
        hit = next((g for g in left if not reasons[id(g)]), None)
        if hit is None:
            detail = "; ".join(f"[{g.relation} {g.msg.data[:80]!r} {g.error!r}] " + ", ".join(reasons[id(g)])
                               for g in left)
            problems.append(f"expected end {exp!r} not found among: {detail}")
        else:
            left.remove(hit)
    return problems


__all__ = ["FAILURE", "engine_for", "input_msg", "load_cases", "match_ends", "require_cases"]
