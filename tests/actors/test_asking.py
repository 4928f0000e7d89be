"""Answers as values: ``ask``, ``ask_async`` and ``stream`` (asyncio and trio), typed subscriptions."""

from __future__ import annotations

import asyncio
import re
import threading
from typing import Any

import pytest
import trio
import trio.testing

from actors import (
    AskTimeout,
    Delta,
    InvalidConfig,
    ReasoningPiece,
    Reply,
    Runtime,
    RuntimeStopped,
    ScriptedModel,
    Settings,
    TextPiece,
    ToolCallStarted,
    ToolResult,
    Update,
    call,
    error,
    reply,
    tool,
)
from runtime import InvalidInput, Status, TurnOutcome, UserInput

WAIT = 60.0


@tool
def weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: The city's name.
    """
    return f"{city}: sunny"


def runtime(*script: Any, tools: list[Any] | None = None) -> Runtime:
    model = ScriptedModel(list(script), fallback=reply("fallback"))
    settings = Settings(passivate_after=None)
    return Runtime(model=model, store=":memory:", tools=tools or [weather], settings=settings)


class TestAsk:
    def test_a_reply_is_a_value(self) -> None:
        """``ask`` returns the turn's reply text, outcome, messages, metrics and model calls."""
        with runtime(call("weather", {"city": "Tokyo"}), reply("Sunny in Tokyo.")) as rt:
            answer = rt.ask("s1", "Weather in Tokyo?", sender="Chii")
        assert isinstance(answer, Reply)
        assert answer.ok
        assert answer.text == "Sunny in Tokyo."
        assert answer.outcome is TurnOutcome.PROCESSED
        assert answer.reason is None
        assert answer.input.status is Status.PROCESSED
        assert [m.type.value for m in answer.messages] == ["tool_call", "tool_result", "text"]
        assert answer.metrics["turn_tool_calls"] == 1
        assert len(answer.model_calls) == 2

    def test_a_failure_has_a_reason_for_people(self) -> None:
        """A failed turn: ``error``, a short reason for the user, the detail for developers."""
        with runtime(error("the provider is down")) as rt:
            answer = rt.ask("s1", "hi")
        assert answer.outcome is TurnOutcome.ERROR
        assert answer.text == ""
        assert answer.reason == "The model call failed (ModelFailure); please try again."
        assert "the provider is down" in (answer.detail or "")

    def test_an_interrupted_turn_says_so(self) -> None:
        """A newer message interrupts the turn: the first ask gets ``interrupted``."""
        started = threading.Event()

        @tool(timeout=None)
        async def slow() -> str:
            """Waits."""
            started.set()
            await trio.sleep_forever()
            return "never"

        with runtime(call("slow"), reply("second"), tools=[slow]) as rt:
            answers: list[Reply] = []
            first = threading.Thread(target=lambda: answers.append(rt.ask("s1", "first")))
            first.start()
            assert started.wait(WAIT)
            second = rt.ask("s1", "second")
            first.join(WAIT)
        assert answers[0].outcome is TurnOutcome.INTERRUPTED
        assert answers[0].reason == "Interrupted by a newer message."
        assert second.text == "second"

    def test_a_timeout_leaves_the_turn_running(self) -> None:
        """No answer in time: ``AskTimeout``; the turn goes on and ends later."""
        release = threading.Event()

        @tool(timeout=None)
        def blocked() -> str:
            """Waits for the test."""
            release.wait(WAIT)
            return "done"

        with runtime(call("blocked"), reply("late"), tools=[blocked]) as rt:
            with pytest.raises(AskTimeout, match=r"^Session 's1' did not answer within 0.05 s"):
                rt.ask("s1", "hi", timeout=0.05)
            release.set()
            assert [m.content for m in rt.wait_idle("s1", timeout=WAIT)][-1] == "late"

    def test_a_timeout_while_the_turn_waits_for_approval_says_so(self) -> None:
        """An ask that times out while its turn waits for a person names the call and how to
        decide it (it said only that the turn goes on). On trio's mock clock, the wait times
        out only once the call is known to wait."""

        @tool(approval=True)
        def ban(user: str) -> str:
            """Ban a user.

            Args:
                user: Who.
            """
            return f"banned {user}"

        called = threading.Event()
        clock = trio.testing.MockClock()
        with runtime(call("ban", {"user": "spammer"}), tools=[ban]) as rt:
            rt.subscribe(lambda u: called.set() if u.message.tool_call is not None else None)
            errors: list[BaseException] = []
            waiting: list[str] = []

            async def main() -> None:
                async def ask() -> None:
                    try:
                        await rt.ask_async("s1", "ban the spammer", timeout=10)
                    except AskTimeout as exc:
                        errors.append(exc)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(ask)
                    await trio.to_thread.run_sync(called.wait, WAIT)
                    # The actor's answer comes after the step that made the call has ended.
                    state = await trio.to_thread.run_sync(lambda: rt.state("s1"))
                    assert state.active_turn is not None
                    waiting.extend(state.active_turn.awaiting_approval)
                    clock.jump(11)

            trio.run(main, clock=clock)
        (error,), (call_id,) = errors, waiting
        assert str(error) == (
            f"Session 's1' did not answer within 10 s: its turn waits for a person to approve "
            f"tool call {call_id!r} (ban). Decide it with Runtime.approve or Runtime.deny "
            "(Runtime.pending_approvals lists what waits), or stop the turn with "
            "Runtime.interrupt; the turn goes on."
        )

    def test_invalid_input_is_refused_and_nothing_is_stored(self) -> None:
        """Blank input: ``InvalidInput`` at once; the session was never made."""
        with runtime() as rt:
            with pytest.raises(InvalidInput):
                rt.ask("s1", "   ")
            assert rt.sessions() == []

    @pytest.mark.parametrize("method", ["send", "ask", "ask_async", "stream"])
    def test_a_bad_field_names_the_method_called(self, method: str) -> None:
        """A keyword that is no ``UserInput`` field, a ``UserInput`` with extra fields, or
        input that is no text: ``InvalidInput`` naming the method the caller used
        (``stream`` and ``ask_async`` said ``ask()``); nothing is stored."""
        with runtime(reply("hi")) as rt:

            def call(text: Any, **fields: Any) -> None:
                if method in ("send", "ask"):
                    getattr(rt, method)("s1", text, **fields)
                    return

                async def main() -> None:
                    if method == "ask_async":
                        await rt.ask_async("s1", text, **fields)
                    else:
                        async for _ in rt.stream("s1", text, **fields):
                            pass

                trio.run(main)

            name = re.escape(f"{method}()")
            with pytest.raises(InvalidInput, match=rf"^{name} takes the fields of UserInput"):
                call("hi", sendr="Chii")
            with pytest.raises(InvalidInput, match=rf"^{name} takes extra fields only"):
                call(UserInput(text="hi"), sender="Chii")
            with pytest.raises(InvalidInput, match=rf"^{name} takes a UserInput or a str"):
                call(42)
            assert rt.sessions() == []

    @pytest.mark.parametrize("timeout", [-1, 0, float("nan"), float("inf"), "5", True])
    def test_a_bad_timeout_is_refused_and_nothing_is_stored(self, timeout: Any) -> None:
        """A timeout that is not a positive number of seconds (a user's ``-1`` was stored and
        answered, then reported as not answered within -1 s): ``InvalidConfig`` at once, from
        ``ask`` and ``ask_async``; the session was never made."""
        with runtime(reply("hi")) as rt:
            with pytest.raises(InvalidConfig, match=r"timeout must be a positive number"):
                rt.ask("s1", "hi", timeout=timeout)

            async def main() -> None:
                await rt.ask_async("s1", "hi", timeout=timeout)

            with pytest.raises(InvalidConfig, match=r"timeout must be a positive number"):
                trio.run(main)
            assert rt.sessions() == []


