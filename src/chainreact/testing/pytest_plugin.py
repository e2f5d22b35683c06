"""pytest plugin (entry point `pytest11: chainreact`): the `fake_llm` and `replay_cassette` fixtures.

`fake_llm(script, **kwargs)` returns a started FakeLLM; every server the test made is stopped at teardown.
`replay_cassette(cassette, agent=..., **kwargs)` replays a cassette offline (chainreact.testing.replay) and
fails the test with the differences from the recording; it returns the ReplayResult.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .server import FakeLLM


@pytest.fixture
def fake_llm() -> Iterator[Callable[..., FakeLLM]]:
    # Imported here so that loading the plugin (on every pytest run) costs nothing until the fixture is used.
    from .server import FakeLLM

    servers: list[FakeLLM] = []

    def factory(script: Any = None, **kwargs: Any) -> FakeLLM:
        srv = FakeLLM(script, **kwargs)
        srv.start()
        servers.append(srv)
        return srv

    try:
        yield factory
    finally:
        for srv in servers:
            srv.stop()


@pytest.fixture
def replay_cassette() -> Callable[..., Any]:
    from .cassettes import replay

    def check(cassette: Any, agent: Any = None, **kwargs: Any) -> Any:
        result = replay(cassette, agent=agent, **kwargs)
        if not result.ok:
            pytest.fail(result.report(), pytrace=False)
        return result

    return check
