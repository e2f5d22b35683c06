"""`replay(cassette, agent=...)`: one call for any cassette (an agent's, a chain's, a flow's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .cassette import CassetteError, check, load
from .run import ReplayResult, replay_agent


def resolve_cassette(cassette: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(cassette, str | Path):
        return load(cassette)
    return check(dict(cassette))


def recorded_source(cassette: dict[str, Any]) -> str | None:
    """The document file the recording names, when it is still there."""
    source = (cassette.get("document") or {}).get("source")
    return source if isinstance(source, str) and Path(source).is_file() else None


async def replay(cassette: str | Path | Mapping[str, Any], *, agent: Any = None, chain: Any = None,
                 flow: Any = None, load: Sequence[str] = (), globals: Mapping[str, Any] | None = None,
                 live_tools: bool = False, ignore: Sequence[str] = ()) -> ReplayResult:
    """Replay `cassette` (a file or a loaded dict). The target: `agent` (an Agent or a document path) for
    an agent's cassette, `chain` (a RuleEngine, or a chain file; `load`: more chain files) for a chain's,
    `flow` (a Flow or a flow document path) for a flow's; without one, the document the cassette names."""
    data = resolve_cassette(cassette)
    kind = data["kind"]
    ignore_t = tuple(ignore)
    if kind == "chain":
        from .chains import replay_chain

        return await replay_chain(data, chain or agent, load=load, globals=globals, live_tools=live_tools,
                                  ignore=ignore_t)
    if kind == "flow":
        from .flows import replay_flow

        return await replay_flow(data, flow or agent, load=load, globals=globals, live_tools=live_tools,
                                 ignore=ignore_t)
    target = agent if agent is not None else recorded_source(data)
    if target is None:
        raise CassetteError("replay: give the agent (an Agent or its document): the recorded document "
                            f"{(data.get('document') or {}).get('source')!r} is not there")
    if not isinstance(target, str | Path):
        return await replay_agent(data, target, live_tools=live_tools, ignore=ignore_t)
    from ..chains.agent_doc import agent_from_document

    built = agent_from_document(str(target), globals=dict(globals or {}), load=load)
    try:
        return await replay_agent(data, built, live_tools=live_tools, ignore=ignore_t)
    finally:
        await built.aclose()


def replay_sync(cassette: str | Path | Mapping[str, Any], **kwargs: Any) -> ReplayResult:
    """Blocking `replay()` for scripts and plain (not async) tests."""
    from ..agent.run import run_sync

    return run_sync(replay(cassette, **kwargs))


__all__ = ["recorded_source", "replay", "replay_sync", "resolve_cassette"]
