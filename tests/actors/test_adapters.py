"""Adapters: the visibility table per channel kind, delivery reports, and the three reference adapters."""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import attrs
import pykka
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from actors._adapter import Adapter
from actors._channels import (
    LiveChannelAdapter,
    SilentChannelAdapter,
    format_turn_metrics,
    split_text,
)
from actors._cli_adapter import CliAdapter
from actors._errors import InvalidConfig
from actors._platform import FakePlatform, PlatformActionKind, PlatformError
from runtime import (
    INTERRUPTED_MARK,
    Category,
    ChannelKind,
    Delta,
    DeltaKind,
    Driver,
    Message,
    Presentation,
    Status,
    ToolCall,
    Update,
    Visibility,
    category_of,
    channel_rule,
    check_transition,
    new_message,
    visibility,
)

T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)
METRICS = {
    "session_turns": 3,
    "context_tokens": 8421,
    "turn_tool_calls": 1,
    "turn_tokens": 1042,
    "turn_time": 2.1,
}
METRICS_LINE = "3 turns · 8,421 ctx tokens · 1 tool call · 1,042 tokens · 2.1 s"

WAIT = 60.0
"""Seconds an actor answer may take before the test fails (a hang guard, not a judge)."""


def make(
    category: Category,
    id: str,
    *,
    platform: str = "discord",
    channel: str = "c1",
    session: str = "s1",
    content: str | None = None,
    **fields: Any,
) -> Message:
    """A message of ``category`` in its initial status, with the fields it needs."""
    if category is Category.USER_QUESTION:
        fields.setdefault("sender", "Chii")
    if category is Category.TOOL_CALL:
        fields.setdefault(
            "tool_call", ToolCall(id=f"call_{id}", name="sh", arguments={"command": "ls"})
        )
    if category is Category.TOOL_RESULT:
        fields.setdefault("sender", "sh")
        fields.setdefault("tool_call_id", f"call_{id}")
    if not category.is_input:
        fields.setdefault("turn_id", "t1")
    return new_message(
        category,
        id=id,
        session_id=session,
        created_at=T0,
        content=f"{category.label} {id}" if content is None else content,
        chatbot_id=platform,
        channel_id=channel,
        **fields,
    )


def new(message: Message, seq: int = 1) -> Update:
    """The update that announces ``message`` joining its session."""
    return Update(session_id=message.session_id, seq=seq, message=message)


def moved(message: Message, status: Status, seq: int = 2) -> Update:
    """The update that announces ``message`` changing to ``status``."""
    return Update(
        session_id=message.session_id,
        seq=seq,
        message=attrs.evolve(message, status=status),
        previous=message.status,
    )


