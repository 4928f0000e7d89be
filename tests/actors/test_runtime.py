"""The runtime end to end: the turn loop, interrupts, failures, delivery, passivation, restarts."""

from __future__ import annotations

import logging
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pykka
import pytest
import trio
from harness import WAIT, Recorder, RuntimeFactory, Signal, make_runtime, shape, when

from actors import (
    Delta,
    DeltaKind,
    FakePlatform,
    IdleTimeout,
    InvalidConfig,
    LiveChannelAdapter,
    ModelRequest,
    PlatformError,
    Response,
    Runtime,
    ScriptedModel,
    SessionGone,
    Settings,
    SilentChannelAdapter,
    Update,
    call,
    calls,
    empty,
    error,
    hang,
    reply,
    tool,
)
from actors._session import SendFailed
from runtime import (
    INTERRUPTED_MARK,
    Attachment,
    Category,
    InputLimits,
    InvalidInput,
    MessageAdded,
    MessageType,
    ModelRateLimited,
    Presentation,
    Role,
    Status,
    StatusChanged,
    StoreError,
    ToolCall,
    ToolResultPart,
    TurnStarted,
    TurnStatus,
    UnknownSession,
    clean_history,
    new_message,
    to_openai,
)
from runtime.store import MemoryStore, SQLiteStore
from runtime.testing import check_invariants

__all__ = ["make_runtime"]

SEED_OUTPUT = (
    "=== STDOUT ===\n"
    "============================= test session starts =============================\n"
    "collected 5 items\n\n"
    "tests/test_history.py ..... [100%]\n"
    "============================== 5 passed in 0.42s ===============================\n"
    "=== STDERR ===\n"
)


@tool(name="run_shell_command")
def stub_shell(command: str) -> str:
    """Run a shell command (a stub that answers like seed 000's example)."""
    return SEED_OUTPUT


class RaisingModel:
    """A custom model whose every call raises ``failure``."""

    name = "raising"

    def __init__(self, failure: BaseException) -> None:
        self.failure = failure

    async def stream(self, request: Any) -> Any:
        raise self.failure
        yield  # an async generator, as a Model's stream is


def initial_statuses(runtime: Runtime, session_id: str) -> dict[str, Status]:
    """Each message's status in the event that added it."""
    out: dict[str, Status] = {}
    for event in runtime.timeline(session_id).events():
        if isinstance(event, MessageAdded):
            out[event.message.id] = event.message.status
    return out


class TestSeedTrace:
    def test_seed_000_example_6_1(self, make_runtime: RuntimeFactory) -> None:
        """Seed 000 §6.1: the same records, senders, parents and statuses, end to end."""
        model = ScriptedModel(
            [
                call(
                    "run_shell_command",
                    {"command": "uv run pytest tests/test_history.py"},
                    reasoning="我需要使用 uv pytest 来运行 history 模块的单元测试。",
                ),
                reply("我已经成功运行了 history 模块的单元测试，全部 5 个测试用例均已顺利通过。"),  # noqa: RUF001,
            ]
        )
        rt = make_runtime(
            model=model,
            tools=[stub_shell],
            adapters=[Recorder.start(platform="discord")],
            settings=Settings(agent_name="Kesoku", passivate_after=None),
        )
        user = rt.send(
            "sess_agent_history",
            "运行 agent 历史模块的单元测试",
            sender="Chii",
            chatbot_id="discord",
            channel_id="1234567890123",
        )
        state = rt.wait_idle("sess_agent_history", timeout=WAIT)
        messages = list(state)
        call_id = messages[2].id
        assert shape(messages) == [
            (Role.USER, MessageType.TEXT, "Chii", None, Status.PROCESSED),
            (Role.ASSISTANT, MessageType.THOUGHT, "Kesoku", user.id, Status.DELIVERED),
            (Role.TOOL, MessageType.TOOL_CALL, "Kesoku", user.id, Status.DELIVERED),
            (Role.TOOL, MessageType.TOOL_RESULT, "run_shell_command", call_id, Status.DELIVERED),
            (Role.ASSISTANT, MessageType.TEXT, "Kesoku", user.id, Status.DELIVERED),
        ]
        initial = initial_statuses(rt, "sess_agent_history")
        assert [initial[m.id] for m in messages] == [
            Status.PENDING_AGENT,
            Status.RESPONDED,
            Status.RESPONDED,
            Status.RESPONDED,
            Status.PENDING,
        ]
        assert all(m.chatbot_id == "discord" and m.channel_id == "1234567890123" for m in messages)
        call_message, result, final = messages[2], messages[3], messages[4]
        assert call_message.content == (
            "Calling tool `run_shell_command` with arguments:\n```json\n{\n"
            '  "command": "uv run pytest tests/test_history.py"\n}\n```'
        )
        assert call_message.metadata["tool_name"] == "run_shell_command"
        assert dict(call_message.metadata["tool_arguments"]) == {
            "command": "uv run pytest tests/test_history.py"
        }
        assert result.content == SEED_OUTPUT
        assert result.metadata["tool_name"] == "run_shell_command"
        metrics = final.metadata["turn_metrics"]
        assert set(metrics) == {
            "session_turns",
            "context_tokens",
            "turn_tool_calls",
            "turn_tokens",
            "turn_time",
        }
        assert metrics["session_turns"] == 1
        assert metrics["turn_tool_calls"] == 1
        assert metrics["turn_tokens"] > 0
        assert metrics["turn_time"] >= 0
        check_invariants(rt.timeline("sess_agent_history"))

    def test_second_call_sees_the_tool_result(self, make_runtime: RuntimeFactory) -> None:
        """The model's second call is shown the call and its result, in provider shape."""
        model = ScriptedModel([call("run_shell_command", {"command": "ls"}), reply("done")])
        rt = make_runtime(model=model, tools=[stub_shell])
        rt.send("s", "list files")
        rt.wait_idle("s", timeout=WAIT)
        second = model.requests[1]
        assert second.call_index == 1
        openai = to_openai(second.view)
        assert [m["role"] for m in openai] == ["user", "assistant", "tool"]
        assert openai[2]["content"] == SEED_OUTPUT
        assert [spec.name for spec in second.tools] == ["run_shell_command"]


