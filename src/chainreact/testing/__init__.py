"""Test instruments: a scripted OpenAI-compatible server (`FakeLLM`), its pytest fixture and CLI.

Users test their own agents with it too; see docs/testing.md.
"""

from __future__ import annotations

from .responders import tool_steps_responder
from .server import FakeLLM, RecordedRequest
from .turns import FAULTS, TURN_KEYS, validate_turn

__all__ = ["FAULTS", "TURN_KEYS", "FakeLLM", "RecordedRequest", "tool_steps_responder", "validate_turn"]
