"""Arguments of the Runtime's methods that cannot be used: refused at once, saying what was
expected, what came and how to fix it (not a deep TypeError, an OverflowError or a hang)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from actors import InvalidConfig, InvalidTool, Runtime, ScriptedModel, Settings, Tool, reply, tool
from runtime import InvalidInput

WAIT = 60.0

BAD_TIMEOUTS = [-1, 0, -0.5, float("nan"), float("inf"), float("-inf"), "5", True, [30],
                10**400, 1e300, 4e9]  # fmt: skip


def repr_id(value: object) -> str:
    """A short test id for a parameter (10**400 has 401 digits)."""
    shown = repr(value)
    return shown if len(shown) <= 12 else shown[:10] + "…"


@pytest.fixture
def rt() -> Iterator[Runtime]:
    model = ScriptedModel([], fallback=reply("hi"))
    with Runtime(model=model, store=":memory:", settings=Settings(passivate_after=None)) as rt:
        rt.send("s1", "hello")
        rt.wait_idle("s1", timeout=WAIT)
        yield rt


class TestTimeouts:
    @pytest.mark.parametrize("timeout", BAD_TIMEOUTS, ids=repr_id)
    def test_wait_idle_refuses_a_bad_timeout(self, rt: Runtime, timeout: Any) -> None:
        """A negative, zero, NaN or infinite timeout returned at once as if idle; a str raised
        a TypeError from deep inside, 10**400 an OverflowError."""
        with pytest.raises(
            InvalidConfig,
            match=r"^wait_idle\(\)'s timeout must be a positive number of seconds, at most "
            r"3153600000 \(100 years\), or None to wait as long as it takes \(got .+\)\. "
            r"Pass one like timeout=30\.$",
        ):
            rt.wait_idle("s1", timeout=timeout)

    @pytest.mark.parametrize("timeout", [10**400, 1e300, 4e9], ids=repr_id)
    def test_ask_refuses_a_timeout_no_lock_can_hold(self, rt: Runtime, timeout: Any) -> None:
        """ask(timeout=10**400) stored the input, then raised OverflowError from the lock."""
        with pytest.raises(
            InvalidConfig,
            match=r"^ask\(\)'s timeout must be a positive number of seconds, at most "
            r"3153600000 \(100 years\), or None to wait as long as it takes \(got .+\); "
            r"nothing was sent\. Pass one like timeout=30\.$",
        ):
            rt.ask("s2", "hi", timeout=timeout)
        assert [info.session_id for info in rt.sessions()] == ["s1"]

    @pytest.mark.parametrize("timeout", BAD_TIMEOUTS, ids=repr_id)
    def test_wait_passivated_refuses_a_bad_timeout(self, rt: Runtime, timeout: Any) -> None:
        """wait_passivated(timeout=nan) waited for ever, -1 returned False at once, "5" and
        10**400 raised a TypeError or OverflowError from the lock."""
        with pytest.raises(
            InvalidConfig,
            match=r"^wait_passivated\(\)'s timeout must be a positive number of seconds, at "
            r"most 3153600000 \(100 years\), or None to wait as long as it takes \(got .+\)\. "
            r"Pass one like timeout=30\.$",
        ):
            rt.wait_passivated("s1", timeout=timeout)

    def test_good_timeouts_still_wait(self, rt: Runtime) -> None:
        """Ints, floats and None are taken."""
        for timeout in (WAIT, int(WAIT), None):
            assert rt.wait_idle("s1", timeout=timeout).session_id == "s1"


BAD_IDS = [("", r"it must not be empty"),
           (5, r"it must be a str \(got 5 that is an 'int'\)"),
           (None, r"it must be a str \(got None that is a 'NoneType'\)"),
           ("a\x00b", r"it holds the control character '\\x00' at index 1")]  # fmt: skip


class TestSessionIds:
    @pytest.mark.parametrize(
        ("method", "session_id", "why"),
        [(method, session_id, why)
         for method in ("wait_idle", "wait_passivated", "interrupt", "subscribe", "state",
                        "timeline", "model_calls", "approve", "deny", "pending_approvals")
         for session_id, why in BAD_IDS
         if not (method == "subscribe" and session_id is None)],  # None: every session
    )  # fmt: skip
    def test_a_bad_session_id_is_invalid_input(
        self, rt: Runtime, method: str, session_id: Any, why: str
    ) -> None:
        """wait_idle said the session had no stored input, interrupt returned False,
        subscribe made a subscription that never hears anything, and state, timeline,
        model_calls and pending_approvals raised the store's InvalidArgument; now
        InvalidInput, as send and ask raise, with the same message."""
        calls = {
            "wait_idle": lambda: rt.wait_idle(session_id, timeout=WAIT),
            "wait_passivated": lambda: rt.wait_passivated(session_id, timeout=WAIT),
            "interrupt": lambda: rt.interrupt(session_id),
            "subscribe": lambda: rt.subscribe(lambda update: None, session_id=session_id),
            "state": lambda: rt.state(session_id),
            "timeline": lambda: rt.timeline(session_id),
            "model_calls": lambda: rt.model_calls(session_id),
            "approve": lambda: rt.approve(session_id, "call_1"),
            "deny": lambda: rt.deny(session_id, "call_1"),
            "pending_approvals": lambda: rt.pending_approvals(session_id),
        }
        with pytest.raises(InvalidInput, match=rf"^Session id .* cannot be used: {why}\. "):
            calls[method]()

    def test_subscribe_to_every_session_still_takes_none(self, rt: Runtime) -> None:
        """session_id=None (the default) is every session, not a bad id."""
        subscription = rt.subscribe(lambda update: None)
        subscription.close()
        assert re.match(r"^Subscription", repr(subscription))


class TestCallStore:
    @pytest.mark.parametrize(
        ("fn", "got"),
        [(5, r"5 that is an 'int'"),
         ("list_sessions", r"'list_sessions' that is a 'str'"),
         (lambda: 1, r"<function .+> that cannot be called with one argument")],
    )  # fmt: skip
    def test_what_is_no_function_of_the_store(self, rt: Runtime, fn: Any, got: str) -> None:
        """call_store(5) raised "'int' object is not callable" from the store thread, and a
        function of no argument a TypeError about positional arguments."""
        with pytest.raises(
            InvalidConfig,
            match=rf"^call_store\(\) takes a function of one argument, the store \(got {got}\)\. "
            r"Write rt\.call_store\(lambda store: store\.list_sessions\(\)\)\.$",
        ):
            rt.call_store(fn)

    @pytest.mark.parametrize("timeout", [-1, 0, float("nan"), "5", 10**400], ids=repr_id)
    def test_a_bad_timeout(self, rt: Runtime, timeout: Any) -> None:
        """timeout=-1 raised a TimeoutError with no message, 0 waited Settings.store_timeout
        and "5" raised a TypeError from the store's future."""
        with pytest.raises(
            InvalidConfig,
            match=r"^call_store\(\)'s timeout must be a positive number of seconds, at most "
            r"3153600000 \(100 years\), or None for Settings\.store_timeout \(got .+\)\. "
            r"Pass one like timeout=30\.$",
        ):
            rt.call_store(lambda store: None, timeout=timeout)

    def test_a_function_of_the_store_is_run(self, rt: Runtime) -> None:
        """The store's own methods and functions of one argument are taken."""
        assert rt.call_store(lambda store: "s1" in store, timeout=WAIT) is True
        sessions = rt.call_store(lambda store: store.list_sessions())
        assert [info.session_id for info in sessions] == ["s1"]