class RecordingSink:
    """A DeliverySink that records reports (from the adapter's thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[tuple[str, str, Status]] = []

    def delivered(self, session_id: str, message_id: str, expected: Status) -> None:
        with self._lock:
            self._calls.append((session_id, message_id, expected))

    @property
    def calls(self) -> list[tuple[str, str, Status]]:
        with self._lock:
            return list(self._calls)

    @property
    def ids(self) -> list[str]:
        return [message_id for _, message_id, _ in self.calls]


class Harness:
    """A started adapter actor with a recording sink."""

    def __init__(self, cls: type[Adapter], **kwargs: Any) -> None:
        self.sink = RecordingSink()
        self.ref = cls.start(**kwargs)
        self.proxy = self.ref.proxy()
        self.proxy.attach(self.sink).get(timeout=WAIT)

    def feed(self, *updates: Update) -> None:
        """Tell the adapter ``updates`` in order and wait until it handled them all."""
        futures = [self.proxy.on_update(update) for update in updates]
        pykka.get_all(futures, timeout=WAIT)

    def delta(self, *deltas: Delta) -> None:
        pykka.get_all([self.proxy.on_delta(d) for d in deltas], timeout=WAIT)

    def stop(self) -> None:
        self.ref.stop(timeout=WAIT)


@pytest.fixture(autouse=True)
def _stop_actors() -> Iterator[None]:
    yield
    pykka.ActorRegistry.stop_all(timeout=WAIT)


@pytest.fixture
def discord() -> FakePlatform:
    return FakePlatform("discord")


@pytest.fixture
def wechat() -> FakePlatform:
    return FakePlatform("wechat")


@pytest.fixture
def live(discord: FakePlatform) -> Harness:
    return Harness(LiveChannelAdapter, client=discord)


@pytest.fixture
def silent(wechat: FakePlatform) -> Harness:
    return Harness(SilentChannelAdapter, client=wechat)


@pytest.fixture
def console() -> Console:
    return Console(
        file=io.StringIO(), record=True, width=100, force_terminal=False, color_system=None
    )


@pytest.fixture
def cli(console: Console) -> Harness:
    return Harness(CliAdapter, console=console)


ALL = list(Category)
DELIVERABLE = {
    Category.THOUGHT,
    Category.TOOL_CALL,
    Category.TOOL_RESULT,
    Category.REPLY,
    Category.NOTIFICATION,
    Category.CRASH_NOTICE,
}
"""What an adapter reports delivered on every kind of channel: the intermediates and outbound text."""


class TestFakePlatform:
    def test_send_and_transcript(self) -> None:
        """send() returns ids in order; transcript() lists a channel's texts, oldest first."""
        platform = FakePlatform()
        assert platform.send("c1", "one") == "m1"
        assert platform.send("c2", "two") == "m2"
        assert platform.send("c1", "three") == "m3"
        assert platform.transcript("c1") == ["one", "three"]
        assert platform.transcript("c2") == ["two"]
        assert [m.id for m in platform.sent] == ["m1", "m2", "m3"]

    def test_edit_keeps_history(self) -> None:
        """edit() changes what a message shows and records every edit."""
        platform = FakePlatform()
        mid = platform.send("c1", "⏳ work")
        platform.edit(mid, "✅ work")
        message = platform.messages[mid]
        assert (message.text, message.edits, message.current) == (
            "⏳ work",
            ("✅ work",),
            "✅ work",
        )
        assert platform.transcript("c1") == ["✅ work"]
        assert [(a.kind, a.text) for a in platform.actions] == [
            (PlatformActionKind.SEND, "⏳ work"),
            (PlatformActionKind.EDIT, "✅ work"),
        ]

    def test_edit_unknown_message(self) -> None:
        """Editing an id send() never returned is a PlatformError."""
        with pytest.raises(
            PlatformError,
            match=r"^fake has no message 'm9' to edit; pass an id that send\(\) returned\.$",
        ):
            FakePlatform().edit("m9", "x")

    def test_fail_next(self) -> None:
        """fail_next(n) makes the next n sends fail and record nothing."""
        platform = FakePlatform("wechat")
        platform.fail_next(2)
        for _ in range(2):
            with pytest.raises(PlatformError, match=r"^wechat refused to send to channel 'c1'"):
                platform.send("c1", "x")
        assert platform.send("c1", "y") == "m1"
        assert platform.transcript("c1") == ["y"]

    def test_fail_when(self) -> None:
        """A fail_when predicate picks the calls that fail, edits included."""
        platform = FakePlatform(fail_when=lambda kind, _, text: kind == "edit" and "❌" in text)
        mid = platform.send("c1", "⏳")
        with pytest.raises(PlatformError, match=r"^fake refused to edit on channel 'c1'"):
            platform.edit(mid, "❌")
        platform.edit(mid, "✅")
        assert platform.messages[mid].edits == ("✅",)

    def test_thread_safe(self) -> None:
        """Sends from many threads all land, each with its own id."""
        platform = FakePlatform()
        barrier = threading.Barrier(8)

        def post(n: int) -> None:
            barrier.wait(timeout=WAIT)
            for i in range(50):
                platform.send(f"c{n}", str(i))

        threads = [threading.Thread(target=post, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=WAIT)
        assert len({m.id for m in platform.sent}) == 400
        assert all(platform.transcript(f"c{n}") == [str(i) for i in range(50)] for n in range(8))


class TestVisibilityTable:
    """Every (channel kind, category) pair: what is sent, absorbed or hidden, and delivered."""

    @staticmethod
    def _start(kind: ChannelKind, platform: FakePlatform, console: Console) -> Harness:
        if kind is ChannelKind.CLI:
            return Harness(CliAdapter, console=console, platform="discord")
        if kind is ChannelKind.LIVE:
            return Harness(LiveChannelAdapter, client=platform)
        return Harness(SilentChannelAdapter, client=platform, platform="discord")

    @pytest.mark.parametrize("category", ALL, ids=lambda c: c.name.lower())
    @pytest.mark.parametrize("kind", list(ChannelKind), ids=str)
    def test_delivered_once_for_output_never_for_inputs(
        self, kind: ChannelKind, category: Category, discord: FakePlatform, console: Console
    ) -> None:
        """Output is reported delivered exactly once with its status; inputs, nudges, hidden categories never."""
        harness = self._start(kind, discord, console)
        message = make(category, "m")
        harness.feed(new(message))
        if category in DELIVERABLE:
            assert harness.sink.calls == [("s1", "m", message.status)]
        else:
            assert harness.sink.calls == []

    @pytest.mark.parametrize("category", ALL, ids=lambda c: c.name.lower())
    @pytest.mark.parametrize("kind", [ChannelKind.LIVE, ChannelKind.SILENT], ids=str)
    def test_what_a_chat_platform_receives(
        self, kind: ChannelKind, category: Category, discord: FakePlatform, console: Console
    ) -> None:
        """Live channels post intermediates and text; silent ones only text; neither echoes inputs."""
        harness = self._start(kind, discord, console)
        harness.feed(new(make(category, "m")))
        posts = {
            ChannelKind.LIVE: DELIVERABLE,
            ChannelKind.SILENT: {Category.REPLY, Category.NOTIFICATION, Category.CRASH_NOTICE},
        }[kind]
        assert len(discord.sent) == (1 if category in posts else 0)

    @pytest.mark.parametrize("category", ALL, ids=lambda c: c.name.lower())
    def test_cli_shows_everything(self, category: Category, cli: Harness, console: Console) -> None:
        """The CLI prints every category, inputs included."""
        cli.feed(new(make(category, "m", platform="cli")))
        assert console.export_text().strip()

    def test_hidden_and_absorbed_match_the_rules(self) -> None:
        """The table these tests pin is runtime.channel_rule's."""
        for kind in ChannelKind:
            for category in ALL:
                rule = channel_rule(kind, category)
                if kind is ChannelKind.SILENT and category in {
                    Category.THOUGHT,
                    Category.TOOL_CALL,
                    Category.TOOL_RESULT,
                }:
                    assert rule.visibility is Visibility.ABSORBED
                elif kind is not ChannelKind.CLI and category in {
                    Category.BACKGROUND_ALERT,
                    Category.NUDGE,
                    Category.SYSTEM_PROMPT,
                }:
                    assert rule.visibility is Visibility.HIDDEN
                else:
                    assert rule.visibility is Visibility.SHOWN

    @pytest.mark.parametrize("kind", list(ChannelKind), ids=str)
    def test_other_platforms_ignored(
        self, kind: ChannelKind, discord: FakePlatform, console: Console
    ) -> None:
        """Messages of another chatbot_id are neither shown nor delivered."""
        harness = self._start(kind, discord, console)
        harness.feed(*(new(make(c, f"m{i}", platform="slack")) for i, c in enumerate(ALL)))
        assert harness.sink.calls == []
        assert discord.sent == ()
        assert console.export_text() == ""

    @pytest.mark.parametrize("kind", list(ChannelKind), ids=str)
    def test_status_changes_never_deliver(
        self, kind: ChannelKind, discord: FakePlatform, console: Console
    ) -> None:
        """A status change (input processed, call interrupted) is never a delivery."""
        harness = self._start(kind, discord, console)
        question = attrs.evolve(make(Category.USER_QUESTION, "u"), status=Status.PROCESSING)
        call = attrs.evolve(make(Category.TOOL_CALL, "c"), status=Status.DELIVERED)
        harness.feed(moved(question, Status.PROCESSED), moved(call, Status.INTERRUPTED))
        assert harness.sink.calls == []

    @pytest.mark.parametrize("kind", list(ChannelKind), ids=str)
    def test_already_delivered_is_not_reported_again(
        self, kind: ChannelKind, discord: FakePlatform, console: Console
    ) -> None:
        """A message that joins already delivered (a replay) is not reported delivered."""
        harness = self._start(kind, discord, console)
        reply = attrs.evolve(make(Category.REPLY, "r"), status=Status.DELIVERED)
        harness.feed(new(reply))
        assert harness.sink.calls == []


class _Flaky(Adapter):
    """Raises in render and changed for messages whose content says so."""

    kind = ChannelKind.CLI

    def __init__(self) -> None:
        super().__init__(platform="discord")
        self.shown: list[str] = []

    def render(self, update: Update, presentation: Presentation) -> None:
        if update.message.content == "boom":
            raise RuntimeError("cannot draw")
        self.shown.append(update.message.id)

    def changed(self, update: Update, presentation: Presentation) -> None:
        raise RuntimeError("cannot redraw")


class TestRenderFailures:
    def test_failed_render_is_not_delivered_and_the_actor_goes_on(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """An exception in render is logged; the message stays undelivered; the next one is delivered."""
        harness = Harness(_Flaky)
        with caplog.at_level(logging.ERROR, logger="amber.adapters"):
            harness.feed(
                new(make(Category.REPLY, "bad", content="boom")), new(make(Category.REPLY, "ok"))
            )
        assert harness.sink.ids == ["ok"]
        assert harness.proxy.shown.get(timeout=WAIT) == ["ok"]
        assert harness.ref.is_alive()
        [record] = [r for r in caplog.records if r.name == "amber.adapters"]
        assert (
            record.getMessage()
            == "_Flaky could not render message 'bad' of session 's1'; it stays pending."
        )
        assert record.exc_info is not None

    def test_told_updates_survive_a_failed_render(self) -> None:
        """Updates told (as the gateway does) go on after a failing render; a later ask is the barrier."""
        harness = Harness(_Flaky)
        ok = make(Category.REPLY, "ok")
        harness.ref.tell(new(make(Category.REPLY, "bad", content="boom")))
        harness.ref.tell(new(ok))
        assert harness.proxy.wants(ok).get(timeout=WAIT)
        assert harness.sink.ids == ["ok"]
        assert harness.ref.is_alive()

    def test_failed_change_is_logged(self, caplog: pytest.LogCaptureFixture) -> None:
        """An exception in changed is logged and the adapter keeps working."""
        harness = Harness(_Flaky)
        call = make(Category.TOOL_CALL, "c")
        with caplog.at_level(logging.ERROR, logger="amber.adapters"):
            harness.feed(moved(call, Status.INTERRUPTED), new(make(Category.REPLY, "ok")))
        assert harness.sink.ids == ["ok"]
        assert any(
            "could not show the change of message 'c'" in r.getMessage() for r in caplog.records
        )


def _turn(platform: str = "discord") -> list[Message]:
    """Seed 000 §6.1: a question, a thought, a tool call, its result, the reply."""
    call = ToolCall(id="call_1", name="run_shell_command", arguments={"command": "uv run pytest"})
    return [
        make(Category.USER_QUESTION, "u1", platform=platform, content="run the tests"),
        make(
            Category.THOUGHT, "th1", platform=platform, content="I should run pytest.\nThen report."
        ),
        make(Category.TOOL_CALL, "call1", platform=platform, tool_call=call),
        make(
            Category.TOOL_RESULT,
            "res1",
            platform=platform,
            sender="run_shell_command",
            tool_call_id="call_1",
            content="===\n5 passed in 0.42s",
        ),
        make(
            Category.REPLY,
            "r1",
            platform=platform,
            content="All **5** tests passed.",
            metadata={"turn_metrics": METRICS},
        ),
    ]


class TestLiveChannelAdapter:
    def test_a_turn_with_a_tool_call(self, live: Harness, discord: FakePlatform) -> None:
        """💭 line, ⏳ line edited in place to ✅, then the reply under its metrics; all delivered in order."""
        turn = _turn()
        live.feed(*(new(m, seq) for seq, m in enumerate(turn, 1)))
        call_line = '🛠️ run_shell_command({"command":"uv run pytest"})'
        assert discord.transcript("c1") == [
            "💭 I should run pytest.",
            f"✅ {call_line}",
            f"⏱ {METRICS_LINE}\nAll **5** tests passed.",
        ]
        assert discord.sent[1].text == f"⏳ {call_line}"
        assert discord.sent[1].edits == (f"✅ {call_line}",)
        assert live.sink.ids == ["th1", "call1", "res1", "r1"]
        assert [status for *_, status in live.sink.calls] == [Status.RESPONDED] * 3 + [
            Status.PENDING
        ]

    def test_failed_result_edits_to_a_cross(self, live: Harness, discord: FakePlatform) -> None:
        """An error result edits its call's line to ❌ with the error type."""
        call = make(Category.TOOL_CALL, "c")
        result = make(
            Category.TOOL_RESULT, "r", tool_call_id="call_c", is_error=True, error_type="timeout"
        )
        live.feed(new(call), new(result))
        assert discord.transcript("c1") == ['❌ 🛠️ sh({"command":"ls"}) (timeout)']

    def test_interrupted_call_edits_to_stop(self, live: Harness, discord: FakePlatform) -> None:
        """A call its turn left unanswered is edited to ⏹ (and not delivered again)."""
        call = make(Category.TOOL_CALL, "c")
        live.feed(new(call), moved(attrs.evolve(call, status=Status.DELIVERED), Status.INTERRUPTED))
        assert discord.sent[0].edits == ('⏹ 🛠️ sh({"command":"ls"}) (interrupted)',)
        assert live.sink.ids == ["c"]

    def test_interrupted_call_it_never_drew_posts_a_stop_line(
        self, live: Harness, discord: FakePlatform
    ) -> None:
        """A call drawn by another runner (it stopped or died; its turn was recovered here)
        posts its ⏹ line, as a result of such a call posts its ✅ line."""
        call = attrs.evolve(make(Category.TOOL_CALL, "c"), status=Status.DELIVERED)
        live.feed(moved(call, Status.INTERRUPTED))
        assert discord.transcript("c1") == ['⏹ 🛠️ sh({"command":"ls"}) (interrupted)']
        assert live.sink.ids == []

    def test_parallel_calls_keep_their_own_lines(
        self, live: Harness, discord: FakePlatform
    ) -> None:
        """Two calls in flight: each result edits its own call's line, once."""
        a = make(Category.TOOL_CALL, "a", tool_call=ToolCall(id="ca", name="grep", index=0))
        b = make(Category.TOOL_CALL, "b", tool_call=ToolCall(id="cb", name="cat", index=1))
        live.feed(
            new(a),
            new(b),
            new(make(Category.TOOL_RESULT, "rb", tool_call_id="cb", sender="cat")),
            new(make(Category.TOOL_RESULT, "ra", tool_call_id="ca", sender="grep", is_error=True)),
        )
        assert [(m.text, m.edits) for m in discord.sent] == [
            ("⏳ 🛠️ grep({})", ("❌ 🛠️ grep({}) (error)",)),
            ("⏳ 🛠️ cat({})", ("✅ 🛠️ cat({})",)),
        ]

    def test_same_call_id_in_two_sessions(self, live: Harness, discord: FakePlatform) -> None:
        """Lines are keyed by (session, call id): sessions never edit each other's lines."""
        live.feed(
            new(make(Category.TOOL_CALL, "c", session="s1", channel="c1")),
            new(make(Category.TOOL_CALL, "c", session="s2", channel="c2")),
            new(make(Category.TOOL_RESULT, "r", session="s2", channel="c2", tool_call_id="call_c")),
        )
        assert discord.transcript("c1") == ['⏳ 🛠️ sh({"command":"ls"})']
        assert discord.transcript("c2") == ['✅ 🛠️ sh({"command":"ls"})']

    def test_result_of_an_unseen_call_posts_a_line(
        self, live: Harness, discord: FakePlatform
    ) -> None:
        """A result whose call this adapter never drew posts its outcome as a new line."""
        live.feed(new(make(Category.TOOL_RESULT, "r", tool_call_id="elsewhere", sender="sh")))
        assert discord.transcript("c1") == ["✅ 🛠️ sh"]
        assert live.sink.ids == ["r"]

    def test_messages_go_to_their_channel(self, live: Harness, discord: FakePlatform) -> None:
        """Everything is sent to the message's channel_id."""
        live.feed(
            new(make(Category.REPLY, "a", channel="general", content="hi")),
            new(make(Category.NOTIFICATION, "b", channel="ops", content="restarted")),
            new(make(Category.CRASH_NOTICE, "c", channel="ops", content="the model failed")),
        )
        assert discord.transcript("general") == ["hi"]
        assert discord.transcript("ops") == ["restarted", "the model failed"]

    def test_interrupted_output_is_marked(self, live: Harness, discord: FakePlatform) -> None:
        """Partial thoughts and replies an interrupt kept say so."""
        mark = {INTERRUPTED_MARK: True}
        live.feed(
            new(make(Category.THOUGHT, "t", content="thinking", metadata=mark)),
            new(make(Category.REPLY, "r", content="Half an ans", metadata=mark)),
        )
        assert discord.transcript("c1") == [
            "💭 thinking (interrupted)",
            "Half an ans\n(interrupted)",
        ]

    def test_long_reply_is_split(self, discord: FakePlatform) -> None:
        """A reply over max_chars is posted in chunks; the metrics header leads the first."""
        harness = Harness(LiveChannelAdapter, client=discord, max_chars=40)
        text = "\n\n".join(f"paragraph {i} " + "x" * 20 for i in range(3))
        harness.feed(
            new(
                make(Category.REPLY, "r", content=text, metadata={"turn_metrics": {"turn_time": 1}})
            )
        )
        assert discord.transcript("c1") == [
            "⏱ 1.0 s\nparagraph 0 xxxxxxxxxxxxxxxxxxxx",
            "paragraph 1 xxxxxxxxxxxxxxxxxxxx",
            "paragraph 2 xxxxxxxxxxxxxxxxxxxx",
        ]
        assert harness.sink.ids == ["r"]

    def test_failed_send_leaves_the_message_undelivered(
        self, live: Harness, discord: FakePlatform, caplog: pytest.LogCaptureFixture
    ) -> None:
        """When the platform refuses a send the message is not delivered, and the next one is."""
        discord.fail_next()
        with caplog.at_level(logging.ERROR, logger="amber.adapters"):
            live.feed(new(make(Category.REPLY, "r1")), new(make(Category.REPLY, "r2")))
        assert live.sink.ids == ["r2"]
        assert discord.transcript("c1") == ["reply r2"]
        assert any(r.exc_info and isinstance(r.exc_info[1], PlatformError) for r in caplog.records)

    def test_failed_edit_leaves_the_result_undelivered(self) -> None:
        """A result whose ✅ edit fails stays undelivered."""
        platform = FakePlatform(fail_when=lambda kind, *_: kind == PlatformActionKind.EDIT)
        harness = Harness(LiveChannelAdapter, client=platform)
        harness.feed(
            new(make(Category.TOOL_CALL, "c")),
            new(make(Category.TOOL_RESULT, "r", tool_call_id="call_c")),
        )
        assert harness.sink.ids == ["c"]
        assert platform.transcript("c1") == ['⏳ 🛠️ sh({"command":"ls"})']

    def test_max_chars_must_be_positive(self, discord: FakePlatform) -> None:
        """A non-positive message size is refused with the reason."""
        with pytest.raises(
            ValueError,
            match=r"^max_chars must be a positive int, the platform's message size limit \(got 0\)\.$",
        ):
            LiveChannelAdapter(discord, max_chars=0)


class _SendsOnly:
    def send(self, channel_id: str, text: str) -> str:
        return "m1"


class _EditsOnly:
    def edit(self, message_id: str, text: str) -> None:
        pass


class TestAsyncHooksRefused:
    """A custom adapter whose hook is an ``async def`` (what an asyncio program writes
    first) is refused when made: the adapter calls its hooks in its own thread, where the
    coroutine never ran, and ``render``'s message was reported delivered though nothing was
    shown."""

    @pytest.mark.parametrize("name", ["render", "changed", "on_delta"])
    def test_an_async_hook_is_refused(self, name: str) -> None:
        async def hook(self: object, update: object, presentation: object = None) -> None:
            pass

        AsyncAdapter = type("AsyncAdapter", (Adapter,), {name: hook})
        with pytest.raises(
            InvalidConfig,
            match=rf"^AsyncAdapter\.{name} is an async method, but an adapter calls it in its own "
            r"thread, where its coroutine would never run\. Make it a plain method; to use an "
            r"asyncio client there, run the coroutine on your loop and wait: "
            r"asyncio\.run_coroutine_threadsafe\(coro, loop\)\.result\(\)\.$",
        ):
            AsyncAdapter(platform="discord")


class TestChatClientChecked:
    """A chat adapter refuses, when started, a client without the methods it calls (it
    started, and every message it was to send failed in render and stayed pending)."""

    def test_live_needs_edit(self) -> None:
        with pytest.raises(
            InvalidConfig,
            match=r"^LiveChannelAdapter needs a client with send\(channel_id, text\) -> message "
            r"id and edit\(message_id, text\) methods \(a ChatPlatform\); got <.*_SendsOnly "
            r"object at .*> that is a '_SendsOnly', which has no edit method\.$",
        ):
            LiveChannelAdapter.start(client=_SendsOnly())

    def test_silent_needs_send(self) -> None:
        with pytest.raises(
            InvalidConfig,
            match=r"^SilentChannelAdapter needs a client with a send\(channel_id, text\) -> "
            r"message id method \(a ChatPlatform\); got <.*> that is an '_EditsOnly', which has "
            r"no send method\.$",
        ):
            SilentChannelAdapter.start(client=_EditsOnly())

    def test_a_method_that_is_not_callable(self) -> None:
        class Broken:
            send = "oops"

        with pytest.raises(InvalidConfig, match=r"which has no send method\.$"):
            SilentChannelAdapter(Broken())  # type: ignore[arg-type]

    @pytest.mark.parametrize("adapter", [LiveChannelAdapter, SilentChannelAdapter])
    @pytest.mark.parametrize("name", ["send", "edit"])
    def test_an_async_method_is_refused(self, adapter: Any, name: str) -> None:
        """An asyncio client's ``async def send`` (or ``edit``) was taken: called in the
        adapter's thread it only made a coroutine nobody awaited, and the message was
        reported delivered though nothing was posted."""

        class AsyncClient:
            def send(self, channel_id: str, text: str) -> str:
                return "m1"

            def edit(self, message_id: str, text: str) -> None:
                pass

        async def method(self: object, first: str, text: str) -> str:
            return "m1"

        setattr(AsyncClient, name, method)
        if name not in adapter.needs:
            adapter(AsyncClient())  # a method the adapter never calls may be anything
            return
        with pytest.raises(
            InvalidConfig,
            match=rf"^{adapter.__name__} calls the client's {name} in its own thread, where "
            rf"the coroutine of an async method would never run \(got AsyncClient\.{name}, an "
            r"async method\)\. Give it a plain method that runs the coroutine on your loop "
            r"and waits: asyncio\.run_coroutine_threadsafe\(coro, loop\)\.result\(\)\.$",
        ):
            adapter(AsyncClient())

    def test_a_client_with_both_is_taken(self) -> None:
        SilentChannelAdapter(_SendsOnly())  # type: ignore[arg-type]
        LiveChannelAdapter(FakePlatform("discord"))


class TestSilentChannelAdapter:
    def test_intermediates_are_absorbed(self, silent: Harness, wechat: FakePlatform) -> None:
        """A whole turn posts only the reply; thought, call and result are delivered unsent."""
        turn = _turn("wechat")
        silent.feed(*(new(m, seq) for seq, m in enumerate(turn, 1)))
        assert wechat.transcript("c1") == ["All **5** tests passed."]
        assert silent.sink.ids == ["th1", "call1", "res1", "r1"]
        assert all(a.kind is PlatformActionKind.SEND for a in wechat.actions)

    def test_alerts_and_nudges_are_hidden(self, silent: Harness, wechat: FakePlatform) -> None:
        """Background alerts and nudges are neither sent nor delivered."""
        silent.feed(
            new(make(Category.BACKGROUND_ALERT, "a", platform="wechat")),
            new(make(Category.NUDGE, "n", platform="wechat")),
        )
        assert (wechat.sent, silent.sink.calls) == ((), [])

    def test_text_is_sent(self, silent: Harness, wechat: FakePlatform) -> None:
        """Replies, notifications and crash notices are posted as they are."""
        silent.feed(
            new(make(Category.REPLY, "r", platform="wechat", content="done")),
            new(make(Category.NOTIFICATION, "n", platform="wechat", content="back online")),
            new(make(Category.CRASH_NOTICE, "c", platform="wechat", content="sorry, I failed")),
        )
        assert wechat.transcript("c1") == ["done", "back online", "sorry, I failed"]
        assert silent.sink.ids == ["r", "n", "c"]

    def test_long_reply_split_on_paragraphs(self, wechat: FakePlatform) -> None:
        """A long reply becomes chunks of at most max_chars, cut between paragraphs."""
        harness = Harness(SilentChannelAdapter, client=wechat, max_chars=50)
        paragraphs = [f"Paragraph {i}: " + "words " * 5 for i in range(6)]
        harness.feed(
            new(make(Category.REPLY, "r", platform="wechat", content="\n\n".join(paragraphs)))
        )
        chunks = wechat.transcript("c1")
        assert all(len(c) <= 50 for c in chunks)
        assert [p.strip() for c in chunks for p in c.split("\n\n")] == [
            p.strip() for p in paragraphs
        ]
        assert harness.sink.ids == ["r"]

    def test_interrupted_partial_reply_is_not_sent(
        self, silent: Harness, wechat: FakePlatform
    ) -> None:
        """A reply cut short by the next input is delivered unsent: a channel that cannot
        edit or recall would show a cut-off text; the next turn answers both inputs."""
        mark = {INTERRUPTED_MARK: True}
        silent.feed(
            new(
                make(Category.REPLY, "r1", platform="wechat", content="This is a lo", metadata=mark)
            ),
            new(make(Category.REPLY, "r2", platform="wechat", content="", metadata=mark)),
            new(make(Category.REPLY, "r3", platform="wechat", content="Short final answer.")),
        )
        assert wechat.transcript("c1") == ["Short final answer."]
        assert silent.sink.ids == ["r1", "r2", "r3"]

    def test_send_interrupted_posts_the_partial_reply_marked(self, wechat: FakePlatform) -> None:
        """send_interrupted=True posts a cut-short reply with an (interrupted) line."""
        harness = Harness(SilentChannelAdapter, client=wechat, send_interrupted=True)
        mark = {INTERRUPTED_MARK: True}
        harness.feed(
            new(make(Category.REPLY, "r1", platform="wechat", content="Half an ans", metadata=mark))
        )
        assert wechat.transcript("c1") == ["Half an ans\n(interrupted)"]
        assert harness.sink.ids == ["r1"]

    def test_send_interrupted_must_be_a_bool(self, wechat: FakePlatform) -> None:
        with pytest.raises(
            InvalidConfig, match=r"send_interrupted must be True or False \(got 'yes'\)"
        ):
            SilentChannelAdapter(wechat, send_interrupted="yes")  # type: ignore[arg-type]

    def test_failed_send_then_recovery(self, silent: Harness, wechat: FakePlatform) -> None:
        """A refused send leaves the reply pending; the adapter keeps serving."""
        wechat.fail_next()
        silent.feed(
            new(make(Category.REPLY, "r1", platform="wechat")),
            new(make(Category.THOUGHT, "t", platform="wechat")),
            new(make(Category.REPLY, "r2", platform="wechat")),
        )
        assert silent.sink.ids == ["t", "r2"]
        assert wechat.transcript("c1") == ["reply r2"]


class TestIdempotencyKeys:
    """Each platform message is posted with a key derived from the session and the Amber
    message id, the same each time it is posted again, so a platform client can drop
    at-least-once duplicates."""

    def test_each_post_carries_its_message_id(self, live: Harness, discord: FakePlatform) -> None:
        turn = [
            make(Category.THOUGHT, "t"),
            make(Category.TOOL_CALL, "c"),
            make(Category.TOOL_RESULT, "c"),
            make(Category.REPLY, "r"),
        ]
        live.feed(*(new(m, seq) for seq, m in enumerate(turn, 1)))
        assert [(a.kind, a.idempotency_key) for a in discord.actions] == [
            (PlatformActionKind.SEND, "s1/t"),
            (PlatformActionKind.SEND, "s1/c"),
            (PlatformActionKind.EDIT, None),
            (PlatformActionKind.SEND, "s1/r"),
        ]

    def test_chunks_of_a_split_text_are_numbered(self, wechat: FakePlatform) -> None:
        harness = Harness(SilentChannelAdapter, client=wechat, max_chars=12)
        harness.feed(
            new(make(Category.REPLY, "r", platform="wechat", content="one\n\ntwo two two"))
        )
        assert [(m.text, m.idempotency_key) for m in wechat.sent] == [
            ("one", "s1/r/1"),
            ("two two two", "s1/r/2"),
        ]

    def test_the_same_message_id_in_two_sessions_is_posted_in_both(self) -> None:
        """Message ids are unique within a session only (a fork's inherited messages keep
        their source's ids; two sessions' 4-byte tags may collide): the key names the
        session too, so a platform that dedupes does not drop the second session's reply."""
        wechat = FakePlatform("wechat", dedupe=True)
        harness = Harness(SilentChannelAdapter, client=wechat)
        harness.feed(
            new(make(Category.REPLY, "r", platform="wechat", session="a", content="to a")),
            new(make(Category.REPLY, "r", platform="wechat", session="b", content="to b")),
        )
        assert [(m.text, m.idempotency_key) for m in wechat.sent] == [
            ("to a", "a/r"),
            ("to b", "b/r"),
        ]

    def test_a_platform_that_dedupes_drops_the_second_send(self) -> None:
        """The same reply told twice (a restart after a crash before its delivery was
        recorded) is posted once; both are reported delivered."""
        wechat = FakePlatform("wechat", dedupe=True)
        harness = Harness(SilentChannelAdapter, client=wechat, max_chars=12)
        reply = new(make(Category.REPLY, "r", platform="wechat", content="one\n\ntwo two two"))
        harness.feed(reply, reply)
        assert wechat.transcript("c1") == ["one", "two two two"]
        assert harness.sink.ids == ["r", "r"]

    def test_a_retry_after_a_partial_send_posts_only_the_rest(self) -> None:
        fails = [False, True]  # the second chunk fails once

        def second_chunk_once(kind: PlatformActionKind, channel_id: str, text: str) -> bool:
            return text == "two two two" and fails.pop() if fails else False

        wechat = FakePlatform("wechat", dedupe=True, fail_when=second_chunk_once)
        harness = Harness(SilentChannelAdapter, client=wechat, max_chars=12)
        reply = new(make(Category.REPLY, "r", platform="wechat", content="one\n\ntwo two two"))
        harness.feed(reply, reply)
        assert wechat.transcript("c1") == ["one", "two two two"]
        assert harness.sink.ids == ["r"]

    def test_a_client_without_the_keyword_is_called_without_it(self) -> None:
        calls: list[tuple[object, ...]] = []

        class Plain:
            def send(self, channel_id: str, text: str) -> str:
                calls.append((channel_id, text))
                return "p1"

        harness = Harness(SilentChannelAdapter, client=Plain())
        harness.feed(new(make(Category.REPLY, "r", platform="wechat")))
        assert calls == [("c1", "reply r")]
        assert harness.sink.ids == ["r"]

    def test_a_client_taking_kwargs_gets_the_key(self) -> None:
        calls: list[dict[str, object]] = []

        class Loose:
            def send(self, channel_id: str, text: str, **options: object) -> str:
                calls.append(options)
                return "p1"

        harness = Harness(SilentChannelAdapter, client=Loose())
        harness.feed(new(make(Category.REPLY, "r", platform="wechat")))
        assert calls == [{"idempotency_key": "s1/r"}]


class TestSplitText:
    def test_fits(self) -> None:
        """Text within the limit is one chunk, without surrounding blank lines or trailing space."""
        assert split_text("\n\n  hello \n", 10) == ["  hello"]

    def test_blank(self) -> None:
        """Whitespace-only text gives no chunks."""
        assert split_text(" \n\n ", 10) == []

    def test_paragraphs_lines_and_hard_cuts(self) -> None:
        """Paragraphs first, then lines, then hard cuts."""
        assert split_text("aaaa\n\nbb\n\n\ncccccccccccc", 10) == ["aaaa\n\nbb", "cccccccccc", "cc"]
        assert split_text("x\ny\nzzzz\n\nw", 4) == ["x\ny", "zzzz", "w"]

    @given(st.text(alphabet="ab \n", max_size=300), st.integers(1, 40))
    def test_chunks_fit_and_keep_the_words(self, text: str, limit: int) -> None:
        """Every chunk fits, and no non-space character is lost or reordered."""
        chunks = split_text(text, limit)
        assert all(0 < len(c) <= limit for c in chunks)
        assert "".join("".join(c.split()) for c in chunks) == "".join(text.split())

    def test_limit_must_be_positive(self) -> None:
        """A limit below 1 is refused."""
        with pytest.raises(
            ValueError, match=r"^split_text\(\) needs a limit of at least 1 character \(got 0\)\.$"
        ):
            split_text("x", 0)


class TestFormatTurnMetrics:
    def test_seed_example(self) -> None:
        """Seed 000 §6.1's metrics read as one line."""
        assert format_turn_metrics(METRICS) == METRICS_LINE

    def test_partial_and_junk(self) -> None:
        """Missing, boolean or non-numeric entries are left out; singulars read right."""
        assert (
            format_turn_metrics({"session_turns": 1, "turn_tokens": True, "turn_time": "2"})
            == "1 turn"
        )
        assert format_turn_metrics({"turn_tool_calls": 2}) == "2 tool calls"
        assert format_turn_metrics(None) == ""
        assert format_turn_metrics({}) == ""


class TestCliAdapter:
    def test_a_turn(self, cli: Harness, console: Console) -> None:
        """Input echo, thought, tool call, result and reply, each drawn and the output delivered."""
        cli.feed(*(new(m, seq) for seq, m in enumerate(_turn("cli"), 1)))
        out = console.export_text()
        for piece in [
            "you: run the tests",
            "💭 thought",
            "I should run pytest.",
            "🛠️ run_shell_command",
            '"command": "uv run pytest"',
            "✅ run_shell_command",
            "5 passed in 0.42s",
            METRICS_LINE,
            "All 5 tests passed.",
        ]:
            assert piece in out
        assert out.index("💭 thought") < out.index("🛠️ run_shell_command") < out.index(METRICS_LINE)
        assert cli.sink.ids == ["th1", "call1", "res1", "r1"]

    def test_error_result_and_clipping(self, console: Console) -> None:
        """A failed result shows ❌ and its error type; a long result is clipped with a note."""
        harness = Harness(CliAdapter, console=console, max_result_chars=10)
        harness.feed(
            new(
                make(
                    Category.TOOL_RESULT,
                    "r",
                    platform="cli",
                    content="0123456789abcdef",
                    is_error=True,
                    error_type="TimeoutError",
                )
            )
        )
        out = console.export_text()
        assert "❌ sh (TimeoutError)" in out
        assert "0123456789" in out
        assert "abcdef" not in out
        assert "… 6 more characters not shown" in out

    def test_notices(self, cli: Harness, console: Console) -> None:
        """Notifications, crash notices, nudges, alerts and cron prompts each have their look."""
        cli.feed(
            new(make(Category.NOTIFICATION, "n", platform="cli", content="saved")),
            new(make(Category.CRASH_NOTICE, "c", platform="cli", content="model failed")),
            new(make(Category.NUDGE, "g", platform="cli", content="answer please")),
            new(make(Category.BACKGROUND_ALERT, "a", platform="cli", content="job done")),
            new(make(Category.CRON_PROMPT, "p", platform="cli", content="daily report")),
        )
        out = console.export_text()
        for piece in [
            "🔔 saved",
            "⚠️ crash notice",
            "model failed",
            "↻ nudge",
            "🔔 background alert",
            "job done",
            "⏰ cron: daily report",
        ]:
            assert piece in out
        assert cli.sink.ids == ["n", "c"]

    def test_content_is_not_markup(self, cli: Harness, console: Console) -> None:
        """Brackets in content print as they are (no rich markup)."""
        cli.feed(new(make(Category.THOUGHT, "t", platform="cli", content="[bold]x[/bold] [red]")))
        assert "[bold]x[/bold] [red]" in console.export_text()

    def test_control_characters_never_reach_the_terminal(
        self, cli: Harness, console: Console
    ) -> None:
        """Escape sequences in stored text (tool output, model text) are printed spelled out."""
        cli.feed(new(make(Category.THOUGHT, "t", platform="cli", content="a\x1b[2Jb\x07")))
        text = console.export_text()
        assert "\x1b" not in text and "\x07" not in text  # noqa: PT018
        assert "a\\x1b[2Jb\\x07" in text

    def test_interrupted(self, cli: Harness, console: Console) -> None:
        """Interrupted output is marked; an unanswered call prints ⏹."""
        mark = {INTERRUPTED_MARK: True}
        call = make(Category.TOOL_CALL, "c", platform="cli")
        cli.feed(
            new(make(Category.THOUGHT, "t", platform="cli", metadata=mark)),
            new(make(Category.REPLY, "r", platform="cli", content="half", metadata=mark)),
            moved(attrs.evolve(call, status=Status.DELIVERED), Status.INTERRUPTED),
        )
        out = console.export_text()
        assert "💭 thought (interrupted)" in out
        assert "half\n(interrupted)\n" in "\n".join(line.rstrip() for line in out.splitlines())
        assert "⏹ sh interrupted" in out

    def test_input_echo_can_be_off(self, console: Console) -> None:
        """echo_inputs=False prints no user question."""
        harness = Harness(CliAdapter, console=console, echo_inputs=False)
        harness.feed(new(make(Category.USER_QUESTION, "u", platform="cli", content="hi")))
        assert console.export_text() == ""

    def test_told_deltas_stream(self, console: Console) -> None:
        """Deltas told (as the gateway does) reach on_delta; other platforms' are ignored."""
        harness = Harness(CliAdapter, console=console, stream=True)
        for chatbot_id, text in [("cli", "Hel"), ("discord", "nope"), ("cli", "lo")]:
            harness.ref.tell(
                Delta(
                    session_id="s1",
                    turn_id="t1",
                    stream_id="x",
                    kind=DeltaKind.TEXT,
                    text=text,
                    chatbot_id=chatbot_id,
                )
            )
        harness.feed(new(make(Category.NOTIFICATION, "n", platform="cli", content="saved")))
        assert console.export_text().splitlines() == ["Hello", "🔔 saved"]

    def test_deltas_ignored_by_default(self, cli: Harness, console: Console) -> None:
        """Without stream=True deltas print nothing."""
        cli.delta(
            Delta(
                session_id="s1",
                turn_id="t1",
                stream_id="x",
                kind=DeltaKind.TEXT,
                text="hi",
                chatbot_id="cli",
            )
        )
        assert console.export_text() == ""

    def test_streaming(self, console: Console) -> None:
        """stream=True prints deltas live; the stored message then adds only its trailer."""
        harness = Harness(CliAdapter, console=console, stream=True)

        def delta(kind: DeltaKind, text: str, stream: str = "x") -> Delta:
            return Delta(
                session_id="s1",
                turn_id="t1",
                stream_id=stream,
                kind=kind,
                text=text,
                chatbot_id="cli",
            )

        harness.delta(delta(DeltaKind.REASONING, "let me "), delta(DeltaKind.REASONING, "think"))
        harness.feed(new(make(Category.THOUGHT, "t", platform="cli", content="let me think")))
        harness.delta(
            delta(DeltaKind.TOOL_CALL, '{"a"'),
            delta(DeltaKind.TEXT, "All ", "y"),
            delta(DeltaKind.TEXT, "good.", "y"),
            delta(DeltaKind.TEXT, "", "y"),
        )
        harness.feed(
            new(
                make(
                    Category.REPLY,
                    "r",
                    platform="cli",
                    content="All good.",
                    metadata={"turn_metrics": {"turn_time": 0.5}},
                )
            )
        )
        assert console.export_text() == "💭 let me think\nAll good.\n0.5 s\n"
        assert harness.sink.ids == ["t", "r"]

    def test_streamed_text_that_differs_is_drawn_in_full(self, console: Console) -> None:
        """When the stored text is not what streamed, the full panel is drawn."""
        harness = Harness(CliAdapter, console=console, stream=True)
        harness.delta(
            Delta(
                session_id="s1",
                turn_id="t1",
                stream_id="x",
                kind=DeltaKind.REASONING,
                text="draft",
                chatbot_id="cli",
            )
        )
        harness.feed(new(make(Category.THOUGHT, "t", platform="cli", content="final")))
        out = console.export_text()
        assert out.startswith("💭 draft\n")
        assert "💭 thought" in out
        assert "final" in out


# --- the delivery property ----------------------------------------------------------

_ADAPTERS: dict[ChannelKind, Callable[[FakePlatform], pykka.ActorRef[Any]]] = {
    ChannelKind.CLI: lambda platform: CliAdapter.start(
        console=Console(file=io.StringIO(), width=80), platform="p"
    ),
    ChannelKind.LIVE: lambda platform: LiveChannelAdapter.start(client=platform, platform="p"),
    ChannelKind.SILENT: lambda platform: SilentChannelAdapter.start(client=platform, platform="p"),
}


@st.composite
def _traffic(draw: st.DrawFn) -> list[Message]:
    """New messages of every category, some of another platform, some already delivered."""
    messages: list[Message] = []
    for n in range(draw(st.integers(0, 25))):
        category = draw(st.sampled_from(ALL))
        message = make(
            category,
            f"m{n}",
            platform=draw(st.sampled_from(["p", "p", "p", "other"])),
            session=draw(st.sampled_from(["s1", "s2"])),
            channel=draw(st.sampled_from(["c1", "c2"])),
        )
        if Status.DELIVERED in category.spec.finals and draw(st.integers(0, 3)) == 0:
            message = attrs.evolve(message, status=Status.DELIVERED)  # joins already delivered
        messages.append(message)
    return messages


class TestDeliveryProperty:
    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        kind=st.sampled_from(list(ChannelKind)), messages=_traffic(), platform_down=st.booleans()
    )
    def test_delivered_exactly_the_shown_or_absorbed_output(
        self, kind: ChannelKind, messages: list[Message], platform_down: bool
    ) -> None:
        """Deliveries are the platform's pending/responded messages whose rule is shown or absorbed
        (nudges never: they stay responded), each once, with their status, each a legal change;
        when the chat platform refuses everything, only what needs no sending is delivered."""
        platform = FakePlatform(fail_when=lambda *_: platform_down)
        sink = RecordingSink()
        ref = _ADAPTERS[kind](platform)
        try:
            proxy = ref.proxy()
            proxy.attach(sink).get(timeout=WAIT)
            updates = [proxy.on_update(new(m, seq)) for seq, m in enumerate(messages, 1)]
            pykka.get_all(updates, timeout=WAIT)
        finally:
            ref.stop(timeout=WAIT)

        def needs_platform(m: Message) -> bool:
            return kind is not ChannelKind.CLI and visibility(kind, m) is Visibility.SHOWN

        expected = {
            m.id
            for m in messages
            if m.chatbot_id == "p"
            and m.status in {Status.PENDING, Status.RESPONDED}
            and visibility(kind, m) in {Visibility.SHOWN, Visibility.ABSORBED}
            and Status.DELIVERED in category_of(m).spec.finals
            and not (platform_down and needs_platform(m))
        }
        assert len(sink.ids) == len(set(sink.ids))
        assert set(sink.ids) == expected
        by_id = {m.id: m for m in messages}
        for session_id, message_id, status in sink.calls:
            message = by_id[message_id]
            assert (session_id, status) == (message.session_id, message.status)
            check_transition(message, Status.DELIVERED, Driver.STATUS_CHANGED)