class TestOnTheEffectsLoop:
    @pytest.mark.parametrize("method", ["ask", "wait_idle"])
    def test_a_blocking_call_from_an_async_tool_is_refused(self, method: str) -> None:
        """``ask`` or ``wait_idle`` from an async tool (which runs on the effects loop) would
        block the loop every turn needs, its own answer's too: ``InvalidConfig`` at once,
        saying what to do instead (it blocked the loop until its timeout)."""
        seen: list[BaseException] = []
        holder: list[Runtime] = []

        @tool
        async def asks_back() -> str:
            """Ask another session."""
            rt = holder[0]
            try:
                if method == "ask":
                    rt.ask("s2", "hi", timeout=5)
                else:
                    rt.wait_idle("s1", timeout=5)
            except Exception as exc:
                seen.append(exc)
            return "done"

        with runtime(call("asks_back"), reply("ok"), tools=[asks_back]) as rt:
            holder.append(rt)
            assert rt.ask("s1", "go", timeout=WAIT).ok
        assert len(seen) == 1
        assert isinstance(seen[0], InvalidConfig)
        assert re.match(
            rf"^Runtime\.{method}\(\) was called on the runtime's effects loop \(from an async "
            r"tool, or code it calls\): it would block the loop that runs every turn",
            str(seen[0]),
        ), str(seen[0])

    def test_ask_async_from_an_async_tool_is_answered(self) -> None:
        """What the refusal says to do instead works: an async tool awaits ask_async."""
        holder: list[Runtime] = []

        @tool
        async def asks_back() -> str:
            """Ask another session."""
            answer = await holder[0].ask_async("s2", "hi", timeout=WAIT)
            return f"s2 said {answer.text}"

        model = ScriptedModel([call("asks_back"), reply("fine"), reply("done")])
        settings = Settings(passivate_after=None)
        with Runtime(model=model, store=":memory:", tools=[asks_back], settings=settings) as rt:
            holder.append(rt)
            answer = rt.ask("s1", "go", timeout=WAIT)
        assert answer.text == "done"
        assert [m.content for m in answer.messages if m.tool_call_id] == ["s2 said fine"]