def greet(name: str) -> str:
    """Greet someone."""
    return f"hi {name}"


def shout(text: str) -> str:
    """Shout."""
    return text.upper()


class Greeter:
    """A class with a tool-like method; the class itself is no tool."""

    def __call__(self, name: str) -> str:
        return f"hi {name}"

    def greet(self, name: str) -> str:
        """Greet someone."""
        return f"hi {name}"


EXPECTED_TOOLS = (
    r"tools takes functions \(plain, or decorated with @tool\) and Tools made with "
    r"tool\(fn, \.\.\.\)"
)


class TestToolList:
    """A tools list holding something that is no tool names its position, what it is, what
    was expected and how to write it (not a message about tool() or an AttributeError)."""

    def make(self, tools: list[Any]) -> Runtime:
        return Runtime(model=ScriptedModel([]), store=":memory:", tools=tools)

    @pytest.mark.parametrize(
        ("item", "got"),
        [(5, r"5 that is an 'int'"),
         (None, r"None that is a 'NoneType'"),
         ({"name": "greet"}, r"\{'name': 'greet'\} that is a 'dict'")],
        ids=["int", "None", "dict"],
    )  # fmt: skip
    def test_a_value_that_is_no_function(self, item: Any, got: str) -> None:
        """tools=[5] said 'tool() takes a function', naming no position; tools=[None] raised
        AttributeError: 'function' object has no attribute 'name'."""
        with pytest.raises(
            InvalidConfig,
            match=rf"^tools\[1\] is {got}, not a tool; {EXPECTED_TOOLS}\. Pass the function "
            r"itself: tools=\[my_function\], not tools=\[my_function\(\)\]\.$",
        ):
            self.make([greet, item])

    def test_a_long_value_is_cut(self) -> None:
        """A long repr is cut, so the message stays readable."""
        with pytest.raises(InvalidConfig) as caught:
            self.make([list(range(1000))])
        assert len(str(caught.value)) < 400
        assert "…" in str(caught.value)

    def test_a_name(self) -> None:
        with pytest.raises(
            InvalidConfig,
            match=rf"^tools\[0\] is the str 'greet', not a tool; {EXPECTED_TOOLS}\. Pass the "
            r"function itself, not its name: tools=\[greet\]\.$",
        ):
            self.make(["greet"])

    def test_a_class(self) -> None:
        """A callable class was taken as a tool: the model's call would make a Greeter."""
        with pytest.raises(
            InvalidConfig,
            match=rf"^tools\[0\] is the class Greeter, not a tool: calling it would make a "
            rf"Greeter, not run a tool\. {EXPECTED_TOOLS}; pass a function, or a method of an "
            r"instance: tools=\[Greeter\(\)\.method\]\.$",
        ):
            self.make([Greeter])

    def test_the_tool_class(self) -> None:
        """tools=[Tool] said its parameter 'signature' had no type annotation."""
        with pytest.raises(
            InvalidConfig,
            match=rf"^tools\[0\] is the class Tool itself, not a tool; {EXPECTED_TOOLS}\. "
            r"Decorate a def with @tool, or write tool\(fn\)\.$",
        ):
            self.make([Tool])

    def test_an_instance_without_a_name(self) -> None:
        """What tool() cannot make a tool of is named with its position."""
        with pytest.raises(
            InvalidTool,
            match=r"^tools\[0\]: Cannot name a tool after <.*Greeter object at .*>, which has "
            r"no __name__; pass one with tool\(fn, name=\.\.\.\)\.$",
        ):
            self.make([Greeter()])

    def test_the_same_tool_twice(self) -> None:
        """One tool listed twice said 'Two tools are named' and showed one function twice."""
        made = tool(greet)
        for tools in ([made, shout, made], [greet, shout, greet]):
            with pytest.raises(
                InvalidTool,
                match=r"^tools\[0\] and tools\[2\] are the same tool 'greet' \(the function "
                r"<function greet at .*>\), listed twice; list each tool once\.$",
            ):
                self.make(tools)

    def test_two_tools_of_one_name(self) -> None:
        with pytest.raises(
            InvalidTool,
            match=r"^Two tools are named 'greet': tools\[0\] \(<function greet at .*>\) and "
            r"tools\[1\] \(<function shout at .*>\); give one another name with "
            r"tool\(fn, name=\.\.\.\)\.$",
        ):
            self.make([greet, tool(shout, name="greet")])

    def test_good_tools_still_work(self) -> None:
        """Plain functions, @tool functions and bound methods are taken."""
        rt = self.make([greet, tool(shout), tool(Greeter().greet, name="hello")])
        assert rt.toolbox.names() == ("greet", "hello", "shout")