class TestInput:
    def test_invalid_input_stores_nothing(self, make_runtime: RuntimeFactory) -> None:
        """Empty text with nothing attached is refused before anything is stored."""
        rt = make_runtime(model=ScriptedModel([]))
        with pytest.raises(InvalidInput):
            rt.send("s", "")
        assert rt.sessions() == []
        with pytest.raises(UnknownSession):
            rt.state("s")
        with pytest.raises(UnknownSession, match=r"^Session 's' has no stored input to wait for"):
            rt.wait_idle("s")

    def test_an_image_without_an_artifact_store_is_refused(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """An image sent to a runtime with no Settings.artifacts is refused at once and nothing
        is stored (the turn it started failed later: the model's view could not read it)."""
        rt = make_runtime(model=ScriptedModel([reply("a cat")]))
        image = Attachment(id="art_1", name="cat.png", kind="image", media_type="image/png")
        expected = (
            r"^send\(\) got the image 'cat\.png' \(image/png\), but the runtime has no artifact "
            r"store to read it from for the model; give Settings\(artifacts=<an ArtifactStore>\) "
            r"to the Runtime, or attach it as a file \(not image/gif, image/jpeg, image/png or "
            r"image/webp\)\.$"
        )
        with pytest.raises(InvalidInput, match=expected):
            rt.send("s", "what is this?", attachments=[image])
        with pytest.raises(InvalidInput, match=expected.replace("send", "ask", 1)):
            rt.ask("s", "what is this?", attachments=[image])
        assert rt.sessions() == []

    def test_an_image_with_an_artifact_store_is_taken(self, make_runtime: RuntimeFactory) -> None:
        """With an artifact store the same image reaches the model."""

        class Artifacts:
            def read(self, attachment: Attachment) -> bytes:
                return b"PNG"

        model = ScriptedModel([reply("a cat")])
        rt = make_runtime(model=model, settings=Settings(artifacts=Artifacts()))
        image = Attachment(id="art_1", name="cat.png", kind="image", media_type="image/png")
        rt.send("s", "what is this?", attachments=[image])
        rt.wait_idle("s", timeout=WAIT)
        assert model.calls_made == 1

    def test_send_returns_the_stored_message(self, make_runtime: RuntimeFactory) -> None:
        """send() answers once the message is stored, pending_agent, with its event seq."""
        rt = make_runtime(model=ScriptedModel([reply("hi").after(0.05)]))
        message = rt.send("s", "hello", sender="Chii")
        assert message.status is Status.PENDING_AGENT
        assert message.event_seq == 1
        assert rt.wait_idle("s", timeout=WAIT).message(message.id).status is Status.PROCESSED

    @pytest.mark.parametrize(
        "category",
        [Category.CRON_PROMPT, Category.COMPACTION_REQUEST, Category.BACKGROUND_ALERT],
    )
    def test_posted_inputs_start_turns(
        self, make_runtime: RuntimeFactory, category: Category
    ) -> None:
        """Cron prompts, compaction requests and alerts start turns like user input."""
        model = ScriptedModel([reply("ok")])
        rt = make_runtime(model=model)
        posted = rt.post("s", category, "wake up")
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(posted.id).status is Status.PROCESSED
        assert model.calls_made == 1

    def test_notifications_never_reach_the_model(self, make_runtime: RuntimeFactory) -> None:
        """A posted notification is stored for the user and left out of the model's view."""
        model = ScriptedModel([reply("ok")])
        rt = make_runtime(model=model)
        note = rt.post("s", Category.NOTIFICATION, "backup finished")
        rt.send("s", "hi")
        rt.wait_idle("s", timeout=WAIT)
        assert note.status is Status.PENDING
        assert all("backup" not in m.text for m in model.requests[0].view.messages)

    def test_posting_turn_output_is_refused(self, make_runtime: RuntimeFactory) -> None:
        """post() names what it takes when given a category a turn makes."""
        rt = make_runtime(model=ScriptedModel([]))
        with pytest.raises(ValueError, match=r"^post\(\) takes cron prompts, .* a reply is made"):
            rt.post("s", Category.REPLY, "x")

    @pytest.mark.parametrize(
        "category",
        [
            Category.CRON_PROMPT,
            Category.COMPACTION_REQUEST,
            Category.BACKGROUND_ALERT,
            Category.NOTIFICATION,
        ],
    )
    @pytest.mark.parametrize("content", ["", " \n\t"])
    def test_posting_blank_text_is_refused(
        self, make_runtime: RuntimeFactory, category: Category, content: str
    ) -> None:
        """A blank cron prompt, alert or notification is refused and nothing is stored (a
        blank prompt reached the model, a blank notification a platform that refuses it)."""
        rt = make_runtime(model=ScriptedModel([]))
        with pytest.raises(
            InvalidInput,
            match=rf"^post\(\) takes non-blank text for a {category.label} \(got "
            rf"{re.escape(repr(content))}\); write what it says\.$",
        ):
            rt.post("s", category, content)
        assert rt.sessions() == []

    @pytest.mark.parametrize("category", [Category.CRON_PROMPT, Category.NOTIFICATION])
    def test_posts_are_held_to_the_input_limits(
        self, make_runtime: RuntimeFactory, category: Category
    ) -> None:
        """send() kept to Settings.input_limits and post() did not: a runaway prompt or alert
        of any size was stored and sent. Over the limit it is refused, nothing stored."""
        limits = InputLimits(max_text_chars=20, max_attachments=1, max_attachment_bytes=10)
        settings = Settings(passivate_after=None, input_limits=limits)
        rt = make_runtime(model=ScriptedModel([]), settings=settings)
        with pytest.raises(
            InvalidInput,
            match=rf"^post\(\) of a {category.label} got 21 characters of text, more than the "
            r"limit of 20 \(Settings\.input_limits\.max_text_chars\); shorten it or attach "
            r"it as a file\.$",
        ):
            rt.post("s", category, "x" * 21)
        big = Attachment(id="a1", name="big.bin", media_type="application/octet-stream", size=11)
        with pytest.raises(InvalidInput, match=r"attachment 'big\.bin' of 11 bytes, more than"):
            rt.post("s", category, "see file", attachments=[big])
        assert rt.sessions() == []

    def test_a_category_named_by_a_str_is_refused(self, make_runtime: RuntimeFactory) -> None:
        """post() names the Category to pass when given a str (it said a 'cron_prompt' is
        made by a turn)."""
        rt = make_runtime(model=ScriptedModel([]))
        with pytest.raises(
            InvalidInput,
            match=r"^post\(\) takes a Category \(like Category\.CRON_PROMPT\); got "
            r"'cron_prompt' that is a 'str'\.$",
        ):
            rt.post("s", "cron_prompt", "x")  # type: ignore[arg-type]


class _NeverSends(Recorder):
    """An adapter whose platform is down: every render fails, nothing is delivered."""

    def render(self, update: Update, presentation: Presentation) -> None:
        raise ConnectionError("the platform is down")


class TestIdleTimeoutSaysWhy:
    """IdleTimeout names what the session was still waiting for. The waits below cannot
    end (a model that never answers, an adapter that never delivers): only the message of
    the timeout is judged."""

    def test_a_turn_waiting_for_the_model(self, make_runtime: RuntimeFactory) -> None:
        rt = make_runtime(model=ScriptedModel([hang()]))
        rt.send("s", "hello")
        with pytest.raises(
            IdleTimeout,
            match=r"^Session 's' was not idle within 0\.2 s: turn turn_\w+ is active \(waiting "
            r"for the model\)\. Raise the timeout, or interrupt the turn \(interrupt\('s'\)\)\.$",
        ):
            rt.wait_idle("s", timeout=0.2)

    def test_output_no_adapter_reports_delivered(self, make_runtime: RuntimeFactory) -> None:
        rt = make_runtime(
            model=ScriptedModel([reply("hi")]), adapters=[_NeverSends.start(platform="test")]
        )
        rt.send("s", "go", chatbot_id="test")
        with pytest.raises(
            IdleTimeout,
            match=r"^Session 's' was not idle within 0\.2 s: 1 message waits for an adapter to "
            r"report it delivered \(msg_\w+\)\. Is an adapter failing to send \(see the "
            r"amber\.session log\)\? wait_idle\(settled=False\) does not wait for delivery\.$",
        ):
            rt.wait_idle("s", timeout=0.2)
        assert rt.wait_idle("s", timeout=WAIT, settled=False).active_turn is None


class TestTimedOutWaits:
    """A wait that times out leaves nothing behind in the session actor: a health check
    polling wait_idle(timeout=...) must not keep the session from passivating."""

    def test_a_timed_out_wait_idle_leaves_no_waiter(self, make_runtime: RuntimeFactory) -> None:
        rt = make_runtime(
            model=ScriptedModel([reply("hi")]),
            adapters=[_NeverSends.start(platform="test")],
            settings=Settings(passivate_after=None, delivery_retries=0),
        )
        rt.send("s", "go", chatbot_id="test")
        seq = rt.wait_idle("s", timeout=WAIT, settled=False).seq
        for _ in range(3):  # never settled: the adapter never reports the reply delivered
            with pytest.raises(IdleTimeout):
                rt.wait_idle("s", timeout=0.05)
        proxy = rt.router.live("s")
        assert proxy is not None
        # The session agrees to passivate: no waiter of the timed-out calls is left.
        assert proxy.close_if_idle(seq).get(timeout=WAIT) is True

    def test_a_wait_that_ends_as_it_times_out_returns_the_state(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """A waiter resolved between the timeout and its removal is answered, not dropped."""
        rt = make_runtime(model=ScriptedModel([reply("hi")]))
        rt.send("s", "go")
        seq = rt.wait_idle("s", timeout=WAIT).seq
        proxy = rt.router.live("s")
        future = proxy.when_idle(False).get(timeout=WAIT)  # resolved at once: it is idle
        assert proxy.forget_waiter(future).get(timeout=WAIT) is False
        assert future.get(timeout=0).seq == seq


class TestFailures:
    def test_model_error_ends_the_turn_with_a_crash_notice(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """A failing model ends the turn as error and leaves a pending crash notice: short and
        human for the user; the provider's error stays in the turn, the audit row and the log."""
        rt = make_runtime(model=ScriptedModel([error("provider is down")]))
        user = rt.send("s", "hi")
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(user.id).status is Status.ERROR
        notice = list(state)[-1]
        assert notice.metadata["is_crash_notice"] is True
        assert notice.status is Status.PENDING
        assert notice.content == "The model call failed (ModelFailure); please try again."
        (turn,) = state.turn_list()
        assert turn.status is TurnStatus.ERROR
        assert "ModelFailure: provider is down" in (turn.reason or "")
        (row,) = state.model_calls()
        assert "provider is down" in (row.error or "")

    def test_an_unclassified_error_is_told_by_its_kind_only(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """Any exception a model raises told the user "The model call failed; please try
        again."; the notice names its class now, but never its message (a key, a URL, a
        long body), which stays in the turn's reason for developers."""
        secret = "sk-" + "x" * 40
        failure = ConnectionResetError(f"reset by https://u:{secret}@host " + "body " * 1000)
        rt = make_runtime(model=RaisingModel(failure))
        rt.send("s", "hi")
        state = rt.wait_idle("s", timeout=WAIT)
        notice = list(state)[-1]
        assert notice.metadata["is_crash_notice"] is True
        assert notice.content == "The model call failed (ConnectionResetError); please try again."
        (turn,) = state.turn_list()
        assert secret in (turn.reason or "")

    def test_a_custom_models_rate_limit_is_told_as_one(self, make_runtime: RuntimeFactory) -> None:
        """A model's own subclass of a classified error gets that kind's notice."""

        class QuotaSpent(ModelRateLimited):
            """A custom model's rate-limit error."""

        rt = make_runtime(model=RaisingModel(QuotaSpent("429 from my gateway")))
        rt.send("s", "hi")
        state = rt.wait_idle("s", timeout=WAIT)
        assert list(state)[-1].content == (
            "The model provider is rate-limiting me right now; please try again in a minute."
        )

    def test_empty_response_is_nudged_and_retried(self, make_runtime: RuntimeFactory) -> None:
        """An empty answer adds a nudge and calls the model again."""
        model = ScriptedModel([empty(), reply("here you go")])
        rt = make_runtime(model=model)
        user = rt.send("s", "hi")
        state = rt.wait_idle("s", timeout=WAIT)
        kinds = [(m.role, m.metadata.get("is_nudge")) for m in state]
        assert kinds == [(Role.USER, None), (Role.SYSTEM, True), (Role.ASSISTANT, None)]
        assert state.message(user.id).status is Status.PROCESSED
        assert "[System Notification]" in str(to_openai(model.requests[1].view))

    def test_empty_responses_are_bounded(self, make_runtime: RuntimeFactory) -> None:
        """After max_nudges nudges, the next empty answer fails the turn."""
        model = ScriptedModel([empty(), empty(), empty()])
        rt = make_runtime(model=model, settings=Settings(max_nudges=2, passivate_after=None))
        user = rt.send("s", "hi")
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(user.id).status is Status.ERROR
        assert model.calls_made == 3

    def test_tool_exception_becomes_an_error_result(self, make_runtime: RuntimeFactory) -> None:
        """A tool that raises gives the model an error result; the turn goes on."""

        @tool
        def explode() -> str:
            """Always fails."""
            raise RuntimeError("kaboom")

        model = ScriptedModel([call("explode"), reply("it failed")])
        rt = make_runtime(model=model, tools=[explode])
        user = rt.send("s", "try it")
        state = rt.wait_idle("s", timeout=WAIT)
        result = next(m for m in state if m.type is MessageType.TOOL_RESULT)
        assert result.is_error
        assert result.error_type == "exception"
        assert "kaboom" in result.content
        assert state.message(user.id).status is Status.PROCESSED

    def test_tool_timeout_becomes_an_error_result(self, make_runtime: RuntimeFactory) -> None:
        """A tool over its timeout is cancelled and reported as a timeout."""

        @tool(timeout=0.2)
        async def slow() -> str:
            """Never finishes in time."""
            await trio.sleep(30)
            return "late"

        rt = make_runtime(model=ScriptedModel([call("slow"), reply("too slow")]), tools=[slow])
        user = rt.send("s", "go")
        state = rt.wait_idle("s", timeout=WAIT)
        result = next(m for m in state if m.type is MessageType.TOOL_RESULT)
        assert result.is_error
        assert result.error_type == "timeout"
        assert state.message(user.id).status is Status.PROCESSED

    def test_unknown_tool_and_bad_json_become_error_results(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """A call to a missing tool, or with broken JSON, is answered with an error the model reads."""
        model = ScriptedModel(
            [calls([("nope", {}), ("run_shell_command", '{"command": ')]), reply("sorry")]
        )
        rt = make_runtime(model=model, tools=[stub_shell])
        rt.send("s", "go")
        state = rt.wait_idle("s", timeout=WAIT)
        results = [m for m in state if m.type is MessageType.TOOL_RESULT]
        assert [r.error_type for r in results] == ["unknown_tool", "invalid_arguments"]
        assert "run_shell_command" in results[0].content
        assert "not valid JSON" in results[1].content
        check_invariants(rt.timeline("s"))

    def test_exhausted_script_fails_the_turn(self, make_runtime: RuntimeFactory) -> None:
        """A model that raises mid-script is a model failure, not a crashed session."""
        rt = make_runtime(model=ScriptedModel([]))
        user = rt.send("s", "hi")
        assert rt.wait_idle("s", timeout=WAIT).message(user.id).status is Status.ERROR
        # The session still works afterwards.
        assert rt.state("s").active_turn is None


class TestInterrupts:
    def test_interrupt_mid_tool(self, make_runtime: RuntimeFactory) -> None:
        """New input while a tool runs: the tool is cancelled, its call interrupted, a new turn answers."""
        started = Signal()
        cancelled = Signal()

        @tool
        async def wait_forever() -> str:
            """Blocks until cancelled."""
            started.set()
            try:
                await trio.sleep_forever()
            finally:
                cancelled.set()
            return "never"

        model = ScriptedModel([call("wait_forever", reasoning="wait"), reply("second answer")])
        rt = make_runtime(model=model, tools=[wait_forever])
        first = rt.send("s", "first")
        started.wait()
        second = rt.send("s", "second")
        state = rt.wait_idle("s", timeout=WAIT)
        cancelled.wait()
        assert state.message(first.id).status is Status.INTERRUPTED
        assert state.message(second.id).status is Status.PROCESSED
        tool_call = next(m for m in state if m.type is MessageType.TOOL_CALL)
        assert tool_call.status is Status.INTERRUPTED
        assert not any(m.type is MessageType.TOOL_RESULT for m in state)
        turns = state.turn_list()
        assert [t.status for t in turns] == [TurnStatus.INTERRUPTED, TurnStatus.PROCESSED]
        # A cancelled async tool may have done part of its work (mid-await of something
        # outside): the call is named as one that may have run, as a sync one is.
        assert tool_call.tool_call is not None
        assert turns[0].reason == (
            f"interrupted by {second.id}; tool call {tool_call.tool_call.id} (wait_forever) "
            "had started; it may have run, so check before running it again"
        )
        assert tool_call.metadata["may_have_run"] is True
        # The new turn's model saw both inputs and a synthesized interrupted result.
        view = to_openai(model.requests[1].view)
        assert [m["role"] for m in view] == ["user", "assistant", "tool", "user"]
        check_invariants(rt.timeline("s"))

    def test_interrupt_mid_stream_keeps_partial_text(self, make_runtime: RuntimeFactory) -> None:
        """New input while the reply streams: the text so far is kept, marked interrupted."""
        model = ScriptedModel(
            [reply("a long answer that streams slowly", piece=4, delay=0.05), reply("ok")]
        )
        rt = make_runtime(model=model)
        streaming, callback = when(lambda d: isinstance(d, Delta) and d.kind is DeltaKind.TEXT)
        rt.subscribe(on_delta=callback)
        first = rt.send("s", "first")
        streaming.wait()
        rt.send("s", "second")
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(first.id).status is Status.INTERRUPTED
        partial = [m for m in state if m.metadata.get(INTERRUPTED_MARK) is True]
        assert len(partial) == 1
        assert partial[0].type is MessageType.TEXT
        assert "a long answer that streams slowly".startswith(partial[0].content)
        assert 0 < len(partial[0].content) < len("a long answer that streams slowly")
        check_invariants(rt.timeline("s"))

    def test_explicit_interrupt(self, make_runtime: RuntimeFactory) -> None:
        """Runtime.interrupt() ends the running turn without new input."""
        model = ScriptedModel([reply("slow", delay=0.05).after(30)])
        rt = make_runtime(model=model)
        started, callback = when(lambda u: isinstance(u, Update) and u.seq == 2)
        rt.subscribe(callback)
        user = rt.send("s", "hi")
        started.wait()
        assert rt.interrupt("s") is True
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(user.id).status is Status.INTERRUPTED
        assert rt.interrupt("s") is False


class TestSessions:
    def test_two_sessions_run_concurrently(self, make_runtime: RuntimeFactory) -> None:
        """Two sessions with slow tools overlap instead of queueing behind each other."""
        barrier = threading.Barrier(2, timeout=WAIT)

        @tool
        def meet() -> str:
            """Returns once the other session's call has started too."""
            barrier.wait()
            return "met"

        model = ScriptedModel(lambda r: call("meet") if r.call_index == 0 else reply("done"))
        rt = make_runtime(model=model, tools=[meet])
        a = rt.send("a", "go")
        b = rt.send("b", "go")
        assert rt.wait_idle("a", timeout=WAIT).message(a.id).status is Status.PROCESSED
        assert rt.wait_idle("b", timeout=WAIT).message(b.id).status is Status.PROCESSED

    def test_passivation_and_rehydration(self, make_runtime: RuntimeFactory) -> None:
        """An idle session's actor stops; the next message reloads it from the store."""
        model = ScriptedModel(lambda r: reply(f"answer {r.state.seq}"))
        rt = make_runtime(model=model, settings=Settings(passivate_after=0.05))
        rt.send("s", "one")
        rt.wait_idle("s", timeout=WAIT)
        assert rt.wait_passivated("s", timeout=WAIT)
        assert rt.live_sessions() == []
        before = rt.state("s")
        second = rt.send("s", "two")
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(second.id).status is Status.PROCESSED
        assert list(state)[: len(before)] == list(before)
        check_invariants(rt.timeline("s"))

    def test_shutdown_mid_turn_then_restart_answers(self, tmp_path: Path) -> None:
        """Stopping with a turn in flight gives its input back; the next runtime answers it."""
        db = tmp_path / "amber.db"
        started = Signal()

        @tool
        async def hang() -> str:
            """Blocks until cancelled."""
            started.set()
            await trio.sleep_forever()
            return "never"

        first = Runtime(model=ScriptedModel([call("hang")]), tools=[hang], store=db).start()
        user = first.send("s", "please")
        started.wait()
        first.stop()
        with Runtime(model=ScriptedModel([reply("answered after restart")]), store=db) as second:
            state = second.wait_idle("s", timeout=WAIT)
            assert state.message(user.id).status is Status.PROCESSED
            assert list(state)[-1].content == "answered after restart"
            turns = state.turn_list()
            assert [t.status for t in turns][-2:] == [TurnStatus.RECOVERED, TurnStatus.PROCESSED]
            check_invariants(second.timeline("s"))

    def test_stop_mid_tool_interrupts_the_call_on_its_channel(self, tmp_path: Path) -> None:
        """stop() while a tool runs marks the cut call interrupted, as an interrupt does: the
        live channel edits its ⏳ line to ⏹; the recovered turn lists no open call and the
        next runtime answers the input (it stayed delivered and open, the line ⏳)."""
        db = tmp_path / "amber.db"
        started = Signal()

        @tool
        async def slow() -> str:
            """Blocks until cancelled."""
            started.set()
            await trio.sleep_forever()
            return "never"

        platform = FakePlatform("discord")
        adapter = LiveChannelAdapter.start(client=platform)
        first = Runtime(
            model=ScriptedModel([call("slow")]), tools=[slow], store=db, adapters=[adapter]
        ).start()
        user = first.send("s", "go", chatbot_id="discord", channel_id="g")
        started.wait()
        first.stop()  # the adapter handles every update told before it stops
        assert platform.transcript("g") == ["⏹ 🛠️ slow({}) (interrupted)"]
        with Runtime(model=ScriptedModel([reply("second")]), store=db) as second:
            state = second.wait_idle("s", timeout=WAIT)
            check_invariants(second.timeline("s"))
        (cut,) = [m for m in state.messages if m.type is MessageType.TOOL_CALL]
        assert cut.status is Status.INTERRUPTED
        assert cut.turn_id is not None
        recovered = state.turns[cut.turn_id]
        assert (recovered.status, dict(recovered.open_calls)) == (TurnStatus.RECOVERED, {})
        assert state.message(user.id).status is Status.PROCESSED

    def test_a_crash_mid_tool_shows_the_call_interrupted_after_restart(
        self, tmp_path: Path
    ) -> None:
        """A runner that died while a tool ran: the next runtime recovers the turn, marks the
        call interrupted, and a live channel that never drew it (the dead runner's did)
        posts its ⏹ line."""
        db = tmp_path / "amber.db"
        at = datetime.now(UTC)
        where = {"session_id": "s", "created_at": at, "chatbot_id": "discord", "channel_id": "g"}
        question = new_message(
            Category.USER_QUESTION, id="u1", content="go", sender="Chii", **where
        )
        cut = new_message(
            Category.TOOL_CALL, id="c1", turn_id="t1", parent_id="u1",
            tool_call=ToolCall(id="call_1", name="slow"), **where,
        )  # fmt: skip
        with SQLiteStore(db) as store:
            store.append([
                MessageAdded(session_id="s", seq=1, at=at, message=question),
                TurnStarted(session_id="s", seq=2, at=at, turn_id="t1", runner="dead"),
                MessageAdded(session_id="s", seq=3, at=at, message=cut),
                StatusChanged(
                    session_id="s", seq=4, at=at, message_id="c1", expected=Status.RESPONDED,
                    status=Status.DELIVERED,
                ),  # the dead runner's channel drew its ⏳ line
            ])  # fmt: skip
        platform = FakePlatform("discord")
        adapters = [LiveChannelAdapter.start(client=platform)]
        with Runtime(
            model=ScriptedModel([reply("second")]), store=db, resume="all", adapters=adapters
        ) as rt:
            state = rt.wait_idle("s", timeout=WAIT)
        assert state.message("c1").status is Status.INTERRUPTED
        assert state.message("u1").status is Status.PROCESSED
        lines = platform.transcript("g")
        assert lines[0] == "⏹ 🛠️ slow({}) (interrupted)"
        assert lines[-1].endswith("\nsecond")

    def test_a_crash_mid_tool_tells_the_next_model_the_call_may_have_run(
        self, tmp_path: Path
    ) -> None:
        """A runner that died while its tool call ran: the restart's recovery marks the call
        as one that may have run, and the first model call after it reads so (before, it
        read "ended before it returned a result", and models called the tool again)."""
        db = tmp_path / "amber.db"
        at = datetime.now(UTC)
        question = new_message(
            Category.USER_QUESTION, id="u1", content="pay", sender="Chii", session_id="s",
            created_at=at,
        )  # fmt: skip
        cut = new_message(
            Category.TOOL_CALL, id="c1", turn_id="t1", parent_id="u1", session_id="s",
            created_at=at, tool_call=ToolCall(id="call_1", name="pay"),
        )  # fmt: skip
        with SQLiteStore(db) as store:
            store.append([
                MessageAdded(session_id="s", seq=1, at=at, message=question),
                TurnStarted(session_id="s", seq=2, at=at, turn_id="t1", runner="dead"),
                MessageAdded(session_id="s", seq=3, at=at, message=cut),
            ])  # fmt: skip
        seen: list[str] = []

        def model(request: Any) -> Any:
            seen.extend(
                part.text
                for message in request.view.messages
                for part in message.parts
                if isinstance(part, ToolResultPart) and part.call_id == "call_1"
            )
            return reply("checked first")

        with Runtime(model=ScriptedModel(model), store=db, resume="all") as rt:
            state = rt.wait_idle("s", timeout=WAIT)
        assert state.message("c1").metadata["may_have_run"] is True
        assert seen == [
            "[Interrupted: the call to pay was still running when its turn was cut off, and its "
            "result was lost; it may have run, in part or in full. Check before calling it "
            "again.]"
        ]
        (recovered,) = [t for t in state.turn_list() if t.status is TurnStatus.RECOVERED]
        assert "tool call call_1 (pay) had started; it may have run" in str(recovered.reason)

    def test_stop_leaves_no_threads(self, tmp_path: Path) -> None:
        """After stop(), no actor, effects or store thread is left running."""
        before = {t.ident for t in threading.enumerate()}
        with Runtime(model=ScriptedModel([reply("hi")]), store=tmp_path / "x.db") as rt:
            rt.send("s", "hi")
            rt.wait_idle("s", timeout=WAIT)
        left = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
        assert left == []

    def test_a_runtime_that_cannot_be_made_stops_its_adapters(self) -> None:
        """Adapters are handed over with the call: a refused Runtime(...) stops them (their
        threads once kept `amber demo` alive after an error)."""
        adapter = Recorder.start(platform="test", log=[])
        with pytest.raises(InvalidConfig):
            Runtime(model=object(), store=":memory:", adapters=[adapter])  # type: ignore[arg-type]
        assert not adapter.is_alive()

    def test_stopping_a_runtime_never_started_stops_its_adapters(self) -> None:
        """stop() without start() still stops the adapters it was given."""
        adapter = Recorder.start(platform="test", log=[])
        Runtime(model=ScriptedModel([]), store=":memory:", adapters=[adapter]).stop()
        assert not adapter.is_alive()


class TestScriptedModelArguments:
    def test_a_script_item_that_is_no_response_is_refused(self) -> None:
        """Each script item is checked when the model is made."""
        with pytest.raises(
            InvalidConfig,
            match=r"^ScriptedModel script item 1 must be a Response \(built with reply\(\), "
            r"call\(\), error\(\) …\); got 'hi'\.$",
        ):
            ScriptedModel([reply("a"), "hi"])  # type: ignore[list-item]

    def test_a_fallback_that_is_no_response_is_refused(self) -> None:
        """A function as fallback was taken, then every turn failed with an AttributeError."""
        with pytest.raises(
            InvalidConfig,
            match=r"^ScriptedModel fallback must be a Response \(built with reply\(\), "
            r"call\(\), error\(\) …\) or None; got <function .*>\. To answer each request "
            r"with a function, pass it as the script: ScriptedModel\(lambda request: "
            r"reply\(\.\.\.\)\)\.$",
        ):
            ScriptedModel([], fallback=lambda request: reply("hi"))  # type: ignore[arg-type]
        with pytest.raises(InvalidConfig, match=r"^ScriptedModel fallback must be a Response"):
            ScriptedModel([], fallback="hi")  # type: ignore[arg-type]

    def test_an_async_script_function_is_refused(self) -> None:
        """``async def respond(request)`` was taken, then every turn failed ("must return a
        Response; got <coroutine …>") with a never-awaited-coroutine warning."""

        async def respond(request: ModelRequest) -> Response:
            return reply("hi")

        with pytest.raises(
            InvalidConfig,
            match=r"^ScriptedModel takes a plain function of the request that returns a "
            r"Response \(got the async function 'respond'\)\. Drop the async: a pause is a "
            r"step of the Response \(reply\(\.\.\., delay=\), response\.after\(seconds\)\); "
            r"a model that awaits is a Model with async def stream\(request\)\.$",
        ):
            ScriptedModel(respond)  # type: ignore[arg-type]


class TestStoreArgument:
    def test_a_mistyped_postgres_url_is_refused(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """store='postgresql:/host/db' made an empty SQLite store named so and ran on it."""
        monkeypatch.chdir(tmp_path)
        with pytest.raises(InvalidConfig, match=r"did you mean 'postgresql://host/db'\?$"):
            Runtime(model=ScriptedModel([]), store="postgresql:/host/db").start()
        assert list(tmp_path.rglob("*")) == []

    def test_a_schema_postgres_would_cut_is_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """$AMBER_PG_SCHEMA over 63 bytes (PostgreSQL cuts it: two names shared one schema)
        is refused before connecting, naming the variable."""
        monkeypatch.setenv("AMBER_PG_SCHEMA", "tenant_" + "ü" * 29)
        with pytest.raises(
            InvalidConfig,
            match=r"^\$AMBER_PG_SCHEMA: schema must be a PostgreSQL identifier of 1 to 63 bytes "
            r"in UTF-8 \(got 'tenant_ü+', 36 characters, 65 bytes\);.* Set AMBER_PG_SCHEMA to "
            r"another name\.$",
        ):
            Runtime(model=ScriptedModel([]), store="postgresql://nobody@127.0.0.1:1/none").start()


class TestMisusedArguments:
    """Arguments of the wrong kind are refused when the Runtime is made, saying what it takes."""

    def test_a_store_of_the_wrong_type(self) -> None:
        """store=5 was taken, and refused only by start()."""
        with pytest.raises(
            InvalidConfig,
            match=r"^store must be a Store, a path to a SQLite file, a postgresql:// URL, or "
            r"':memory:' \(got 5 that is an 'int'\)\.$",
        ):
            Runtime(model=ScriptedModel([]), store=5)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("settings", "got", "fix"),
        [
            ({"passivate_after": 1}, r"\{'passivate_after': 1\} that is a 'dict'",
             r"settings=Settings\(passivate_after=1\)"),
            (30, r"30 that is an 'int'", r"settings=Settings\(passivate_after=600, \.\.\.\)"),
        ],
    )  # fmt: skip
    def test_settings_of_the_wrong_type(self, settings: Any, got: str, fix: str) -> None:
        """settings={...} was refused without saying how to make one."""
        with pytest.raises(
            InvalidConfig,
            match=rf"^settings must be a Settings \(got {got}\); make one by name: {fix}\.$",
        ):
            Runtime(model=ScriptedModel([]), store=":memory:", settings=settings)

    def test_an_interrupt_reason_that_is_no_str(self, make_runtime: RuntimeFactory) -> None:
        """reason=5 raised the core's "InvalidEvent: TurnEnded.reason must be a str" from the
        session's actor, or (once a tool call had started) was stored as "5; tool call …"."""
        rt = make_runtime(model=ScriptedModel([]))
        with pytest.raises(
            InvalidInput,
            match=r"^interrupt\(\) takes reason= as a str \(got 5 that is an 'int'\); it is "
            r"recorded as why the turn ended\.$",
        ):
            rt.interrupt("s1", reason=5)  # type: ignore[arg-type]

    def test_a_mistyped_postgres_url_when_made(self) -> None:
        with pytest.raises(InvalidConfig, match=r"did you mean 'postgresql://host/db'\?$"):
            Runtime(model=ScriptedModel([]), store="postgresql:/host/db")

    @pytest.mark.parametrize(
        ("tools", "got"),
        [(print, r"<built-in function print> that is a 'builtin_function_or_method'"),
         ("run_shell_command", r"'run_shell_command' that is a 'str'"),
         (5, r"5 that is an 'int'")],
    )  # fmt: skip
    def test_tools_not_in_a_list(self, tools: Any, got: str) -> None:
        """tools=print raised a bare TypeError ('... object is not iterable')."""
        with pytest.raises(
            InvalidConfig,
            match=rf"^tools takes a list of tools \(functions, or Tools made with tool\(\.\.\.\)\); "
            rf"got {got}\. Write tools=\[.+\]\.$",
        ):
            Runtime(model=ScriptedModel([]), store=":memory:", tools=tools)

    def test_an_unknown_session_names_the_runtime_method(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """The error hinted the store's list_sessions(), which a Runtime does not have."""
        rt = make_runtime(model=ScriptedModel([]))
        for read in (rt.state, rt.timeline, rt.model_calls):
            with pytest.raises(UnknownSession) as caught:
                read("nope")
            assert "Runtime.sessions()" in str(caught.value)
            assert "list_sessions" not in str(caught.value)


class TestAdapterArgument:
    """An adapter that is not a started Adapter actor is refused when the Runtime is made."""

    def test_an_adapter_class(self) -> None:
        with pytest.raises(
            InvalidConfig,
            match=r"^adapters\[0\] is the class Recorder, not a started adapter; pass the ref "
            r"that starting it returns: adapters=\[Recorder\.start\(\.\.\.\)\]\.$",
        ):
            Runtime(model=ScriptedModel([]), store=":memory:", adapters=[Recorder])  # type: ignore[list-item]

    def test_an_adapter_never_started(self) -> None:
        with pytest.raises(
            InvalidConfig,
            match=r"^adapters\[0\] is a Recorder that was never started \(got <.*>\); pass "
            r"Recorder\.start\(\.\.\.\), the ref of a started actor, not Recorder\(\.\.\.\)\.$",
        ):
            Runtime(model=ScriptedModel([]), store=":memory:", adapters=[Recorder()])  # type: ignore[list-item]

    def test_a_stopped_adapter(self) -> None:
        adapter = Recorder.start()
        adapter.stop()
        with pytest.raises(InvalidConfig, match=r"^adapters\[0\] \(Recorder\) has stopped; "):
            Runtime(model=ScriptedModel([]), store=":memory:", adapters=[adapter])

    def test_an_actor_that_is_not_an_adapter(self) -> None:
        other = pykka.ThreadingActor.start()
        with pytest.raises(InvalidConfig, match=r"^adapters\[0\] runs a ThreadingActor, "):
            Runtime(model=ScriptedModel([]), store=":memory:", adapters=[other])
        assert not other.is_alive()

    def test_not_an_actor_at_all(self) -> None:
        """Something else is named with its type; the good adapters handed over are stopped."""
        good = Recorder.start()
        with pytest.raises(
            InvalidConfig,
            match=r"^adapters takes started Adapter actors \(the refs SomeAdapter\.start\(\.\.\.\) "
            r"returns\); adapters\[1\] is 'cli' that is a 'str'\.$",
        ):
            Runtime(model=ScriptedModel([]), store=":memory:", adapters=[good, "cli"])  # type: ignore[list-item]
        assert not good.is_alive()

    def test_one_adapter_not_in_a_list(self) -> None:
        adapter = Recorder.start()
        with pytest.raises(InvalidConfig, match=r"^adapters takes a list of adapter refs"):
            Runtime(model=ScriptedModel([]), store=":memory:", adapters=adapter)  # type: ignore[arg-type]
        assert not adapter.is_alive()


class TestDelivery:
    def test_adapter_delivers_each_message_once(self, make_runtime: RuntimeFactory) -> None:
        """Every pending/responded output of the adapter's platform is delivered exactly once."""
        log: list[Any] = []
        model = ScriptedModel(
            [call("run_shell_command", {"command": "ls"}, reasoning="hm"), reply("ok")]
        )
        rt = make_runtime(
            model=model, tools=[stub_shell], adapters=[Recorder.start(platform="test", log=log)]
        )
        rt.send("s", "go", chatbot_id="test")
        state = rt.wait_idle("s", timeout=WAIT)
        outputs = [m for m in state if m.role is not Role.USER]
        assert all(m.status is Status.DELIVERED for m in outputs)
        delivered = [
            e for e in rt.timeline("s").events() if getattr(e, "status", None) is Status.DELIVERED
        ]
        assert sorted(e.message_id for e in delivered) == sorted(m.id for m in outputs)

    def test_other_platforms_are_not_delivered(self, make_runtime: RuntimeFactory) -> None:
        """Output for a platform without an adapter stays pending; idle does not wait for it."""
        rt = make_runtime(
            model=ScriptedModel([reply("hi")]), adapters=[Recorder.start(platform="x")]
        )
        rt.send("s", "go", chatbot_id="y")
        state = rt.wait_idle("s", timeout=WAIT)
        assert list(state)[-1].status is Status.PENDING


class TestDeliveryRetries:
    """A send the platform refuses is tried again while the session runs, with backoff; the
    waits are event-driven (wait_idle settles once the reply is reported delivered)."""

    @staticmethod
    def wechat_runtime(
        make_runtime: RuntimeFactory, platform: FakePlatform, **settings: Any
    ) -> Runtime:
        return make_runtime(
            model=ScriptedModel([reply("answer one")]),
            adapters=[SilentChannelAdapter.start(client=platform)],
            settings=Settings(passivate_after=None, **settings),
        )

    def test_a_failed_send_is_retried_while_the_session_runs(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """The trial's WeChat case: two refused sends, then the reply arrives once, without
        another message from the user or a reload."""
        wechat = FakePlatform("wechat")
        rt = self.wechat_runtime(make_runtime, wechat, delivery_backoff=0.01)
        wechat.fail_next(2)
        rt.send("w", "q1", chatbot_id="wechat", channel_id="c")
        state = rt.wait_idle("w", timeout=WAIT)
        assert wechat.transcript("c") == ["answer one"]
        answer = list(state)[-1]
        assert answer.status is Status.DELIVERED
        delivered = [
            e for e in rt.timeline("w").events() if getattr(e, "status", None) is Status.DELIVERED
        ]
        assert [e.message_id for e in delivered] == [answer.id]

    def test_a_failed_try_that_is_retried_logs_one_warning_line(
        self, make_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Each failed try that will be retried logs one WARNING line (what failed, the try,
        when it retries, the error's type and message) and no traceback; a platform blip
        that a retry gets past logs no ERROR (a trial saw a full traceback per try)."""
        wechat = FakePlatform("wechat")
        rt = self.wechat_runtime(make_runtime, wechat, delivery_backoff=0.01)
        wechat.fail_next(2)
        with caplog.at_level(logging.DEBUG, logger="amber"):
            rt.send("w", "q1", chatbot_id="wechat", channel_id="c")
            state = rt.wait_idle("w", timeout=WAIT)  # settled: the third try delivered it
        answer = list(state)[-1]
        assert answer.status is Status.DELIVERED
        amber = [r for r in caplog.records if r.name.startswith("amber")]
        assert [r for r in amber if r.levelno >= logging.ERROR] == []
        assert [r for r in amber if r.exc_info] == []
        warnings = [r.getMessage() for r in amber if r.levelno == logging.WARNING]
        refused = "PlatformError: wechat refused to send to channel 'c' (injected failure)."
        assert warnings == [
            f"session w: SilentChannelAdapter could not send message {answer.id}, try 1 of 6 "
            f"({refused}); trying again in 0.01 s",
            f"session w: SilentChannelAdapter could not send message {answer.id}, try 2 of 6 "
            f"({refused}); trying again in 0.02 s",
        ]

    def test_a_send_that_keeps_failing_is_given_up(
        self, make_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
    ) -> None:
        """After delivery_retries retries the reply stays pending (until the session is next
        loaded), nothing more is tried, and the session may passivate. The tries that were
        retried log a WARNING line each; the give-up logs at ERROR, with the traceback."""
        tries = 0
        third = Signal()

        def down(*_: object) -> bool:
            nonlocal tries
            tries += 1
            if tries == 3:
                third.set()
            return True

        wechat = FakePlatform("wechat", fail_when=down)
        rt = self.wechat_runtime(make_runtime, wechat, delivery_backoff=0.01, delivery_retries=2)
        with caplog.at_level(logging.INFO, logger="amber.session"):
            rt.send("w", "q1", chatbot_id="wechat", channel_id="c")
            seq = rt.wait_idle("w", timeout=WAIT, settled=False).seq
            third.wait()
            rt.gateway.drain(WAIT)  # the adapter has reported the third failure
            proxy = rt.router.live("w")
            assert proxy.retrying().get(timeout=WAIT) == []
        assert tries == 3
        answer = list(rt.state("w"))[-1]
        assert answer.status is Status.PENDING
        amber = [r for r in caplog.records if r.name.startswith("amber")]
        warned = [r for r in amber if r.levelno >= logging.WARNING and not tools(r)]
        assert [(r.levelno, bool(r.exc_info)) for r in warned] == [
            (logging.WARNING, False),
            (logging.WARNING, False),
            (logging.ERROR, True),
        ]
        given_up = amber[-1]
        assert given_up.getMessage() == (
            f"session w: SilentChannelAdapter could not send message {answer.id}, try 3 of 3 "
            "(PlatformError: wechat refused to send on channel 'c' (injected failure).); "
            "it is not tried again until the session is next loaded (its next input, or a "
            "restart)"
        )
        assert given_up.exc_info is not None
        assert given_up.exc_info[0] is PlatformError
        assert proxy.close_if_idle(seq).get(timeout=WAIT) is True

    def test_a_session_with_a_retry_waiting_does_not_passivate(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """Passivating would cancel the retry: the session stays live until it is done."""
        wechat = FakePlatform("wechat")
        rt = self.wechat_runtime(make_runtime, wechat, delivery_backoff=3600)
        wechat.fail_next(1)
        rt.send("w", "q1", chatbot_id="wechat", channel_id="c")
        seq = rt.wait_idle("w", timeout=WAIT, settled=False).seq
        rt.gateway.drain(WAIT)
        proxy = rt.router.live("w")
        assert proxy.retrying().get(timeout=WAIT) == [list(rt.state("w"))[-1].id]
        assert proxy.close_if_idle(seq).get(timeout=WAIT) is False
        assert wechat.transcript("c") == []

    def test_a_failure_reported_after_shutdown_sets_no_retry(
        self, make_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A send failure the stop drain reports to a session that has shut down arms no
        retry timer on the closed actor (nothing would ever cancel it); it is logged at
        ERROR, as a give-up is."""
        wechat = FakePlatform("wechat")
        rt = self.wechat_runtime(make_runtime, wechat, delivery_backoff=3600)
        wechat.fail_next(1)
        rt.send("w", "q1", chatbot_id="wechat", channel_id="c")
        rt.wait_idle("w", timeout=WAIT, settled=False)
        rt.gateway.drain(WAIT)
        proxy = rt.router.live("w")
        (answer_id,) = proxy.retrying().get(timeout=WAIT)
        proxy.shutdown().get(timeout=WAIT)  # what a runtime stop does before its drain
        assert proxy.retrying().get(timeout=WAIT) == []
        refused = PlatformError("refused")
        failed = SendFailed(message_id=answer_id, adapter=proxy.actor_ref, error=refused)
        caplog.clear()  # the first failure's warning
        with caplog.at_level(logging.DEBUG, logger="amber"):
            proxy.actor_ref.tell(failed)  # the actor handles its messages in order: told first
            assert proxy.retrying().get(timeout=WAIT) == []
        (record,) = [r for r in caplog.records if r.levelno >= logging.WARNING and not tools(r)]
        assert record.levelno == logging.ERROR
        assert "PlatformError: refused); the session has stopped" in record.getMessage()

    def test_a_failure_for_a_session_not_live_is_logged_once(
        self, make_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A failure reported for a session with no live actor (passivated, or stopped
        before the adapters were drained) is not retried: the router logs it at ERROR,
        with its traceback, and says when it is sent again."""
        rt = self.wechat_runtime(make_runtime, FakePlatform("wechat"))
        (adapter,) = rt.gateway.adapters
        try:
            raise PlatformError("wechat is down")
        except PlatformError as exc:
            refused = exc
        with caplog.at_level(logging.DEBUG, logger="amber"):
            rt.router.failed("gone", "msg_1", adapter, refused)
        (record,) = [r for r in caplog.records if r.levelno >= logging.WARNING and not tools(r)]
        assert (record.name, record.levelno) == ("amber.router", logging.ERROR)
        assert record.getMessage() == (
            "session gone: SilentChannelAdapter could not send message msg_1 (PlatformError: "
            "wechat is down); the session is not live, so it is sent again when the session "
            "is next loaded (its next input, or a restart)"
        )
        assert record.exc_info is not None
        assert record.exc_info[1] is refused

    def test_a_failure_told_to_a_session_whose_load_fails_is_logged(
        self, make_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A send failure told to a session while its load is failing is not dropped with
        the load's inbox: it is logged at ERROR, with its traceback, as one told to a closed
        session is."""
        store = LoadGate()
        rt = self.gated_runtime(make_runtime, store)
        (adapter,) = rt.gateway.adapters
        store.hold(fail=True)
        rt.router.load("w")  # the actor waits in its load
        ref = rt.router.live("w").actor_ref
        with caplog.at_level(logging.DEBUG, logger="amber"):
            rt.router.failed("w", "msg_1", adapter, self.refused())  # waits in the inbox
            stopped = ref.stop(block=False)  # answered once the inbox before it is handled
            store.gate.set()
            assert stopped.get(timeout=WAIT) is False  # the load failed: the actor is dead
        self.assert_logged_once(caplog)

    def test_a_failure_told_behind_a_stop_is_logged(
        self, make_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A send failure told to a session whose stop is already queued (passivation, a
        give-up: pykka drops what comes after a stop) is logged at ERROR, with its
        traceback, when the actor stops."""
        store = LoadGate()
        rt = self.gated_runtime(make_runtime, store)
        (adapter,) = rt.gateway.adapters
        store.hold(fail=False)
        rt.router.load("w")  # the actor waits in its load: what is told now queues
        ref = rt.router.live("w").actor_ref
        with caplog.at_level(logging.DEBUG, logger="amber"):
            stopped = ref.stop(block=False)
            rt.router.failed("w", "msg_1", adapter, self.refused())  # told behind the stop
            store.gate.set()
            assert stopped.get(timeout=WAIT) is True  # after on_stop
        rt.router.forget("w", ref)
        self.assert_logged_once(caplog)

    def test_an_ask_told_behind_a_stop_is_answered_by_the_next_actor(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """A person's message told to a session whose stop is already queued (routed to
        the actor just before it passivated) went with pykka's inbox: never stored, its
        caller waiting until its timeout. The stopping actor hands it to the session's
        next actor, as a closed actor does."""
        store = LoadGate()
        rt = self.gated_runtime(make_runtime, store)
        store.hold(fail=False)
        rt.router.load("w")  # the actor waits in its load: what is told now queues
        ref = rt.router.live("w").actor_ref
        stopped = ref.stop(block=False)
        waiter = rt._start_ask("w", "hello", {"sender": "Chii"}, None, what="ask")  # behind it
        store.gate.set()
        assert stopped.get(timeout=WAIT) is True  # after on_stop
        rt.router.forget("w", ref)
        assert waiter.wait(WAIT), "the ask told behind the stop was dropped"
        assert waiter.result().text == "answer one"
        assert [m.content for m in rt.wait_idle("w", timeout=WAIT) if m.sender == "Chii"] == [
            "hello"
        ]

    @staticmethod
    def gated_runtime(make_runtime: RuntimeFactory, store: MemoryStore) -> Runtime:
        return make_runtime(
            model=ScriptedModel([reply("answer one")]),
            store=store,
            adapters=[SilentChannelAdapter.start(client=FakePlatform("wechat"))],
            settings=Settings(passivate_after=None),
        )

    @staticmethod
    def refused() -> PlatformError:
        try:
            raise PlatformError("wechat is down")
        except PlatformError as exc:
            return exc

    @staticmethod
    def assert_logged_once(caplog: pytest.LogCaptureFixture) -> None:
        (record,) = [r for r in caplog.records if "msg_1" in r.getMessage()]
        assert (record.name, record.levelno) == ("amber.session", logging.ERROR)
        assert record.getMessage() == (
            "session w: SilentChannelAdapter could not send message msg_1 (PlatformError: "
            "wechat is down); the session has stopped, so it is sent again when the session "
            "is next loaded (its next input, or a restart)"
        )
        assert record.exc_info is not None
        assert record.exc_info[0] is PlatformError

    def test_no_retries_when_turned_off(
        self, make_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
    ) -> None:
        """delivery_retries=0: the first failed try is the give-up, one ERROR with the
        traceback."""
        wechat = FakePlatform("wechat")
        rt = self.wechat_runtime(make_runtime, wechat, delivery_retries=0)
        wechat.fail_next(1)
        with caplog.at_level(logging.DEBUG, logger="amber"):
            rt.send("w", "q1", chatbot_id="wechat", channel_id="c")
            rt.wait_idle("w", timeout=WAIT, settled=False)
            rt.gateway.drain(WAIT)
            assert rt.router.live("w").retrying().get(timeout=WAIT) == []
        amber = [r for r in caplog.records if r.name.startswith("amber")]
        (given_up,) = [r for r in amber if r.levelno >= logging.WARNING and not tools(r)]
        assert given_up.levelno == logging.ERROR
        assert "try 1 of 1 (PlatformError: " in given_up.getMessage()
        assert given_up.exc_info is not None
        assert given_up.exc_info[0] is PlatformError


class LoadGate(MemoryStore):
    """A memory store whose next session load waits for ``gate`` (then fails, if told to):
    what is told to the session's actor meanwhile queues in its inbox."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self._held: bool | None = None  # None: not held; else whether the load then fails

    def hold(self, *, fail: bool) -> None:
        self._held = fail

    def __contains__(self, session_id: object) -> bool:
        fail, self._held = self._held, None
        if fail is not None:
            assert self.gate.wait(WAIT), "the test never opened the gate"
            if fail:
                raise StoreError(f"Cannot read session {session_id!r} (injected).")
        return super().__contains__(session_id)


class TestSettledWaitOnAPassivatedSession:
    """``wait_idle(settled=True)`` promises to wait until adapters have reported what they
    deliver: a passivated session whose output is undelivered is loaded (which announces
    that output again), not answered at once from the store."""

    def test_undelivered_output_is_announced_again_and_waited_for(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """The trial's case: the send failed for good, the session passivated; a settled
        wait returned at once with the reply still pending. It now loads the session, the
        adapter sends the reply, and the wait returns once it is delivered."""
        wechat = FakePlatform("wechat")
        rt = make_runtime(
            model=ScriptedModel([reply("answer one")]),
            adapters=[SilentChannelAdapter.start(client=wechat)],
            settings=Settings(passivate_after=0.01, delivery_retries=0),
        )
        wechat.fail_next(1)
        rt.send("w", "q1", chatbot_id="wechat", channel_id="c")
        assert rt.wait_passivated("w", timeout=WAIT)  # given up at once, then passivated
        assert list(rt.state("w"))[-1].status is Status.PENDING
        unsettled = rt.wait_idle("w", timeout=WAIT, settled=False)  # from the store
        assert list(unsettled)[-1].status is Status.PENDING
        assert rt.live_sessions() == []
        state = rt.wait_idle("w", timeout=WAIT)
        assert list(state)[-1].status is Status.DELIVERED
        assert wechat.transcript("c") == ["answer one"]

    def test_output_no_adapter_delivers_is_not_waited_for(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """Undelivered output for a platform no adapter serves: the wait answers from the
        store, without loading the session (nothing would deliver it)."""
        rt = make_runtime(
            model=ScriptedModel([reply("answer one")]),
            adapters=[SilentChannelAdapter.start(client=FakePlatform("wechat"))],
            settings=Settings(passivate_after=0.01),
        )
        rt.send("s", "q1", chatbot_id="slack", channel_id="c")
        assert rt.wait_passivated("s", timeout=WAIT)
        state = rt.wait_idle("s", timeout=WAIT)
        assert list(state)[-1].status is Status.PENDING
        assert rt.live_sessions() == []


def test_model_view_is_clean_history(make_runtime: RuntimeFactory) -> None:
    """The model is called with clean_history of the state it was given."""
    model = ScriptedModel([reply("hi")])
    rt = make_runtime(model=model)
    rt.send("s", "hello")
    rt.wait_idle("s", timeout=WAIT)
    request = model.requests[0]
    assert request.view == clean_history(request.state)


class FlakyStore(MemoryStore):
    """A memory store whose next append fails once ``fail_next`` is set."""

    fail_next = False
    broken = False
    """Every append fails."""

    def append(self, events: Any) -> Any:
        events = list(events)
        if self.broken:
            raise StoreError("disk gone (injected)")
        if self.fail_next and any(
            isinstance(e, MessageAdded) and e.message.type is MessageType.TOOL_RESULT
            for e in events
        ):
            self.fail_next = False
            raise StoreError("disk full (injected)")
        return super().append(events)


class TestStoreFailures:
    def test_a_failed_write_fails_the_turn_not_the_session(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """A store error mid-turn ends the turn as error; the session keeps working."""
        store = FlakyStore()
        store.fail_next = True
        model = ScriptedModel([call("run_shell_command", {"command": "ls"}), reply("next")])
        rt = make_runtime(model=model, tools=[stub_shell], store=store)
        first = rt.send("s", "go")
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(first.id).status is Status.ERROR
        assert "disk full" in (state.turn_list()[0].reason or "")
        second = rt.send("s", "again")
        assert rt.wait_idle("s", timeout=WAIT).message(second.id).status is Status.PROCESSED
        check_invariants(rt.timeline("s"))

    def test_a_session_that_cannot_go_on_fails_its_idle_waiters(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """When even failing the turn cannot be stored, the actor stops: a wait_idle caller
        gets SessionGone at once instead of waiting out its timeout (or for ever)."""
        store = FlakyStore()
        started, release = Signal(), threading.Event()

        @tool
        def slow() -> str:
            """Waits for the test."""
            started.set()
            release.wait(WAIT)
            return "done"

        rt = make_runtime(model=ScriptedModel([call("slow", {})]), tools=[slow], store=store)
        rt.send("s", "go")
        started.wait()
        proxy = rt.router.live("s")
        future = proxy.when_idle(False).get(timeout=WAIT)
        store.broken = True  # the result cannot be stored, nor the turn's failure
        release.set()
        with pytest.raises(SessionGone, match=r"^Session 's' failed: "):
            future.get(timeout=WAIT)


class TestIdsAcrossProcesses:
    def test_a_fork_resumed_by_another_process_never_collides(self, tmp_path: Path) -> None:
        """A session forked by one process is answered by another: the new ids are derived
        from the fork's own id and seq, so none repeats one the source (or any run) made."""
        import subprocess
        import sys
        from datetime import UTC, datetime

        from runtime.store import SQLiteStore

        db = tmp_path / "amber.db"
        model = ScriptedModel([reply("first answer"), reply("second answer")])
        with Runtime(model=model, store=db, settings=Settings(passivate_after=None)) as rt:
            rt.send("demo", "one")
            rt.wait_idle("demo", timeout=WAIT)
            rt.send("demo", "two")
            rt.wait_idle("demo", timeout=WAIT)
        with SQLiteStore(db) as store:
            timeline = store.load_timeline("demo")
            second = next(
                e.seq
                for e in timeline.events()
                if isinstance(e, MessageAdded) and e.message.content == "two"
            )
            store.append(timeline.fork(second, "demo-retry", at=datetime.now(UTC)).events())
        code = (
            "from actors import Runtime, ScriptedModel, Settings, reply\n"
            f"with Runtime(model=ScriptedModel([reply('retried')]), store={str(db)!r},\n"
            "             settings=Settings(passivate_after=None)) as rt:\n"
            "    print(rt.wait_idle('demo-retry', timeout=30).seq)\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        with SQLiteStore(db) as store:
            source, fork = store.load_state("demo"), store.load_state("demo-retry")
            at_fork = store.verify("demo-retry").at(1)
        assert [m.content for m in fork][-1] == "retried"
        assert all(m.status is not Status.PENDING_AGENT for m in fork)
        made_by_fork = {m.id for m in fork} - {m.id for m in at_fork}
        assert made_by_fork
        assert not made_by_fork & {m.id for m in source}
        new_turns = {t.id for t in fork.turn_list()} - {t.id for t in at_fork.turn_list()}
        assert new_turns
        assert not new_turns & {t.id for t in source.turn_list()}


def tools(record: logging.LogRecord) -> bool:
    """A line of ``amber.tools``: an earlier test's abandoned sync call may end (and say
    so) during a later test."""
    return record.name == "amber.tools"
