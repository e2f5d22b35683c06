"""The `text/template` node's cost per message: chains/gotemplate (Go's text/template) against the small
regex-based template it replaced and a hand-written Python function (the floor), in the same run.

    python bench/gotemplate_bench.py            # µs per message (best of 5; moves with the machine's load)
    python bench/gotemplate_bench.py --instr    # instructions per message under callgrind (load-independent)
    python bench/gotemplate_bench.py --quick    # fewer iterations (a smoke run)

Per message is what the node does: take the message's JSON data as the engine parsed it (orjson), the new
node with Go's float64 numbers (json_value), and render. The old implementation is read from git at
OLD_COMMIT (it is not in the tree any more); without git history it is left out. Parsing happens once, at
load, and is shown for information. The old engine drops printf verbs, so its `printf` output is wrong: it
is timed, not checked.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from expr_bench import per_op

from chainreact.chains.gotemplate import RULEGO_FUNCS, GoTemplate, StrMap, json_value

ROOT = Path(__file__).resolve().parents[1]

OLD_COMMIT = "2bf4c6d"  # the last commit with the regex engine
OLD_PATH = "src/chainreact/chains/gotemplate.py"
DATA = '{"temperature": 71.5, "critical": true, "tags": ["kitchen", "sensor", "north"], "count": 3}'
META = {"room": "lab", "productType": "thermo"}

# name, template, expected output, the same as a Python function of (msgType, metadata, msg)
CASES: list[tuple[str, str, str, Callable[[str, dict[str, str], dict[str, Any]], str]]] = [
    ("fields", "{{.msgType}} in {{.metadata.room}}: {{.msg.temperature}} ({{.metadata.productType}})",
     "TELEMETRY in lab: 71.5 (thermo)",
     lambda t, md, m: f"{t} in {md['room']}: {m['temperature']} ({md['productType']})"),
    ("if/range", "{{if .msg.critical}}CRITICAL{{else}}ok{{end}}:{{range .msg.tags}} #{{.}}{{end}}",
     "CRITICAL: #kitchen #sensor #north",
     lambda t, md, m: ("CRITICAL" if m["critical"] else "ok") + ":" + "".join(f" #{x}" for x in m["tags"])),
    ("printf", '{{printf "%s: %.2f degrees" .metadata.room .msg.temperature}}', "lab: 71.50 degrees",
     lambda t, md, m: f"{md['room']}: {m['temperature']:.2f} degrees"),
]


def old_module() -> types.ModuleType | None:
    try:
        src = subprocess.run(["git", "-C", str(ROOT), "show", f"{OLD_COMMIT}:{OLD_PATH}"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    mod = types.ModuleType("old_gotemplate")
    exec(compile(src, "old_gotemplate.py", "exec"), mod.__dict__)
    return mod


def engines(old: types.ModuleType | None) -> dict[str, dict[str, Callable[[], str]]]:
    """Per case and engine: one message through the node's steps."""
    out: dict[str, dict[str, Callable[[], str]]] = {}
    for name, text, _, floor in CASES:
        new_t = GoTemplate(text, funcs=RULEGO_FUNCS)
        fns: dict[str, Callable[[], str]] = {
            "gotemplate": lambda t=new_t: t.execute(
                {"msgType": "TELEMETRY", "metadata": StrMap(META), "msg": json_value(orjson.loads(DATA))}),
            "python": lambda f=floor: f("TELEMETRY", META, orjson.loads(DATA)),
        }
        if old is not None:
            old_t = old.GoTemplate(text)
            fns["old"] = lambda t=old_t: t.render(
                {"msgType": "TELEMETRY", "metadata": META, "msg": orjson.loads(DATA)})
        out[name] = fns
    return out


def check(fns: dict[str, dict[str, Callable[[], str]]]) -> None:
    for name, _, want, _ in CASES:
        for engine in ("gotemplate", "python"):
            got = fns[name][engine]()
            if got != want:
                raise SystemExit(f"{name}/{engine}: {got!r} != {want!r}")


def timed(n: int) -> dict[str, Any]:
    old = old_module()
    fns = engines(old)
    check(fns)
    rows: dict[str, Any] = {}
    for name, text, _, _ in CASES:
        row = {e: per_op(fn, n) for e, fn in fns[name].items()}
        row["parse_gotemplate"] = per_op(lambda t=text: GoTemplate(t, funcs=RULEGO_FUNCS), max(n // 20, 50))
        if old is not None:
            row["parse_old"] = per_op(lambda t=text: old.GoTemplate(t), max(n // 20, 50))
        rows[name] = row
    return {"unit": "µs per message", "results": rows}


def worker(case: str, engine: str, n: int) -> None:
    from procs import MARKER

    fn = engines(old_module())[case][engine]
    for _ in range(200):
        fn()
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(n):
        fn()
    print(MARKER + json.dumps({"ok": n}), flush=True)


def instr(n: int) -> dict[str, Any]:
    import shutil

    from procs import PYTHON
    from server_instr import VALGRIND, counted_worker

    if shutil.which("valgrind") is None:
        return {"error": "valgrind is not installed"}
    engines_ = ["gotemplate", "python"] + (["old"] if old_module() is not None else [])
    rows: dict[str, Any] = {}
    for name, *_ in CASES:
        rows[name] = {}
        for e in engines_:
            cmd = [*VALGRIND, PYTHON, __file__, "worker", name, e, str(n)]
            count, ok = counted_worker(cmd, f"{name}/{e}")
            assert ok == n
            rows[name][e] = count / n
    return {"unit": "instructions per message", "results": rows}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--instr", action="store_true", help="callgrind instruction counts")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = instr(200 if args.quick else 2000) if args.instr else timed(500 if args.quick else 20000)
    if args.json:
        print(json.dumps(result))
        return
    print(result.get("unit", ""), result.get("error", ""))
    for name, row in result.get("results", {}).items():
        base = row["python"]
        cells = "  ".join(f"{k}={v:,.2f}" + (f" ({v / base:.1f}x)" if k in ("gotemplate", "old") else "")
                          for k, v in row.items())
        print(f"{name:9} {cells}")


if __name__ == "__main__":
    main()
