"""Input or a decision routed here on a shared store just as the session passivates and
another worker takes it over: it is stored for the new owner, once, never refused.

A runtime on PostgreSQL runs a session it holds the lease of, or claims it first. Between
that and the call reaching the session's actor, the session may passivate here (its lease
given back) and another worker take its lease; the router's next lookup then finds the
session owned elsewhere (``OwnedElsewhere``). ``send`` and ``post`` store the input for
that owner, as they do when the session is owned elsewhere from the start; ``approve``
and ``deny`` store the decision.

Two windows, each opened from hooks at the exact point, never by sleeps:

- ``live``: the session is live at the check, and passivates (its lease given back, and
  taken by the other worker) once the router has handed out its actor: the call meets a
  stopped actor, and the router's retry finds the lease taken.
- ``claimed``: the session has just passivated (out of the router's table, its lease not
  yet given back): the runtime's claim finds the lease still held, then the passivation
  gives it back and the other worker takes it before the call is routed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from actors import OwnedElsewhere, Runtime, ScriptedModel, Settings, call, reply, tool
from actors._drafts import user_draft
from actors._ids import utc_now
from actors._sharing import route_input
from runtime import ApprovalDecided, Category, MessageAdded, Status
from runtime.store import PostgresStore

WAIT = 60.0
"""Seconds a call may take before the test fails (a hang guard, not a judge)."""

WINDOWS = ["live", "claimed"]

SETTINGS = Settings(lease_ttl=30.0, lease_poll=3600.0, passivate_after=None)


@pytest.fixture
def schema(pg_schema: Callable[[], str]) -> str:
    return pg_schema()


@pytest.fixture
def other(postgres_dsn: str, schema: str) -> Iterator[PostgresStore]:
    """Another worker's store on the same schema (it takes the session's lease)."""
    with PostgresStore(postgres_dsn, schema=schema) as store:
        yield store


@pytest.fixture
def runtime(postgres_dsn: str, schema: str) -> Iterator[Callable[..., Runtime]]:
    made: list[Runtime] = []

    def make(**kwargs: Any) -> Runtime:
        store = PostgresStore(postgres_dsn, schema=schema)
        rt = Runtime(store=store, settings=SETTINGS, **kwargs).start()
        made.append(rt)
        return rt

    yield make
    for rt in reversed(made):
        rt.stop()


def take_over(other: PostgresStore, session_id: str) -> None:
    """The other worker takes the session's lease (given back here just before)."""
    taken = other.acquire(session_id, owner="w2", now=utc_now(), ttl=timedelta(hours=1))
    assert taken is not None, "the lease was not given back: the other worker cannot take it"


def passivate(rt: Runtime, session_id: str) -> None:
    """Passivate the live session now, as its idle timer would."""
    entry = rt.router._entry(session_id)  # live: no claim, no new actor
    seq = entry.proxy.state_now().get(timeout=WAIT).seq
    rt.router._passivate(session_id, entry.ref, seq)
    assert rt.router.live(session_id) is None, "the session did not passivate"


def open_window(rt: Runtime, other: PostgresStore, window: str, monkeypatch: Any) -> list[str]:
    """Arrange that the next call for ``s`` meets its takeover by ``other`` in ``window``.
    Returns a list that gets one item once the window was opened."""
    router, keeper = rt.router, rt._keeper
    assert keeper is not None
    opened: list[str] = []
    if window == "live":
        lookup = router._entry

        def entry(sid: str, **kwargs: Any) -> Any:
            got = lookup(sid, **kwargs)
            if sid == "s" and not opened:
                opened.append(window)
                passivate(rt, "s")  # gives the lease back (the router's passivated hook)
                # Stopped, so the call is refused at once (pykka's liveness check), not
                # in the instant of its stop.
                assert got.ref.actor_stopped.wait(WAIT), "the old actor did not stop"
                take_over(other, "s")
            return got

        monkeypatch.setattr(router, "_entry", entry)
        return opened
    given_back = router.passivated
    assert given_back is not None
    deferred: list[str] = []
    monkeypatch.setattr(router, "passivated", deferred.append)
    passivate(rt, "s")  # out of the table; the lease is still held here
    monkeypatch.setattr(router, "passivated", given_back)
    ensure = keeper.ensure

    def claim(sid: str) -> bool:
        held = ensure(sid)
        if sid == "s" and deferred and not opened:
            assert held, "the lease was not held here at the claim"
            opened.append(window)
            given_back(deferred.pop())  # the passivation gives the lease back now
            take_over(other, "s")
        return held

    monkeypatch.setattr(keeper, "ensure", claim)
    return opened


def stored(other: PostgresStore, content: str) -> list[Any]:
    """The messages of ``s`` with ``content``, each time one was stored."""
    return [
        event.message
        for event in other.events("s")
        if isinstance(event, MessageAdded) and event.message.content == content
    ]