class TestFromASyncTool:
    """A sync tool runs in a worker thread while its session's turn waits for it."""

    @pytest.mark.parametrize("method", ["wait_idle", "wait_passivated"])
    def test_waiting_on_its_own_session_is_refused(self, method: str) -> None:
        """Its session is busy until the tool returns: ``wait_idle`` waited out its whole
        timeout (and the tool's) and could never succeed, ``wait_passivated`` returned False
        after it. ``InvalidConfig`` at once, saying why and what to do instead."""
        seen: list[BaseException] = []
        holder: list[Runtime] = []

        @tool(timeout=10)
        def waits() -> str:
            """Wait for this session."""
            rt = holder[0]
            try:
                if method == "wait_idle":
                    rt.wait_idle("s1", timeout=WAIT)
                else:
                    rt.wait_passivated("s1", timeout=WAIT)
            except Exception as exc:
                seen.append(exc)
            return "done"

        with runtime(call("waits"), reply("ok"), tools=[waits]) as rt:
            holder.append(rt)
            answer = rt.ask("s1", "go", timeout=WAIT)
        assert [m.content for m in answer.messages if m.tool_call_id] == ["done"]
        assert len(seen) == 1, "the tool timed out waiting"
        assert isinstance(seen[0], InvalidConfig)
        assert re.match(
            rf"^Runtime\.{method}\('s1'\) was called from the tool 'waits', which runs in "
            r"a turn of session 's1': .+, so the wait could only time out\. Return from the "
            r"tool instead",
            str(seen[0]),
        ), str(seen[0])

    def test_waiting_on_another_session_is_answered(self) -> None:
        """What the refusal says to do instead works: a sync tool waits for another
        session."""
        holder: list[Runtime] = []

        @tool(timeout=WAIT)
        def waits() -> str:
            """Wait for session s2."""
            rt = holder[0]
            rt.send("s2", "hi")
            state = rt.wait_idle("s2", timeout=WAIT)
            return f"s2 has {len(state.messages)} messages"

        model = ScriptedModel([call("waits"), reply("fine"), reply("done")])
        settings = Settings(passivate_after=None)
        with Runtime(model=model, store=":memory:", tools=[waits], settings=settings) as rt:
            holder.append(rt)
            answer = rt.ask("s1", "go", timeout=WAIT)
        assert answer.text == "done"
        assert [m.content for m in answer.messages if m.tool_call_id] == ["s2 has 2 messages"]


