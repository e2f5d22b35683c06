"""Micro-benchmark of `${...}` expressions: chainreact.expr against the Jinja2 sandbox it replaced and a
hand-written Python function (the floor), measured in the same run.

    python bench/expr_bench.py            # table on stdout
    python bench/expr_bench.py --json     # one JSON object (per case: µs per eval/compile, ratios)
    python bench/expr_bench.py --quick    # fewer iterations (a smoke run)

Per case: evaluation of an already compiled expression (the hot path: a chain node or a prompt renders the
same expression for every message), compilation of a new expression (parse + compile, cache bypassed),
and a cached compile (`compile_expr` of a text seen before). Jinja2 is the old `${...}` engine
(`ImmutableSandboxedEnvironment.compile_expression`); it is optional (`pip install jinja2`).
Figures are the best of 5 repetitions, in microseconds per operation, per round; rounds (`--rounds`,
default 3) each measure every engine in turn, and a figure is the median over rounds [lowest-highest].
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import stats

from chainreact.expr import compile_expr, parse_template

ENV: dict[str, Any] = {
    "temperature": 60, "name": "x",
    "msg": {"temperature": 25, "items": list(range(10)), "user": {"name": "Ann"}},
    "metadata": {"user": "ann", "productType": "test"},
    "ruleChain": {"id": "rc-42"},
}

# name, expr-lang expression, the same in Jinja2, the same as a Python function
CASES: list[tuple[str, str, str, Callable[[dict[str, Any]], Any]]] = [
    ("filter condition", "temperature > 50 && upper(name) == 'X'",
     "temperature > 50 and name|upper == 'X'",
     lambda e: e["temperature"] > 50 and e["name"].upper() == "X"),
    ("member arithmetic", "msg.temperature * 2 + 1", "msg.temperature * 2 + 1",
     lambda e: e["msg"]["temperature"] * 2 + 1),
    ("nested member", "msg.user.name == 'Ann' ? 'yes' : 'no'",
     "'yes' if msg.user.name == 'Ann' else 'no'",
     lambda e: "yes" if e["msg"]["user"]["name"] == "Ann" else "no"),
    ("predicate", "filter(msg.items, # > 5)", "msg['items']|select('>', 5)|list",
     lambda e: [x for x in e["msg"]["items"] if x > 5]),
]
TEMPLATE = "Agent ${ruleChain.id}, user ${metadata.user}, type ${metadata.productType}"
JINJA_TEMPLATE_PARTS = ["ruleChain.id", "metadata.user", "metadata.productType"]


def per_op(fn: Callable[[], Any], n: int, repeat: int = 5) -> float:
    """Best-of-`repeat` microseconds per call of `fn` over `n` calls."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - t)
    return best / n * 1e6


def jinja_env() -> Any:
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        return None
    return ImmutableSandboxedEnvironment()


_COUNTER = [0]


def one_round(jenv: Any, n_eval: int, n_comp: int) -> list[dict[str, Any]]:
    """Every case once, each engine in turn: one round (the rounds interleave, so drift hits all alike)."""
    rows: list[dict[str, Any]] = []
    counter = _COUNTER  # across rounds too: a text compiled in an earlier round would hit the cache

    def fresh(src: str) -> Callable[[], Any]:
        def go() -> Any:  # a new text each time, so the cache never answers
            counter[0] += 1
            return compile_expr(f"{src} || {counter[0]} == 0" if "&&" in src else f"({src}) ?? {counter[0]}")
        return go

    for name, src, jsrc, py in CASES:
        prog = compile_expr(src)
        assert prog.run(ENV) == py(ENV), (name, prog.run(ENV), py(ENV))
        row: dict[str, Any] = {"case": name, "expr": src}
        row["python_us"] = per_op(lambda py=py: py(ENV), n_eval)
        row["expr_eval_us"] = per_op(lambda prog=prog: prog.run(ENV), n_eval)
        row["expr_compile_us"] = per_op(fresh(src), n_comp, repeat=3)
        row["expr_compile_cached_us"] = per_op(lambda src=src: compile_expr(src), n_eval)
        if jenv is not None:
            jfn = jenv.compile_expression(jsrc)
            assert jfn(**ENV) == py(ENV), (name, jfn(**ENV))
            row["jinja_eval_us"] = per_op(lambda jfn=jfn: jfn(**ENV), n_eval)
            def jcompile(jsrc: str = jsrc) -> Any:
                return jenv.compile_expression(f"{jsrc} or {time.perf_counter_ns()} == 0")

            row["jinja_compile_us"] = per_op(jcompile, n_comp // 4, repeat=3)
        rows.append(row)

    tmpl = parse_template(TEMPLATE)
    want = tmpl.render(ENV)
    trow: dict[str, Any] = {"case": "3-part template", "expr": TEMPLATE}
    parts = [("Agent ", "ruleChain", "id"), (", user ", "metadata", "user"),
             (", type ", "metadata", "productType")]
    trow["python_us"] = per_op(lambda: "".join(f"{a}{ENV[b][c]}" for a, b, c in parts), n_eval)
    trow["expr_eval_us"] = per_op(lambda: tmpl.render(ENV), n_eval)
    if jenv is not None:
        jparts = [jenv.compile_expression(p) for p in JINJA_TEMPLATE_PARTS]
        lits = ["Agent ", ", user ", ", type "]

        def jrender() -> str:
            return "".join(lit + str(f(**ENV)) for lit, f in zip(lits, jparts, strict=True))

        assert jrender() == want
        trow["jinja_eval_us"] = per_op(jrender, n_eval)
    rows.append(trow)

    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, help="rounds, each measuring every engine in turn (3; --quick: 1)")
    args = ap.parse_args()
    n_eval = 2_000 if args.quick else 50_000
    n_comp = 100 if args.quick else 2_000
    jenv = jinja_env()
    args.rounds = args.rounds or (1 if args.quick else 3)
    runs = [one_round(jenv, n_eval, n_comp) for _ in range(args.rounds)]
    for rnd in runs:
        for r in rnd:
            r["expr_vs_python"] = r["expr_eval_us"] / r["python_us"]
            if "jinja_eval_us" in r:
                r["jinja_vs_expr"] = r["jinja_eval_us"] / r["expr_eval_us"]
    # Per cell: the median over rounds [lowest-highest round]; a ratio: the median of each round's ratio.
    rows = [{k: (stats.spread(rnd[i][k] for rnd in runs) if isinstance(v, float) else v)
             for k, v in runs[0][i].items()} for i in range(len(runs[0]))]
    if args.json:
        print(json.dumps({"rows": rows, "jinja": jenv is not None}, indent=2))
        return 0
    head = (f"{'case':<18} {'python':>8} {'expr eval':>10} {'x py':>6} {'jinja eval':>11} {'jinja/expr':>10} "
            f"{'expr compile':>13} {'cached':>7} {'jinja compile':>14}")
    print(f"µs per operation (best of 5 repetitions per round), median of {args.rounds} rounds "
          "[lowest-highest]\n" + head)
    for r in rows:
        def f(k: str, w: int, r: dict[str, Any] = r) -> str:
            return f"{stats.fmt(r.get(k), 2):>{w}}"
        print(f"{r['case']:<18} {f('python_us', 8)} {f('expr_eval_us', 10)} {f('expr_vs_python', 6)} "
              f"{f('jinja_eval_us', 11)} {f('jinja_vs_expr', 10)} {f('expr_compile_us', 13)} "
              f"{f('expr_compile_cached_us', 7)} {f('jinja_compile_us', 14)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
