"""Cassettes in tests: `replay(cassette, agent=...)`, a recorded run as a one-line test.

    from chainreact.testing import replay

    def test_weather_run():
        result = replay("tests/cassettes/weather.json", agent="agents/weather.json")
        assert result.ok, result.report()

The face, for tests, of chainreact.replay (which this module imports only when called); the pytest plugin's
`replay_cassette` fixture does the same and fails the test with the differences.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def replay(cassette: str | Path | Mapping[str, Any], *, agent: Any = None, **kwargs: Any) -> Any:
    """Replay a cassette offline (blocking) and return the ReplayResult (`.ok`, `.diffs`, `.report()`).
    `agent`: an Agent or a document path (default: the document the cassette names); `chain=`/`flow=` for
    those cassettes; `live_tools=True` runs the tools; `ignore=("system",)` skips comparing the prompt."""
    from ..replay import replay_sync

    return replay_sync(cassette, agent=agent, **kwargs)


async def areplay(cassette: str | Path | Mapping[str, Any], *, agent: Any = None, **kwargs: Any) -> Any:
    """`replay` for async tests."""
    from ..replay import replay as run

    return await run(cassette, agent=agent, **kwargs)


__all__ = ["areplay", "replay"]