class TestAsyncio:
    def test_two_sessions_answer_concurrently(self) -> None:
        """``ask_async`` from asyncio: two sessions at once, each its own reply."""
        with runtime(reply("one"), reply("two")) as rt:

            async def main() -> list[Reply]:
                return list(await asyncio.gather(rt.ask_async("a", "hi"), rt.ask_async("b", "hi")))

            answers = asyncio.run(main())
        assert sorted(a.text for a in answers) == ["one", "two"]
        assert {a.session_id for a in answers} == {"a", "b"}

    def test_stream_yields_typed_events_then_the_reply(self) -> None:
        """``stream``: reasoning and text pieces, the tool call and its result, the reply."""
        script = (
            call("weather", {"city": "Paris"}, reasoning="Check it."),
            reply("Paris is sunny today.", piece=4),
        )
        with runtime(*script) as rt:

            async def main() -> list[Any]:
                return [event async for event in rt.stream("s1", "Weather in Paris?")]

            events = asyncio.run(main())
        assert isinstance(events[-1], Reply)
        kinds = [type(e).__name__ for e in events]
        assert kinds.index("ToolCallStarted") < kinds.index("ToolResult") < kinds.index("TextPiece")
        assert "".join(e.text for e in events if isinstance(e, ReasoningPiece)) == "Check it."
        assert "".join(e.text for e in events if isinstance(e, TextPiece)) == events[-1].text
        started = next(e for e in events if isinstance(e, ToolCallStarted))
        assert (started.name, dict(started.arguments)) == ("weather", {"city": "Paris"})
        result = next(e for e in events if isinstance(e, ToolResult))
        assert (result.content, result.is_error) == ("Paris: sunny", False)

    def test_cancelling_the_task_interrupts_the_turn(self) -> None:
        """The caller gives up (task cancelled): the turn that answers it is interrupted."""
        started = threading.Event()

        @tool(timeout=None)
        async def slow() -> str:
            """Waits."""
            started.set()
            await trio.sleep_forever()
            return "never"

        with runtime(call("slow"), tools=[slow]) as rt:

            async def main() -> None:
                task = asyncio.create_task(rt.ask_async("s1", "hi"))
                await asyncio.get_running_loop().run_in_executor(None, started.wait, WAIT)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task

            asyncio.run(main())
            state = rt.wait_idle("s1", timeout=WAIT)
        (turn,) = state.turn_list()
        assert turn.status.value == "interrupted"
        assert "the caller stopped waiting" in (turn.reason or "")

    def test_one_caller_giving_up_leaves_a_turn_another_still_waits_for(self) -> None:
        """Two people ask one session (a channel) and one turn claims both inputs: the one
        whose task is cancelled does not interrupt the turn the other still waits for (it was
        interrupted, and the other got "the caller stopped waiting"); once every caller gave
        up, it is interrupted."""
        started, release = threading.Event(), threading.Event()
        store_held, store_free = threading.Event(), threading.Event()

        @tool(timeout=None)
        def lookup() -> str:
            """Waits for the test."""
            started.set()
            release.wait(WAIT)
            return "found"

        def hold_store(_: object) -> None:
            store_held.set()
            store_free.wait(WAIT)

        script = (reply("first"), call("lookup"), reply("both answered"), call("lookup"))
        with runtime(*script, tools=[lookup]) as rt:
            assert rt.ask("chan", "hello").text == "first"  # the session's actor is live

            async def ask_two() -> tuple[Reply, int]:
                loop = asyncio.get_running_loop()
                holder = loop.run_in_executor(None, lambda: rt.call_store(hold_store, timeout=WAIT))
                await loop.run_in_executor(None, store_held.wait, WAIT)
                # Both inputs reach the actor before it can store the first: one turn claims both.
                ana = asyncio.create_task(rt.ask_async("chan", "ana asks", sender="Ana"))
                ben = asyncio.create_task(rt.ask_async("chan", "ben asks", sender="Ben"))
                await asyncio.sleep(0)
                store_free.set()
                await holder
                await loop.run_in_executor(None, started.wait, WAIT)
                turn = rt.state("chan").active_turn
                assert turn is not None
                claimed = len(turn.input_ids)
                ana.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await ana
                release.set()  # its result is told after Ana's cancel
                return await ben, claimed

            answer, claimed = asyncio.run(ask_two())
            assert claimed == 2
            assert (answer.outcome, answer.text) == (TurnOutcome.PROCESSED, "both answered")
            started.clear()
            release.clear()

            async def both_give_up() -> None:
                loop = asyncio.get_running_loop()
                task = asyncio.create_task(rt.ask_async("chan", "again", sender="Ana"))
                await loop.run_in_executor(None, started.wait, WAIT)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task

            asyncio.run(both_give_up())
            state = rt.wait_idle("chan", timeout=WAIT)
            release.set()
        assert state.turn_list()[-1].status.value == "interrupted"


