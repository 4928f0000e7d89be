"""Dogfood: the kit's machine and contracts run against Amber's own tools and adapters."""

from __future__ import annotations

import io
from typing import Any

import pykka
import pytest
import trio
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test
from rich.console import Console

from actors import CliAdapter, FakePlatform, LiveChannelAdapter, SilentChannelAdapter, tool
from actors.testing import AdapterContract, LifecycleMachine, ToolContract


@tool
def word_count(text: str, unique: bool = False) -> int:
    """Count the words in a text.

    Args:
        text: The text.
        unique: Count each distinct word once.
    """
    words = text.split()
    return len(set(words)) if unique else len(words)


@tool(timeout=2)
async def lookup(key: str, delay: float = 0.0) -> str:
    """Look a key up, after a (cancellable) pause.

    Args:
        key: The key.
        delay: Seconds to wait first (capped at 20 ms).
    """
    await trio.sleep(min(max(delay, 0.0), 0.02))
    return f"{key} = 42"


class AmberBot(LifecycleMachine):
    """Amber's reference adapters on three platforms, two tools, three sessions."""

    tools = (word_count, lookup)
    sessions = ("s1", "s2", "s3")

    def make_adapters(self) -> list[pykka.ActorRef[Any]]:
        console = Console(file=io.StringIO(), width=100, color_system=None)
        return [
            CliAdapter.start(console=console),
            LiveChannelAdapter.start(client=FakePlatform("discord")),
            SilentChannelAdapter.start(client=FakePlatform("wechat")),
        ]


class SqliteAmberBot(AmberBot):
    """The same on a SQLite store."""

    store = "sqlite"


AmberBot.TestCase.settings = settings(
    max_examples=30, deadline=None, suppress_health_check=list(HealthCheck)
)
SqliteAmberBot.TestCase.settings = settings(
    max_examples=8, stateful_step_count=30, deadline=None, suppress_health_check=list(HealthCheck)
)

TestAmberBot = pytest.mark.slow(AmberBot.TestCase)
TestSqliteAmberBot = pytest.mark.slow(SqliteAmberBot.TestCase)


class PostgresAmberBot(AmberBot):
    """The same on a PostgreSQL store (a schema per example; leases, NOTIFY)."""

    store = "postgres"


@pytest.mark.slow
def test_postgres_amber_bot(postgres_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lifecycle machine and DESIGN §11's invariants on the PostgreSQL store."""
    monkeypatch.setenv("AMBER_TEST_POSTGRES", postgres_dsn)
    run_state_machine_as_test(
        PostgresAmberBot,
        settings=settings(
            max_examples=5, stateful_step_count=25, deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )  # fmt: skip


class TestWordCountContract(ToolContract):
    tool = word_count


class TestLookupContract(ToolContract):
    tool = lookup


class TestLiveChannelContract(AdapterContract):
    def make_adapter(self) -> pykka.ActorRef[Any]:
        return LiveChannelAdapter.start(client=FakePlatform("discord"))


class TestSilentChannelContract(AdapterContract):
    def make_adapter(self) -> pykka.ActorRef[Any]:
        return SilentChannelAdapter.start(client=FakePlatform("wechat"))


class TestCliContract(AdapterContract):
    def make_adapter(self) -> pykka.ActorRef[Any]:
        console = Console(file=io.StringIO(), width=100, color_system=None)
        return CliAdapter.start(console=console)