@pytest.mark.parametrize("window", WINDOWS)
class TestInputInTheWindow:
    def test_a_send_is_stored_for_the_new_owner(
        self,
        runtime: Callable[..., Runtime],
        other: PostgresStore,
        window: str,
        monkeypatch: Any,
    ) -> None:
        """``send`` returns the input stored once, pending for the new owner; it is not
        refused with ``OwnedElsewhere``, and nothing runs here."""
        rt = runtime(model=ScriptedModel([reply("hi"), reply("never")]))
        rt.send("s", "first", sender="Chii")
        rt.wait_idle("s", timeout=WAIT)
        opened = open_window(rt, other, window, monkeypatch)
        sent = rt.send("s", "second", sender="Chii")
        assert opened == [window]
        assert sent.status is Status.PENDING_AGENT
        assert [m.id for m in stored(other, "second")] == [sent.id]
        assert other.load_state("s").message(sent.id).status is Status.PENDING_AGENT
        assert rt.live_sessions() == []
        assert other.lease("s").owner == "w2"

    def test_a_cron_prompt_is_stored_for_the_new_owner(
        self,
        runtime: Callable[..., Runtime],
        other: PostgresStore,
        window: str,
        monkeypatch: Any,
    ) -> None:
        """``post`` of a prompt is stored once for the new owner, as ``send`` is."""
        rt = runtime(model=ScriptedModel([reply("hi"), reply("never")]))
        rt.send("s", "first", sender="Chii")
        rt.wait_idle("s", timeout=WAIT)
        opened = open_window(rt, other, window, monkeypatch)
        posted = rt.post("s", Category.CRON_PROMPT, "wake up")
        assert opened == [window]
        assert [m.id for m in stored(other, "wake up")] == [posted.id]
        assert other.load_state("s").message(posted.id).status is Status.PENDING_AGENT
        assert rt.live_sessions() == []


class TestAskInTheWindow:
    def test_an_ask_is_refused_and_nothing_is_stored(
        self, runtime: Callable[..., Runtime], other: PostgresStore, monkeypatch: Any
    ) -> None:
        """``ask`` needs the session's actor here, as when the session is owned elsewhere
        from the start: it raises ``OwnedElsewhere`` saying so, and stores nothing (the
        caller knows the input was not taken; ``send`` stores it for the owner)."""
        rt = runtime(model=ScriptedModel([reply("hi"), reply("never")]))
        rt.send("s", "first", sender="Chii")
        rt.wait_idle("s", timeout=WAIT)
        opened = open_window(rt, other, "live", monkeypatch)
        with pytest.raises(OwnedElsewhere, match=r"^Session 's' is run by another worker"):
            rt.ask("s", "second?", sender="Chii", timeout=WAIT)
        assert opened == ["live"]
        assert stored(other, "second?") == []
        assert rt.live_sessions() == []


class _TakenOver:
    """A router whose every call finds the session owned elsewhere (a fake)."""

    def live(self, session_id: str) -> None:
        return None

    def call(self, session_id: str, fn: Any, *, timeout: float) -> Any:
        raise OwnedElsewhere(f"Session {session_id!r} is run by another worker (a fake).")


class _Keeper:
    """A lease keeper whose claims succeed and which records the input it stores."""

    def __init__(self) -> None:
        self.stored: list[Any] = []

    def ensure(self, session_id: str) -> bool:
        return True

    def store_input(self, session_id: str, draft: Any) -> Any:
        self.stored.append(draft)
        return draft


class TestRouteInput:
    """``route_input`` with fakes (no database): the fallback, and where it stops."""

    def draft(self) -> Any:
        return user_draft("send", "s", "hi", {}, utc_now, Settings().input_limits)

    def test_a_takeover_after_the_claim_stores_the_input_once(self) -> None:
        """The router finds the claimed session owned elsewhere: the input is stored for
        its owner, once."""
        keeper, draft = _Keeper(), self.draft()
        routed = route_input(_TakenOver(), keeper, "s", draft, run_sessions=True, timeout=WAIT)  # type: ignore[arg-type]
        assert routed is draft
        assert keeper.stored == [draft]

    def test_without_a_keeper_the_refusal_is_raised(self) -> None:
        """No lease keeper (no shared store): nobody else could take the input, and the
        router's refusal reaches the caller."""
        with pytest.raises(OwnedElsewhere, match="a fake"):
            route_input(_TakenOver(), None, "s", self.draft(), run_sessions=True, timeout=WAIT)  # type: ignore[arg-type]


RAN: list[str] = []


@tool(approval=True)
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file.
    """
    RAN.append(path)
    return f"deleted {path}"


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("approved", [True, False])
class TestDecisionInTheWindow:
    def test_a_decision_is_stored_for_the_new_owner(
        self,
        runtime: Callable[..., Runtime],
        other: PostgresStore,
        window: str,
        approved: bool,
        monkeypatch: Any,
    ) -> None:
        """``approve`` and ``deny`` store the decision for the new owner (it waits on the
        call's message); nothing is decided or run here."""
        RAN.clear()
        model = ScriptedModel([call("delete_file", {"path": "/tmp/x"}), reply("never")])
        rt = runtime(model=model, tools=[delete_file])
        rt.send("s", "delete /tmp/x", sender="Chii")
        rt.wait_idle("s", timeout=WAIT)  # returns while the call waits for a person
        (waiting,) = rt.pending_approvals("s")
        assert waiting.tool_call is not None
        opened = open_window(rt, other, window, monkeypatch)
        if approved:
            rt.approve("s", waiting.tool_call.id, by="ana")
        else:
            rt.deny("s", waiting.tool_call.id, "not that one", by="ana")
        assert opened == [window]
        (still,) = rt.pending_approvals("s")
        decision = still.metadata["approval_decision"]
        assert (decision["approved"], decision.get("by")) == (approved, "ana")
        assert not [e for e in other.events("s") if isinstance(e, ApprovalDecided)]
        assert RAN == []
        assert rt.live_sessions() == []
