"""Evals: a dataset of cases scores an agent, a rule chain or a flow (docs/testing.md, "Evals").

    cases = load_dataset("cases.jsonl")
    result = await run_eval(cases, AgentTarget(agent), concurrency=4, judge=Judge(judge_agent))
    result.pass_rate, result.to_dict()

`chainreact eval` is the command line over it (cli/eval_cmds.py).
"""

from .checks import Outcome
from .dataset import CHECKS, Case, DatasetError, load_dataset
from .judge import Judge, Verdict, parse_verdict
from .report import read_report, write_report
from .runner import CaseResult, EvalResult, run_case, run_eval
from .targets import AgentTarget, ChainTarget, FlowTarget

__all__ = ["CHECKS", "AgentTarget", "Case", "CaseResult", "ChainTarget", "DatasetError", "EvalResult",
           "FlowTarget", "Judge", "Outcome", "Verdict", "load_dataset", "parse_verdict", "read_report",
           "run_case", "run_eval", "write_report"]
