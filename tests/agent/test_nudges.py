"""The loop's own nudges (max steps, the doom-loop refusal) never become the run's visible answer."""

from __future__ import annotations

import pytest

from chainreact.agent.nudges import MAX_STEPS_PROMPT, NudgeFilter, repeat_refusal, strip_nudges
from chainreact.errors import NudgeEchoError
from chainreact.testing import FakeLLM
from chainreact.types import Final, TextDelta

from .conftest import call, make_agent

both = pytest.mark.parametrize("stream", [False, True], ids=["sync", "stream"])
REFUSAL = repeat_refusal("add", 2)


@both
async def test_max_steps_echo_answers_from_the_tool_result(server: FakeLLM, stream: bool) -> None:
    # The embedded model's failure from issue 25: the last, tool-less call repeats the max-steps nudge.
    server.add_turns([
        {"tool_calls": [call("add", {"a": 2, "b": 3})]},
        {"tool_calls": [call("add", {"a": 2, "b": 3})]},
        {"text": MAX_STEPS_PROMPT, "chunk_size": 7},
    ])
    agent = make_agent(server, max_steps=2)
    if stream:
        events = [ev async for ev in agent.stream("What is 2 + 3?")]
        streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert "maximum number of steps" not in streamed  # held back while it streamed, then dropped
        final = events[-1]
        assert isinstance(final, Final) and final.content == "5" and final.stop_reason == "max_steps"
    else:
        result = await agent.run("What is 2 + 3?")
        assert result.content == "5" and result.stop_reason == "max_steps"
        assert result.messages[-1].role == "assistant" and result.messages[-1].content == "5"


@both
async def test_echo_with_an_answer_keeps_the_answer(server: FakeLLM, stream: bool) -> None:
    server.add_turns([
        {"tool_calls": [call("add", {"a": 2, "b": 3})]},
        {"text": "You have reached the maximum number of steps for this task. The sum is 5.",
         "chunk_size": 5},
    ])
    agent = make_agent(server, max_steps=1)
    if stream:
        events = [ev async for ev in agent.stream("What is 2 + 3?")]
        streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert streamed.strip() == "The sum is 5."
        assert events[-1].content == "The sum is 5."  # type: ignore[attr-defined]
    else:
        assert (await agent.run("What is 2 + 3?")).content == "The sum is 5."


@both
async def test_echo_of_the_doom_loop_refusal_answers_from_the_result(server: FakeLLM, stream: bool) -> None:
    same = {"tool_calls": [call("add", {"a": 2, "b": 3})]}
    server.add_turns([same, same, same, {"text": REFUSAL}])
    agent = make_agent(server)
    if stream:
        events = [ev async for ev in agent.stream("What is 2 + 3?")]
        assert "already called" not in "".join(e.text for e in events if isinstance(e, TextDelta))
        assert events[-1].content == "5"  # type: ignore[attr-defined]
    else:
        result = await agent.run("What is 2 + 3?")
        assert result.content == "5" and result.stop_reason == "stop"
        refused = [m.content for m in result.messages if m.role == "tool"][-1]
        assert refused == REFUSAL  # the refusal the model saw is the text it echoed


async def test_echo_without_a_tool_result_is_a_clear_error(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("nope", {})]}, {"text": MAX_STEPS_PROMPT}])
    with pytest.raises(NudgeEchoError, match="loop's own instruction") as err:
        await make_agent(server, max_steps=1).run("What is 2 + 3?")
    assert "tester" in str(err.value) and "stronger model" in str(err.value)


@both
async def test_an_answer_that_is_no_echo_is_untouched(server: FakeLLM, stream: bool) -> None:
    # Text that starts like a nudge but is not one passes (after its sentence), and nothing is lost.
    text = "Error: none. Do not worry, 2 + 3 = 5."
    server.add_turns([{"tool_calls": [call("add", {"a": 2, "b": 3})]}, {"text": text, "chunk_size": 3}])
    agent = make_agent(server, max_steps=1)
    if stream:
        events = [ev async for ev in agent.stream("What is 2 + 3?")]
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text
        assert events[-1].content == text  # type: ignore[attr-defined]
    else:
        assert (await agent.run("What is 2 + 3?")).content == text


async def test_an_unnudged_call_is_not_filtered(server: FakeLLM) -> None:
    # No limit was met: even a literal copy of the nudge is the model's answer (nothing to repair).
    server.add_turns([{"text": MAX_STEPS_PROMPT}])
    assert (await make_agent(server).run("Quote your max-steps message.")).content == MAX_STEPS_PROMPT


def _stream_through(text: str, size: int) -> str:
    f = NudgeFilter()
    out = "".join(f.feed(text[i:i + size]) for i in range(0, len(text), size))
    return out + f.flush()


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_filter_holds_only_what_can_be_a_nudge(size: int) -> None:
    assert _stream_through("The answer is 42.", size) == "The answer is 42."
    assert _stream_through(MAX_STEPS_PROMPT, size) == ""
    assert _stream_through(" " + REFUSAL, size) == ""
    assert _stream_through("Sum: 5. " + MAX_STEPS_PROMPT + " Bye.", size).split() == ["Sum:", "5.", "Bye."]
    assert _stream_through("You have reached 42.", size) == "You have reached 42."


def test_filter_passes_ordinary_text_at_once() -> None:
    f = NudgeFilter()
    assert f.feed("The") == "The"  # no hold-back for text that cannot start a nudge
    assert f.feed(" sum is") == " sum is"
    assert f.feed(" 5. You") == " 5."  # a new sentence starting like a nudge is held...
    assert f.feed(" have") == ""
    assert f.feed(" a nice day.") == " You have a nice day."  # ...until it cannot be one


def test_strip_nudges_cut_short_and_in_other_case() -> None:
    assert strip_nudges("you have reached the maximum number of steps") == ""
    assert strip_nudges("YOU HAVE REACHED THE MAXIMUM NUMBER OF STEPS. 42") == "42"
    assert strip_nudges("plain") == "plain"
