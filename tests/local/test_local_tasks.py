"""The embedded model answers small tool tasks right: a handful of bench/local_model.py's 20 tasks.

Real agent runs on the real model (SmolLM2-135M). Tool turns sample greedily under a grammar, so the
answers are the same on every run; a failure here is a regression in the embedded model's tool calling
(local/tool_prompt.py, llama_entry.py) or in the loop, not bad luck.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from chainreact.local import get_local_endpoint, local_extra_available, stop_local_sync
from chainreact.local import server as srv

_missing = local_extra_available()
pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(bool(_missing), reason=f"the 'local' extra is not installed (no {_missing!r} module)"),
]
ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_local_model", ROOT / "bench" / "local_model.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


bench = _bench()
# Two of each kind; the demo's own question first.
PICKED = [t for t in bench.TASKS if t.question in {
    "What is 17 + 25? Use the add tool.", "What is 50 + 50?", "What is 100 - 37?", "What is 12 - 20?",
    "How many miles are 10 km?", "Convert 42 km to miles."}]


@pytest.fixture(scope="module")
def local_url() -> Iterator[str]:
    os.environ.pop(srv.LOCAL_URL_ENV, None)
    ep = asyncio.run(get_local_endpoint())
    yield ep.url
    stop_local_sync()


def test_the_picked_tasks_exist() -> None:
    assert len(PICKED) == 6 and len(bench.TASKS) == 20


@pytest.mark.parametrize("task", PICKED, ids=[t.question for t in PICKED])
def test_task_is_answered_right(task: object, local_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(srv.LOCAL_URL_ENV, local_url)
    monkeypatch.syspath_prepend(str(ROOT / "examples"))  # the demo document's python tool
    row = asyncio.run(bench.run_task(task, all_tools=False))
    assert not row["error"]
    assert row["right_first_call"], row  # the grammar-constrained call, right tool and arguments
    assert row["ok"], row  # the answer states the right number (and no wrong one)
    assert row["calls"] == 1  # one call, then the answer: never the max-steps path
    assert "maximum number of steps" not in row["answer"]


def test_states_is_strict() -> None:
    assert bench.states("17 + 25 is 42.", "42", "What is 17 + 25?")
    assert bench.states("The answer is: 42.0", "42")
    assert not bench.states("-52 is 52.", "52", "What is 81 - 29?")
    assert not bench.states("It is 41.", "42")
    assert bench.states("It is -8.", "-8") and not bench.states("It is 8.", "-8")
