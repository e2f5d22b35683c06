"""Test instruments: a scripted OpenAI-compatible server (`FakeLLM`), its pytest fixture and CLI, and
`replay` (cassettes of recorded runs as offline tests; cassettes.py).

Users test their own agents with it too; see docs/testing.md.
"""

from __future__ import annotations

from .cassettes import areplay, replay
from .responders import tool_steps_responder
from .server import FakeLLM, RecordedRequest
from .turns import FAULTS, TURN_KEYS, validate_turn

__all__ = ["FAULTS", "TURN_KEYS", "FakeLLM", "RecordedRequest", "areplay", "replay", "tool_steps_responder",
           "validate_turn"]
