"""`chainreact state migrate|info` and `chainreact runs list|show` over both backends."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from chainreact.cli import main
from chainreact.state import open_store
from chainreact.state.migrations import LATEST


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_state_migrate_and_info(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "state", "info", store_url, "--json")
    if store_url.startswith("sqlite"):
        assert code == 1  # info creates nothing
    else:
        assert code == 0 and json.loads(out)["schema_version"] == 0
    code, out, _ = run(capsys, "state", "migrate", store_url)
    assert code == 0 and f"to {LATEST}" in out
    code, out, _ = run(capsys, "state", "migrate", store_url)
    assert code == 0 and "up to date" in out
    code, out, _ = run(capsys, "state", "info", store_url, "--json")
    data = json.loads(out)
    assert code == 0 and data["schema_version"] == LATEST and data["counts"]["runs"] == 0


def test_state_info_on_missing_sqlite_file_creates_nothing(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "state", "info", f"sqlite:///{tmp_path}/none.db")
    assert code == 1 and "no store at" in err
    assert not (tmp_path / "none.db").exists()


async def _two_runs(url: str) -> None:
    async with await open_store(url) as s:
        await s.save_run("run-1", {"step": 2}, status="interrupted", agent="helper", session="s1")
        await s.append_event("run-1", "run_start", {"input": "hi"})
        await s.save_run("run-2", {"step": 5}, status="done")


# Sync tests: the CLI runs its own event loop.
def test_runs_list_and_show(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    asyncio.run(_two_runs(store_url))
    code, out, _ = run(capsys, "runs", "list", "--state", store_url)
    assert code == 0
    lines = out.splitlines()
    assert lines[1].startswith("run-2") and "done" in lines[1]
    assert lines[2].startswith("run-1") and "interrupted" in lines[2] and "helper" in lines[2]
    code, out, _ = run(capsys, "runs", "list", "--state", store_url, "--status", "interrupted", "--json")
    assert [r["run_id"] for r in json.loads(out)] == ["run-1"]
    code, out, _ = run(capsys, "runs", "show", "run-1", "--state", store_url, "--events")
    shown = json.loads(out)
    assert shown["snapshot"] == {"step": 2} and shown["session"] == "s1"
    assert shown["event_log"] == [{"id": 1, "type": "run_start", "data": {"input": "hi"}}]
    code, _, err = run(capsys, "runs", "show", "nope", "--state", store_url)
    assert code == 1 and "no run 'nope'" in err
    code, _, err = run(capsys, "runs", "list", "--state", store_url, "--status", "weird")
    assert code == 2