class TestStopWhileAwaited:
    def test_an_awaited_ask_says_its_input_is_kept(self) -> None:
        """``stop()`` while a task awaits ``ask_async``: ``RuntimeStopped`` says the input is
        kept and when it is answered (it said only that the runtime stopped)."""
        started = threading.Event()

        @tool(timeout=None)
        async def slow() -> str:
            """Waits."""
            started.set()
            await trio.sleep_forever()
            return "never"

        rt = runtime(call("slow"), tools=[slow]).start()

        async def main() -> None:
            task = asyncio.create_task(rt.ask_async("s1", "hi"))
            await asyncio.to_thread(started.wait, WAIT)
            await asyncio.to_thread(rt.stop)
            with pytest.raises(
                RuntimeStopped,
                match=r"^The runtime stopped before the turn answered; the input is kept "
                r"\(pending_agent\) and answered when the session next runs: on its next "
                r"input, or at the start of a runtime with resume='all'\.$",
            ):
                await task

        asyncio.run(main())


class TestOnTheCallersLoop:
    """The blocking calls made on a running asyncio or trio loop (a handler that forgot the
    async API) warn: they block the program's loop until they return, so its other tasks,
    and a sync tool that waits on that loop, stall meanwhile; nothing said so."""

    @pytest.mark.parametrize("library", ["asyncio", "trio"])
    @pytest.mark.parametrize(
        ("method", "until", "instead"),
        [
            ("ask", "the turn answers", "Await rt.ask_async(...) instead."),
            ("wait_idle", "the session is idle", "Run it in a thread: "),
            ("wait_passivated", "the session passivates", "Run it in a thread: "),
        ],
    )
    def test_a_blocking_call_on_the_loop_warns(
        self, method: str, until: str, instead: str, library: str
    ) -> None:
        if instead.startswith("Run it"):
            instead += (
                f"await asyncio.to_thread(rt.{method}, ...)."
                if library == "asyncio"
                else f"await trio.to_thread.run_sync(lambda: rt.{method}(...))."
            )
        message = (
            f"Runtime.{method}() was called on a running {library} loop: it blocks the loop "
            f"until {until}, so the loop's other tasks (and a sync tool that waits on the "
            f"loop) stall meanwhile. {instead}"
        )
        with runtime(reply("hi")) as rt:
            rt.send("s1", "hello")
            call = {
                "ask": lambda: rt.ask("s2", "hi", timeout=WAIT).ok,  # it still answers
                "wait_idle": lambda: rt.wait_idle("s1", timeout=WAIT) is not None,
                "wait_passivated": lambda: rt.wait_passivated("never-loaded", timeout=WAIT),
            }[method]

            async def main() -> None:
                with pytest.warns(RuntimeWarning, match=f"^{re.escape(message)}$") as caught:
                    assert call()
                assert caught[0].filename == __file__  # the caller's line

            if library == "asyncio":
                asyncio.run(main())
            else:
                trio.run(main)

    def test_a_blocking_call_in_a_worker_thread_does_not_warn(self) -> None:
        """``asyncio.to_thread(rt.wait_idle, ...)``, what the warning advises, is quiet
        (warnings are errors here)."""
        with runtime(reply("hi")) as rt:
            rt.send("s1", "hello")

            async def main() -> None:
                await asyncio.to_thread(rt.wait_idle, "s1", timeout=WAIT)

            asyncio.run(main())


