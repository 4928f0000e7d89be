"""``ScriptModel``'s scripts, checked where they are written.

A script the simulator could not stream failed far from the mistake: a list item that
was not a ``Response`` (or a function returning None) was an ``AttributeError`` inside
the simulator's shell; a ``TextDelta`` whose text was not a str a ``TypeError`` in the
stream's assembly; a step that was not a chunk ended the turn in error, so the test
failed on a missing reply; a negative or NaN ``Delay`` was taken (and fails the same
script in ``actors.ScriptedModel``, whose trio sleep refuses it); steps after a ``Fail``
were never streamed, silently. What a real model may answer (a tool that does not
exist, arguments that do not fit, malformed JSON, an empty answer, a stream cut short)
is still a script: the runtime answers it as it answers a real model.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from runtime import (
    Fail,
    InvalidArgument,
    MessageFinish,
    MessageStart,
    Response,
    TextDelta,
    ToolCallDelta,
    call,
    empty,
    error,
    hang,
    reply,
)
from runtime.testing import FakeTool, InvariantViolation, ScriptModel, Simulation

BAD_SCRIPTS: list[tuple[Any, str]] = [
    (
        ["hello"],
        "ScriptModel script[0] must be a Response (built with reply(), call(), error() … or "
        "Response([step, …])); got 'hello' that is a 'str'.",
    ),
    (
        [reply("a"), [MessageStart(), TextDelta(text="b"), MessageFinish()]],
        "ScriptModel script[1] must be a Response (built with reply(), call(), error() … or "
        "Response([step, …])); got [MessageStart(",
    ),
    (
        [Response((MessageStart(), "hi", MessageFinish()))],
        "ScriptModel script[0].steps[1] must be a chunk (MessageStart, TextDelta, "
        "ReasoningDelta, ToolCallDelta, MessageFinish, RequestSent, ModelRetry), a Delay, a "
        "Fail or a Hang; got 'hi' that is a 'str'.",
    ),
    (
        [reply("a"), Response((MessageStart(), TextDelta(text=5), MessageFinish()))],  # type: ignore[arg-type]
        "ScriptModel script[1].steps[1]: TextDelta.text must be a str; got 5 that is an 'int'.",
    ),
    (
        [Response((MessageStart(), ToolCallDelta(index=0, name=7), MessageFinish()))],  # type: ignore[arg-type]
        "ScriptModel script[0].steps[1]: ToolCallDelta.name must be a str or None; got 7",
    ),
    (
        [Response((MessageStart(), ToolCallDelta(index=True, name="ok"), MessageFinish()))],
        "ScriptModel script[0].steps[1]: ToolCallDelta.index must be an int >= 0; got True",
    ),
    (
        [reply("x").after(-5)],
        "ScriptModel script[0].steps[0]: Delay.seconds must be a finite number of seconds "
        ">= 0; got -5.",
    ),
    (
        [reply("x").after(math.nan)],
        "ScriptModel script[0].steps[0]: Delay.seconds must be a finite number of seconds "
        ">= 0; got nan.",
    ),
    (
        [Response((MessageStart(), Fail("down"), TextDelta(text="never")))],
        "ScriptModel script[0].steps[2] comes after the Fail at steps[1] and is never "
        "streamed; end the response at that Fail, or move the step before it.",
    ),
    (
        [Response((Fail(5),))],  # type: ignore[arg-type]
        "ScriptModel script[0].steps[0]: Fail.message must be a str; got 5",
    ),
]


@pytest.mark.parametrize(("script", "message"), BAD_SCRIPTS)
def test_a_bad_script_is_refused_when_made(script: Any, message: str) -> None:
    """The error names the response and step, what was expected and what was got."""
    with pytest.raises(InvalidArgument) as caught:
        ScriptModel(script)
    assert str(caught.value).startswith(message), str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"script": reply("x")},
            "ScriptModel takes a list of Responses (one per model call) or a function of the "
            "request; got one Response. Pass [response], or fallback=response to answer every "
            "call with it.",
        ),
        (
            {"script": "hello"},
            "ScriptModel takes a list of Responses (one per model call) or a function of the "
            "request; got 'hello' that is a 'str'.",
        ),
        (
            {"script": [], "fallback": "hi"},
            "ScriptModel fallback must be a Response (built with reply(), call(), error() … or "
            "Response([step, …])); got 'hi' that is a 'str'.",
        ),
    ],
)
def test_a_bad_script_or_fallback(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        ScriptModel(**kwargs)
    assert str(caught.value) == message


def _settled(model: ScriptModel) -> Simulation:
    sim = Simulation(model=model, tools=[FakeTool("ok")])
    sim.send("s", "hello")
    sim.settle()
    return sim


def test_what_a_real_model_may_answer_is_a_script() -> None:
    """A call to a tool that does not exist, arguments the tool does not take, malformed
    JSON, an empty answer, a failure, a stall and a cut stream are taken: the runtime
    answers each as it answers a real model."""
    cut = Response((MessageStart(), TextDelta(text="half")))
    ScriptModel([error("down"), hang(), cut])
    script = [call("nope", {"text": "x"}), call("ok", {"zzz": 1}), call("ok", "{not json")]
    sim = _settled(ScriptModel([*script, empty(), reply("done")]))
    contents = [m.content for m in sim.head("s").messages]
    assert any("There is no tool named 'nope'" in c for c in contents)
    assert any(c.startswith("[Empty response]") for c in contents)
    assert contents[-1] == "done"


@pytest.mark.parametrize(
    ("answer", "got"),
    [
        (None, "None that is a 'NoneType'"),
        ("hi", "'hi' that is a 'str'"),
        (reply("x").after(-1), "steps[0]: Delay.seconds must be a finite number"),
    ],
)
def test_a_function_script_that_answers_no_response(answer: Any, got: str) -> None:
    """A function script's answer is checked when the simulator takes it: the error names
    the call and the session (it was an AttributeError in the simulator's shell)."""
    with pytest.raises(InvariantViolation) as caught:
        _settled(ScriptModel(lambda request: answer))
    text = str(caught.value)
    assert text.startswith(
        "Contract (a model answers every call with a Response) broken by call 1 of session "
        "'s': ScriptModel's respond(request) returned "
    ), text
    assert got in text


def test_a_malformed_chunk_of_a_function_script_fails_its_turn() -> None:
    """A chunk the runtime cannot take fails the call as a real model's does: a
    ``StreamError`` that says what is wrong, not a ``TypeError`` out of the simulator."""
    bad = Response((MessageStart(), TextDelta(text=5), MessageFinish()))  # type: ignore[arg-type]
    with pytest.raises(InvariantViolation, match=r"TextDelta\.text must be a str; got 5"):
        _settled(ScriptModel(lambda request: bad))


class _Raw:
    """A simulator model of its own (not a ``ScriptModel``): its chunks are streamed as a
    real model's are."""

    name = "raw"

    def __init__(self, response: Response) -> None:
        self.response = response

    def respond(self, request: Any) -> Response:
        return self.response


@pytest.mark.parametrize(
    ("chunk", "problem"),
    [
        (TextDelta(text=5), "TextDelta.text must be a str (got 5 that is an 'int')"),  # type: ignore[arg-type]
        (
            ToolCallDelta(index=0, name="ok", arguments=5),  # type: ignore[arg-type]
            "ToolCallDelta.arguments must be a str (got 5 that is an 'int')",
        ),
        (
            ToolCallDelta(index=0, name=7),  # type: ignore[arg-type]
            "ToolCallDelta.name must be a str or None (got 7 that is an 'int')",
        ),
    ],
)
def test_a_malformed_chunk_fails_the_call_as_a_real_models(chunk: Any, problem: str) -> None:
    """The runtime's stream assembly took a non-str text and failed later with a
    ``TypeError`` (out of the simulator; in a runtime, out of the session's step): it is a
    malformed stream, and the call fails saying why."""
    sim = _settled(_Raw(Response((MessageStart(), chunk, MessageFinish()))))  # type: ignore[arg-type]
    (row,) = sim.head("s").model_calls()
    assert row.error is not None
    assert f"the model's stream is malformed: {problem}" in row.error
