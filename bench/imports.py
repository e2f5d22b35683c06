"""Import time of chainreact and each peer, and `chainreact --help` wall time; fresh processes, medians.

The import figure is measured inside the fresh process (perf_counter around the import statement), so
interpreter start-up is not in it; `chainreact --help` is the whole command's wall time, start-up included.
`-X importtime` gives the slowest modules under `import chainreact` for the report.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import subprocess
import time
from typing import Any

from procs import PYTHON, ROOT, bench_env

# What a user imports to build the benchmark's agent with each framework.
TARGETS: dict[str, str] = {
    "chainreact": "import chainreact",
    "chainreact (Agent)": "from chainreact.agent import Agent",
    "bare httpx": "import httpx",
    "bare openai SDK": "import openai",
    "pydantic-ai": "from pydantic_ai import Agent; from pydantic_ai.models.openai import OpenAIChatModel",
    "openai-agents": "from agents import Agent, Runner, OpenAIChatCompletionsModel",
    "langgraph": "from langgraph.prebuilt import create_react_agent; from langchain_openai import ChatOpenAI",
    "agno": "from agno.agent import Agent; from agno.models.openai.like import OpenAILike",
}
_PROBE = ("import time, warnings; warnings.simplefilter('ignore'); "
          "t=time.perf_counter(); c=time.process_time(); "
          "{stmt}; print(time.perf_counter()-t, time.process_time()-c)")


def import_time(stmt: str, repeat: int) -> dict[str, Any]:
    times: list[float] = []
    cpus: list[float] = []
    for _ in range(repeat):
        cp = subprocess.run([PYTHON, "-c", _PROBE.format(stmt=stmt)], capture_output=True, text=True,
                            env=bench_env(), cwd=ROOT, timeout=120)
        if cp.returncode != 0:
            last = (cp.stderr.strip().splitlines() or ["?"])[-1]
            return {"status": "n/a", "reason": last[:300]}
        w, c = cp.stdout.strip().splitlines()[-1].split()
        times.append(float(w))
        cpus.append(float(c))
    # CPU time as well as wall: on a shared machine wall time also counts waiting for a core.
    return {"status": "ok", "ms": statistics.median(times) * 1e3, "cpu_ms": statistics.median(cpus) * 1e3,
            "ms_reps": [round(t * 1e3, 2) for t in times]}


def wall(cmd: list[str], repeat: int) -> dict[str, float]:
    """Median wall and CPU (user+sys of the child, from RUSAGE_CHILDREN) of a whole command, in ms."""
    times, cpus = [], []
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=bench_env(), cwd=ROOT, timeout=120, check=True)
        times.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    return {"ms": statistics.median(times) * 1e3, "cpu_ms": statistics.median(cpus) * 1e3}


def slowest_modules(stmt: str, top: int = 10) -> list[tuple[str, float]]:
    """The modules with the largest self time under `stmt` (-X importtime), in ms."""
    cp = subprocess.run([PYTHON, "-X", "importtime", "-c", stmt], capture_output=True, text=True,
                        env=bench_env(), cwd=ROOT, timeout=120)
    rows = []
    for line in cp.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append((m.group(4), int(m.group(1)) / 1e3))
    rows.sort(key=lambda r: -r[1])
    return rows[:top]


def measure(repeat: int = 7, only: set[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"imports": {}, "repeat": repeat}
    for name, stmt in TARGETS.items():
        base = name.split(" (")[0]
        if only and base not in only:
            continue
        out["imports"][name] = {"statement": stmt, **import_time(stmt, repeat)}
    exe = (shutil.which("chainreact", path=str(ROOT / ".venv" / "bin"))
           or shutil.which("chainreact", path=os.path.dirname(PYTHON))  # the running venv's
           or shutil.which("chainreact"))
    if exe:
        out["cli_help"] = wall([exe, "--help"], repeat)
    out["python_startup"] = wall([PYTHON, "-c", "pass"], repeat)
    out["chainreact_slowest_modules"] = slowest_modules("import chainreact")
    out["agent_slowest_modules"] = slowest_modules("from chainreact.agent import Agent")
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(measure(repeat=3), indent=1))
