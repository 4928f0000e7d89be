"""Input and tool output on a real runtime: the actor-level findings of the fuzzing run
(issue 15), pinned.

- Finding 1: a lone surrogate in text passed validation and then failed in the
  SQLite store's ``send``.
- Finding 2: a tool that lists a directory holding a file whose name is not
  UTF-8 failed the whole turn; its output is now made storable, visibly.
- Finding 5: odd session ids and fields of the wrong type raised errors other
  than ``InvalidInput`` from ``Runtime.send``.
"""

from __future__ import annotations

import os
import sys
import typing
from pathlib import Path

import pytest
from harness import WAIT, RuntimeFactory, make_runtime

from actors import InvalidTool, ScriptedModel, call, reply, tool
from runtime import Category, InvalidInput, MessageType, Status, UnknownSession, UserInput

__all__ = ["make_runtime"]

DEEP: object = []
for _ in range(100):
    DEEP = [DEEP]


@pytest.fixture
def odd_dir(tmp_path: Path) -> Path:
    """A directory holding a file whose name is the bytes b'report-\\xff.txt' (not UTF-8)."""
    folder = tmp_path / "files"
    folder.mkdir()
    try:
        fd = os.open(
            os.path.join(os.fsencode(folder), b"report-\xff.txt"), os.O_CREAT | os.O_WRONLY
        )
    except (OSError, ValueError):  # a file system that refuses such names
        pytest.skip("this file system refuses file names that are not UTF-8")
    os.close(fd)
    assert os.listdir(folder) == ["report-\udcff.txt"]
    return folder


class TestToolOutput:
    def test_a_listing_with_a_non_utf8_name_is_a_result(
        self, make_runtime: RuntimeFactory, odd_dir: Path
    ) -> None:
        """The turn ends normally; the model reads the name with the byte spelled out."""

        @tool
        def list_files() -> list[str]:
            """List the files."""
            return os.listdir(odd_dir)

        model = ScriptedModel([call("list_files"), reply("one report")])
        rt = make_runtime(model=model, tools=[list_files])
        user = rt.send("s", "what is there?")
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(user.id).status is Status.PROCESSED
        result = next(m for m in state if m.type is MessageType.TOOL_RESULT)
        assert not result.is_error
        assert result.content == '["report-\\xff.txt"]'
        assert rt.timeline("s").head == state  # it was stored, and reads back the same

    def test_an_exception_message_with_a_surrogate(self, make_runtime: RuntimeFactory) -> None:
        @tool
        def explode() -> str:
            """Fails with a message that holds a lone surrogate."""
            raise RuntimeError("bad name report-\udcff.txt")

        model = ScriptedModel([call("explode"), reply("it failed")])
        rt = make_runtime(model=model, tools=[explode])
        rt.send("s", "go")
        state = rt.wait_idle("s", timeout=WAIT)
        result = next(m for m in state if m.type is MessageType.TOOL_RESULT)
        assert result.is_error
        assert "bad name report-\\xff.txt" in result.content

    def test_a_result_nested_too_deep_is_an_error_result(self) -> None:
        """Tuples nested thousands deep crash orjson (an abort, not an exception): refused first."""
        import trio

        deep: object = "leaf"
        for _ in range(20_000):
            deep = (deep,)

        @tool
        def nested() -> object:
            """Returns a value nested far too deep."""
            return deep

        outcome = trio.run(lambda: nested.invoke({}))
        assert (outcome.is_error, outcome.error_type) == (True, "exception")
        assert "nests more than 200 levels deep" in outcome.content

    def test_tracebacks_read_the_same_on_every_python(self) -> None:
        """The frames of an exception result have no caret lines (3.13 adds them)."""
        import trio

        def helper() -> None:
            raise ValueError("deep")

        @tool
        def f() -> None:
            """Calls helper."""
            helper()

        outcome = trio.run(lambda: f.invoke({}))
        lines = outcome.content.splitlines()
        assert lines[0:2] == ["ValueError: deep", "Traceback (innermost last):"]
        assert "in f" in lines[2]
        assert "in helper" in lines[4]
        assert not any(set(line.strip()) <= {"~", "^"} for line in lines)


class TestTypedDictParameters:
    """Finding 8: on Python 3.12+ a typing.TypedDict parameter works (pydantic supports it);
    on 3.11 it is refused with a hint to use typing_extensions."""

    def test_typing_typed_dict(self) -> None:
        class Point(typing.TypedDict):
            x: int

        def f(point: Point) -> None: ...

        if sys.version_info < (3, 12):
            with pytest.raises(InvalidTool, match=r"typing_extensions\.TypedDict"):
                tool(f)
            return
        made = tool(f)
        (schema,) = made.parameters["properties"].values()
        assert schema["properties"]["x"]["type"] == "integer"


class TestSend:
    @pytest.mark.parametrize(
        ("session_id", "why"),
        [
            ("", "it must not be empty"),
            (" ", "it is blank"),
            ("\u3000 ", "it is blank"),
            ("\x00s", "it holds the control character"),
            ("s\ud800", "it holds a lone surrogate"),
            (None, "it must be a str"),
        ],
    )
    def test_odd_session_ids_are_invalid_input(
        self, make_runtime: RuntimeFactory, session_id: object, why: str
    ) -> None:
        rt = make_runtime(model=ScriptedModel([]))
        with pytest.raises(InvalidInput, match=rf"^Session id .* cannot be used: {why}"):
            rt.send(session_id, "hi")  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match=rf"^Session id .* cannot be used: {why}"):
            rt.ask(session_id, "hi")  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match=rf"^Session id .* cannot be used: {why}"):
            rt.post(session_id, Category.NOTIFICATION, "hi")  # type: ignore[arg-type]
        assert rt.sessions() == []

    def test_a_blank_session_stored_before_can_still_be_decided(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """Blank ids are refused for input only: approving or denying a call of a blank
        session (stored before the rule) reaches the session: here, none is stored, so
        the answer is UnknownSession, not InvalidInput."""
        rt = make_runtime(model=ScriptedModel([]))
        with pytest.raises(UnknownSession, match=r"No session ' ' is stored"):
            rt.approve(" ", "call_1")

    @pytest.mark.parametrize(
        "fields",
        [
            {"sender": 5},
            {"chatbot_id": None},
            {"attachments": 7},
            {"metadata": {"n": 2**70}},
            {"metadata": {"deep": DEEP}},
        ],
    )
    def test_fields_of_the_wrong_type_are_invalid_input(
        self, make_runtime: RuntimeFactory, fields: dict[str, object]
    ) -> None:
        rt = make_runtime(model=ScriptedModel([]))
        with pytest.raises(InvalidInput):
            rt.send("s", "hi", **fields)
        assert rt.sessions() == []

    def test_a_lone_surrogate_is_refused_before_the_store(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """On an SQLite runtime it used to fail inside the store with TypeError."""
        rt = make_runtime(model=ScriptedModel([]))
        with pytest.raises(InvalidInput, match=r"^Input text must be valid Unicode text"):
            rt.send("s", "hello \ud800")
        with pytest.raises(InvalidInput, match=r"^Input text must be valid Unicode text"):
            rt.send("s", UserInput(text="hello \ud800"))
        assert rt.sessions() == []