class TestTrio:
    def test_ask_and_stream_from_trio(self) -> None:
        """The same calls from trio, with no glue: a nursery asks two sessions."""
        with runtime(reply("one"), reply("two, streamed", piece=3)) as rt:
            answers: dict[str, Any] = {}

            async def main() -> None:
                async def ask(session: str) -> None:
                    answers[session] = await rt.ask_async(session, "hi")

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(ask, "a")
                answers["stream"] = [e async for e in rt.stream("b", "hi")]

            trio.run(main)
        assert answers["a"].text == "one"
        streamed = answers["stream"]
        assert "".join(e.text for e in streamed if isinstance(e, TextPiece)) == "two, streamed"
        assert streamed[-1].text == "two, streamed"

    def test_a_timeout_is_real_time_under_a_mock_clock(self) -> None:
        """Under trio's autojump clock (pytest-trio's ``autojump_clock``) the ask's timeout
        ran out at once, on virtual time, while the runtime's threads took real time: it
        raised AskTimeout ("did not store the input within 30.0 s") before the answer came.
        The answer comes now."""
        with runtime(reply("one")) as rt:
            answers: list[Reply] = []

            async def main() -> None:
                answers.append(await rt.ask_async("s1", "hi", timeout=WAIT))

            trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        assert [a.text for a in answers] == ["one"]

    def test_leaving_a_stream_early_interrupts_the_turn(self) -> None:
        """Breaking out of ``async for`` stops the turn it streams."""
        with runtime(reply("a long answer, streamed slowly", piece=2, delay=0.05)) as rt:

            async def main() -> None:
                async for event in rt.stream("s1", "hi"):
                    if isinstance(event, TextPiece):
                        break

            trio.run(main)
            state = rt.wait_idle("s1", timeout=WAIT)
        assert state.turn_list()[0].status.value == "interrupted"

    @pytest.mark.parametrize("close", ["async with", "aclose"])
    def test_a_held_stream_closed_early_interrupts_the_turn(self, close: str) -> None:
        """A stream kept in a variable is stopped by its ``async with`` block or by
        ``aclose()``, at once: ``break`` alone ends the turn only when the stream is
        dropped (never while the variable holds it)."""
        held: list[Any] = []
        with runtime(reply("word " * 400, piece=2, delay=0.05)) as rt:

            async def main() -> None:
                stream = rt.stream("s1", "hi")
                held.append(stream)
                if close == "async with":
                    async with stream as events:
                        async for event in events:
                            if isinstance(event, TextPiece):
                                break
                else:
                    async for event in stream:
                        if isinstance(event, TextPiece):
                            break
                    await stream.aclose()

            trio.run(main)
            state = rt.wait_idle("s1", timeout=WAIT)
        assert held
        assert state.turn_list()[0].status.value == "interrupted"

    def test_a_sync_for_over_a_stream_says_what_to_use(self) -> None:
        """``list(rt.stream(...))`` in sync code: a TypeError naming ``async for`` and the
        sync alternatives (it said only "'ReplyStream' object is not iterable"); no ask
        is made."""
        with runtime() as rt:
            with pytest.raises(TypeError, match=r"async for event in rt\.stream.*rt\.ask\("):
                list(rt.stream("s1", "hi"))
            assert rt.sessions() == []

    def test_outside_a_loop_says_what_to_use(self) -> None:
        """Awaited with no asyncio or trio loop: a clear error."""
        with runtime() as rt:
            coroutine = rt.ask_async("s1", "hi")
            with pytest.raises(InvalidConfig, match=r"no event loop runs in this thread"):
                coroutine.send(None)
            coroutine.close()


class TestSubscriptions:
    def test_updates_and_deltas_go_to_their_own_callbacks(self) -> None:
        """``on_update`` gets ``Update``s only, ``on_delta`` ``Delta``s only."""
        updates: list[Any] = []
        deltas: list[Any] = []
        done = threading.Event()
        with runtime(reply("hello there", piece=3)) as rt:
            with rt.subscribe(updates.append, on_delta=deltas.append, session_id="s1"):
                rt.ask("s1", "hi")
            with rt.subscribe(on_update=lambda u: done.set()):
                rt.ask("s2", "again")
                assert done.wait(WAIT)
        assert updates
        assert all(isinstance(u, Update) for u in updates)
        assert deltas
        assert all(isinstance(d, Delta) for d in deltas)

    def test_a_subscription_needs_a_callback(self) -> None:
        """Neither callback: a clear error."""
        with runtime() as rt, pytest.raises(InvalidConfig, match=r"needs on_update"):
            rt.subscribe()

    @pytest.mark.parametrize("name", ["on_update", "on_delta"])
    def test_an_async_callback_is_refused(self, name: str) -> None:
        """An ``async def`` callback (what an asyncio program writes first) is refused with
        how to hand items to a loop: it was accepted, and each call made a coroutine nobody
        awaited, so the program saw nothing but a RuntimeWarning."""

        async def on_item(item: object) -> None:
            raise AssertionError("never awaited")

        pattern = (
            rf"^subscribe\(\) calls {name} in a thread of the runtime's, where the coroutine "
            r"of an async function would never run \(got the async function 'on_item'\)\. "
            r"Pass a plain function that hands the item to your loop: "
            r"loop\.call_soon_threadsafe\(queue\.put_nowait, item\) \(asyncio\) or "
            r"token\.run_sync_soon\(send\.send_nowait, item\) \(trio\)\.$"
        )
        with runtime() as rt, pytest.raises(InvalidConfig, match=pattern):
            rt.subscribe(**{name: on_item})
