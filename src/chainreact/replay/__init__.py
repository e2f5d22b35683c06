"""Replay: a recorded run (a cassette) re-run offline as a test (docs/testing.md, "Replay").

    cassette = await export_run(store, run_id)          # or `chainreact runs export RUN_ID --out x.json`
    result = await replay(cassette, agent=agent)        # or `chainreact replay x.json`
    assert result.ok, result.report()

The face of the wing; `chainreact.testing.replay` and its pytest fixture are the same for tests.
"""

from .api import replay, replay_sync, resolve_cassette
from .cassette import CassetteError
from .cassette import load as load_cassette
from .cassette import save as save_cassette
from .diff import Diff
from .export import export_run
from .player import Replayer, ReplayMismatch
from .run import ReplayResult, replay_agent

__all__ = ["CassetteError", "Diff", "ReplayMismatch", "ReplayResult", "Replayer", "export_run",
           "load_cassette", "replay", "replay_agent", "replay_sync", "resolve_cassette", "save_cassette"]
