"""Pydantic AI's agent for the durable benchmark, at module level as its Temporal integration requires.

Imported through `workflow.unsafe.imports_passed_through()` (durable_pydantic_ai.py), so the sandbox does
not rebuild it per workflow run. The scripted server's URL comes from DBENCH_MODEL_URL (set by
bench/durable_load.py before the import).
"""

from __future__ import annotations

import os

import _harness as h
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


def add(a: int, b: int) -> int:
    """Add two integers."""
    return h.add(a, b)


_client = AsyncOpenAI(base_url=os.environ["DBENCH_MODEL_URL"], api_key="x", max_retries=0, timeout=h.TIMEOUT)
# The integration's current API: a plain Agent with the TemporalDurability capability (TemporalAgent is
# deprecated). Outside a workflow the same object runs in process, as a plain agent.
agent = Agent(OpenAIChatModel("fake-model", provider=OpenAIProvider(openai_client=_client)), name="bench",
              instructions=h.SYSTEM_PROMPT, tools=[add], capabilities=[TemporalDurability()])
